import numpy as np, pyopencl as cl, pyopencl.array as cla, sys, warnings, time
warnings.simplefilter("ignore")
import cltune
from cltune.devices import select
info, dev = select(sys.argv[1] if len(sys.argv) > 1 else "0")
print(info.name, info.platform_version if hasattr(info,'platform_version') else '')
ctx = cl.Context([dev]); q = cl.CommandQueue(ctx)
bad = 0
for dt in ("float32", "int32", "float64", "float16", "uint64"):
  for op in ("sum", "max", "min", "prod"):
    r = cltune.get_reducer(q, op, dt, db=sys.argv[2] if len(sys.argv) > 2 else "sqlite:////tmp/none-axis.db")
    rng = np.random.default_rng(0)
    for shape in [(7, 13), (1, 1000), (1000, 1), (3, 1025), (2, 3, 5), (300, 17, 9), (16, 100003)]:
      x = (rng.uniform(0.9, 1.1, shape) if op == "prod" else rng.uniform(-1, 2, shape)*100).astype(dt)
      xd = cla.to_device(q, x)
      for ax in list(range(x.ndim)) + [None]:
        if ax is None: continue
        got = r(xd, axis=ax).get()
        want = getattr(np, op)(x, axis=ax, **({"dtype": r.spec.result_dtype} if op in ("sum","prod") else {}))
        ok = np.allclose(got.astype(np.float64), want.astype(np.float64), rtol=2e-3 if dt=="float16" else 1e-4, atol=1e-2, equal_nan=True)
        if got.shape != want.shape or not ok or got.dtype != want.dtype:
            bad += 1; print("BAD", dt, op, shape, ax, got.shape, want.shape, got.dtype, want.dtype, got.ravel()[:3], want.ravel()[:3])
print("bad", bad)
r = cltune.get_reducer(q, "sum", "float32", db=sys.argv[2] if len(sys.argv) > 2 else "sqlite:////tmp/none-axis.db")
x = np.arange(20, dtype=np.float32); offs = np.array([0, 3, 3, 10, 20], np.int32)
print(r.segments(cla.to_device(q, x), cla.to_device(q, offs)).get(), np.add.reduceat(x, [0,3,10]))
try:
    r.segments(cla.to_device(q, x), cla.to_device(q, np.array([0, 5, 3, 30], np.int64)))
except ValueError as e: print("err:", e)
xf = np.asfortranarray(np.random.rand(33, 65).astype(np.float32))
print(np.allclose(r(cla.to_device(q, xf), axis=0).get(), xf.sum(0), rtol=1e-5), np.allclose(r(cla.to_device(q, xf), axis=1).get(), xf.sum(1), rtol=1e-5))
