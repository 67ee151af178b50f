"""Many small reductions in one launch (cltune.families.many): `r.many([x1, ..., xk])` and
`cltune.norm_many` against float64/exact host references for awkward counts, lengths and
offsets, every config of a small space, the errors, and a short tuning run that the runtime
then serves."""

from __future__ import annotations

import contextlib
import math
import warnings

import numpy as np
import pyopencl as cl
import pyopencl.array as cla
import pytest
from support.unoptimized import unoptimized_builds

import cltune
import cltune.families.many.kernel as many_kernel
from cltune.families.many.config import ManyConfig, ManyConfigError
from cltune.families.many.family import ManyVariant, class_of, variant_of
from cltune.families.many.launch import ManyLauncher
from cltune.families.many.reference import awkward, bounds, compare, host_arrays, reference
from cltune.families.many.target import ManyTarget

pytestmark = pytest.mark.filterwarnings("ignore::cltune.core.serving.CltuneWarning")

SIZES = (0, 1, 3, 4099, 100003)


def _host(dtype: str, n: int, rng: np.random.Generator, op: str) -> np.ndarray:
    if dtype.startswith("float"):
        lo, hi = (0.99, 1.01) if op == "prod" else (-1.0, 2.0)
        return rng.uniform(lo, hi, n).astype(dtype)
    if op == "prod":
        return rng.integers(-3, 4, n).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)


def _want(op: str, h: np.ndarray, rdt: np.dtype) -> object:
    if op == "norm":
        return math.sqrt(math.fsum(h.astype(np.float64) ** 2))
    if h.dtype.kind == "f":
        w = h.astype(np.float64)
        return math.fsum(w) if op == "sum" else float(getattr(np, op)(w))
    return getattr(np, op)(h, dtype=rdt) if op in ("sum", "prod") else getattr(np, op)(h)


def _check(got: np.ndarray, hs: list[np.ndarray], op: str, dtype: str) -> None:
    """Integers and min/max exactly; floats within the result's rounding plus the
    accumulator's over the terms a kernel may chain (float64 accumulates float32 sums,
    products and norms on these devices, which all have fp64)."""
    v = ManyVariant(op, dtype)
    assert got.dtype == v.result_dtype and got.shape == (len(hs),)
    want = [_want(op, h, v.result_dtype) for h in hs]
    if not dtype.startswith("float") or op in ("min", "max"):
        assert list(got) == list(want)
        return
    eps, acc_eps = float(np.finfo(dtype).eps), float(np.finfo(np.float64).eps)
    for i, (g, w, h) in enumerate(zip(got, want, hs, strict=True)):
        scale = float(np.abs(h.astype(np.float64)).sum()) if op == "sum" else abs(w)
        terms = h.size if op == "prod" else 64 + h.size / 16
        tol = (2 * eps + terms * acc_eps) * scale + 1e-300
        assert abs(float(g) - w) <= tol, (i, h.size, g, w)


@pytest.mark.parametrize("k", [1, 3, 17, 40, 100])
def test_sum_float32_of_k_arrays(queue, k):
    rng = np.random.default_rng(k)
    r = cltune.get_reducer(queue, "sum", np.float32)
    hs = [_host("float32", SIZES[i % len(SIZES)] if k < 40 or i % 9 else
                int(rng.integers(0, 6000)), rng, "sum") for i in range(k)]
    if k == 100:  # many small arrays and a few long ones: mixed
        hs = [h[: 1 + i * 37 % 5000] for i, h in enumerate(hs)]
    got = r.many([cla.to_device(queue, h) for h in hs]).get()
    _check(got, hs, "sum", "float32")


@pytest.mark.parametrize("op,dtype", [("sum", "int32"), ("sum", "int64"), ("sum", "uint32"),
                                      ("prod", "int64"), ("min", "int32"), ("max", "uint64"),
                                      ("sum", "float64"), ("prod", "float32"),
                                      ("prod", "float64"), ("min", "float32"),
                                      ("max", "float64"), ("norm", "float32"),
                                      ("norm", "float64")])
def test_ops_and_dtypes_against_the_host(queue, op, dtype):
    rng = np.random.default_rng(7)
    sizes = [max(1, n) if op in ("min", "max") else n for n in (*SIZES, 5, 4099, 17, 0)]
    hs = [_host(dtype, n, rng, op) for n in sizes]
    xs = [cla.to_device(queue, h) for h in hs]
    if op == "norm":
        got = cltune.norm_many(xs).get()
        assert list(got[sizes.index(0):sizes.index(0) + 1]) == [0.0]
        assert not np.signbit(got[0])  # numpy's +0.0 for an empty array, not -0.0
    else:
        got = cltune.get_reducer(queue, op, dtype).many(xs).get()
    _check(got, hs, op, dtype)


def test_empty_sums_are_positive_zero_and_integer_sums_wrap_as_numpy(queue):
    r = cltune.get_reducer(queue, "sum", np.float32)
    got = r.many([np.zeros(0, np.float32), np.array([-0.0], np.float32)]).get()
    assert not np.signbit(got[0]) and got[1] == 0
    big = np.full(70000, np.iinfo(np.int64).max // 3, np.int64)
    got = cltune.get_reducer(queue, "sum", np.int64).many([big, big[:5]]).get()
    assert got[0] == big.sum() and got[1] == big[:5].sum()  # wraps identically


def test_views_with_offsets_nd_arrays_and_numpy_inputs(queue):
    rng = np.random.default_rng(3)
    base = rng.uniform(-1, 2, 30011).astype(np.float32)
    d = cla.to_device(queue, base)
    views = [d[5:4104], d[4104:4107], d[7:8], d[20000:30011]]
    mat = rng.uniform(-1, 2, (37, 53)).astype(np.float32)
    xs = [*views, cla.to_device(queue, mat), mat.T.copy(order="F"), base[:1001]]
    hs = [base[5:4104], base[4104:4107], base[7:8], base[20000:30011], mat.ravel(),
          mat.T.ravel(), base[:1001]]
    got = cltune.get_reducer(queue, "sum", np.float32).many(xs).get()
    _check(got, hs, "sum", "float32")
    norms = cltune.norm_many(xs, queue).get()
    _check(norms, hs, "norm", "float32")
    assert np.allclose(norms, [np.linalg.norm(h) for h in hs], rtol=1e-6)


def test_out_and_repeated_layouts(queue):
    r = cltune.get_reducer(queue, "max", np.float32)
    hs = [np.arange(n, dtype=np.float32) - 7 for n in (1, 9, 300, 5000)]
    xs = [cla.to_device(queue, h) for h in hs]
    out = cla.empty(queue, 4, np.float32)
    for _ in range(3):
        assert r.many(xs, out=out) is out
        assert list(out.get()) == [h.max() for h in hs]
    hs[0][0] = np.nan
    assert np.isnan(r.many([cla.to_device(queue, hs[0]), xs[1]]).get()[0])


def test_warm_calls_follow_changed_arrays_lengths_and_offsets(queue, monkeypatch):
    """The plan of a call (launcher and layout, kept per lengths and offsets) and the kernel
    arguments kept between launches never serve a stale answer: other arrays of the same
    lengths, a changed length or offset, fewer arrays (slots back to the dummy), arrays freed
    and replaced, an `out` at another offset, and more layouts than the engine keeps."""
    from cltune.families.many import serve

    monkeypatch.setattr(serve, "MAX_PLANS", 3)
    rng = np.random.default_rng(11)
    r = cltune.get_reducer(queue, "sum", np.float32)

    def fresh(lengths):
        hs = [rng.uniform(-1, 2, n).astype(np.float32) for n in lengths]
        return hs, [cla.to_device(queue, h) for h in hs]

    def both(hs, xs, out=None):
        got = r.many(xs, out=out)
        assert out is None or got is out
        _check(got.get(), hs, "sum", "float32")
        _check(cltune.norm_many(xs).get(), hs, "norm", "float32")

    ha, xa = fresh([4096] * 16)
    hb, xb = fresh([4096] * 16)
    for _ in range(2):  # the same lengths and offsets, other buffers, back and forth
        both(ha, xa)
        both(hb, xb)
    flat = np.concatenate([*hb, hb[0][:5]])
    base = cla.to_device(queue, flat)
    for o in (5, 0):  # other offsets, the same lengths
        views = [base[i * 4096 + o:(i + 1) * 4096 + o] for i in range(16)]
        both([flat[i * 4096 + o:(i + 1) * 4096 + o] for i in range(16)], views)
    views = [base[i * 4096 + 3:(i + 1) * 4096] for i in range(16)]  # other lengths
    both([h[3:] for h in hb], views)
    both(ha[:5], xa[:5])  # fewer arrays than slots: the rest back to the dummy
    both(ha[:1] + hb[1:], xa[:1] + xb[1:])
    del xb, views, base  # freed: the buffers of the next arrays may take their handles
    hc, xc = fresh([4096] * 16)
    both(hc, xc)
    hd, xd = fresh([5000, 9000, 0, 70000] * 10)  # several launches, arrays of several groups
    big = cla.empty(queue, (len(xd) + 7,), np.float32)
    for o in (0, 7, 0):
        both(hd, xd, big[o:o + len(xd)])
    both(ha, xa)


def test_waits_for_wait_for_and_the_arrays_events(ctx, device, queue):
    """A launch waits for `wait_for` and for the arrays' pending events (an out-of-order
    queue's too), and its result carries the event to wait for."""
    done = cl.command_execution_status.COMPLETE
    ooo = cl.command_queue_properties.OUT_OF_ORDER_EXEC_MODE_ENABLE
    queues = [queue]
    if device[1].queue_properties & ooo:
        queues.append(cl.CommandQueue(ctx, device[1], properties=ooo))
    hs = [np.arange(n, dtype=np.float32) for n in (100, 4096, 7)]
    for q in queues:
        r = cltune.get_reducer(q, "sum", np.float32)
        xs = [cla.to_device(q, h) for h in hs]
        for _ in range(2):
            gate = cl.UserEvent(ctx)
            res = r.many(xs, wait_for=[gate])
            assert res.events[-1].command_execution_status != done
            gate.set_status(done)
            assert list(res.get()) == [h.sum() for h in hs]
        if q is not queue:  # an array whose pending event is of this queue: waited for
            gate = cl.UserEvent(ctx)
            xs[1].add_event(cl.enqueue_marker(q, wait_for=[gate]))
            res = r.many(xs)
            assert res.events[-1].command_execution_status != done
            gate.set_status(done)
            assert list(res.get()) == [h.sum() for h in hs]


def test_errors_are_clear(queue, ctx, device):
    r = cltune.get_reducer(queue, "sum", np.float32)
    x = cla.to_device(queue, np.ones(10, np.float32))
    with pytest.raises(ValueError, match="at least one array"):
        r.many([])
    with pytest.raises(TypeError, match="list"):
        r.many(x)
    with pytest.raises(TypeError, match=r"xs\[1\] has dtype float64"):
        r.many([x, np.ones(3)])
    other_ctx = cl.Context([device[1]])  # kept: a queue alone does not keep it alive here
    other = cl.CommandQueue(other_ctx)
    with pytest.raises(ValueError, match=r"xs\[1\] lives in another OpenCL context"):
        r.many([x, cla.to_device(other, np.ones(3, np.float32))])
    with pytest.raises(ValueError, match="zero-size array to reduction operation minimum"):
        cltune.get_reducer(queue, "min", np.float32).many([x, np.zeros(0, np.float32)])
    with pytest.raises(TypeError, match="dot is not offered"):
        cltune.get_reducer(queue, "dot", np.float32).many([x])
    with pytest.raises(TypeError, match="out must be"):
        r.many([x, x], out=cla.empty(queue, 3, np.float32))
    with pytest.raises(ValueError, match="norm is for float32 and float64"):
        cltune.norm_many([np.ones(3, np.int32)], queue)
    with pytest.raises(TypeError, match="queue="):
        cltune.norm_many([np.ones(3, np.float32)])
    with pytest.raises(ManyConfigError, match="slots"):
        ManyConfig(slots=12)
    with pytest.raises(ValueError, match="unknown op"):
        variant_of("mean/float32")


def test_class_of_a_call():
    assert class_of([4096] * 64) == (6, 12)
    assert class_of([0, 1, 3]) == (2, 0)
    assert class_of([100003] * 17) == (4, 17)


SMALL = {"wg": (4, 32), "vec": (1, 4), "items": (1, 2), "steps": (1, 4), "slots": (8, 32)}
LARGER = {"wg": (4, 16, 32), "vec": (1, 4), "items": (1, 2), "steps": (1, 4),
          "slots": (8, 16, 32)}


@pytest.mark.parametrize("variants,restrict", [
    (("sum/float32",), SMALL),
    pytest.param(("sum/float32", "max/int32", "norm/float64"), LARGER, marks=pytest.mark.slow),
])
def test_every_config_of_a_small_space(ctx, queue, device, variants, restrict, monkeypatch):
    """Every point of a restricted tuning space (each a build: ~0.35 s on PoCL), on awkward
    lengths and offsets with more arrays than a launch takes (reference.awkward). The larger
    space leaves the sum's configs that the small one checks (the same problem and check) to
    the small case, so a full run builds each once; together they check all of it. The
    larger space is built unoptimized (support/unoptimized.py: the same arithmetic in about
    half the build time); the small one, every field's values, optimized."""
    info, dev = device
    checked_small = restrict is not SMALL
    with contextlib.ExitStack() as stack:
        if checked_small:
            ctx, queue = stack.enter_context(unoptimized_builds(dev, monkeypatch, many_kernel))
        _every_config(ctx, queue, info, dev, variants, restrict, checked_small)


def _every_config(ctx, queue, info, dev, variants, restrict, checked_small):
    for variant in variants:
        t = ManyTarget(ctx, dev, info, variant, restrict=restrict)
        v = t.many
        p = awkward(8, 700)
        if v.op == "max":
            p = type(p)(tuple(max(1, n) for n in p.lengths), p.offsets)
        arrays = host_arrays(v, p, seed=5)
        bufs = [cl.Buffer(ctx, cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR, hostbuf=a)
                if a.size else cl.Buffer(ctx, cl.mem_flags.READ_ONLY, 64) for a in arrays]
        out = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 8 * len(p.lengths))
        want, scale = reference(v, [a[o:] for a, o in zip(arrays, p.offsets, strict=True)])
        tried = 0
        for wg in t.space.values["wg"]:
            for vec in t.space.values["vec"]:
                for items in t.space.values["items"]:
                    for steps in t.space.values["steps"]:
                        for slots in t.space.values["slots"]:
                            cfg = ManyConfig(wg=wg, vec=vec, items=items, steps=steps,
                                             slots=slots)
                            assert not t.space.check(cfg)
                            if checked_small and variant == "sum/float32" and all(
                                    getattr(cfg, k) in SMALL[k] for k in SMALL):
                                tried += 1  # checked by the small case
                                continue
                            la = ManyLauncher(ctx, dev, info, v, cfg)
                            evs = la.enqueue(queue, [(b, o, n) for b, o, n in zip(
                                bufs, p.offsets, p.lengths, strict=True)], out)
                            got = np.empty(len(p.lengths), v.result_dtype)
                            cl.enqueue_copy(queue, got, out, wait_for=evs)
                            tol = bounds(v, cfg, bool(info.fp64), p.lengths, scale)
                            why, _ = compare(v, got, want, tol, scale)
                            assert not why, (variant, cfg.short(), why)
                            tried += 1
        assert tried == t.space.size() >= 16  # a GPU's space keeps only wg >= 32


def test_builtin_serves_untuned_and_explain_says_so(queue, db_url):
    r = cltune.get_reducer(queue, "sum", np.float32, db=db_url)
    e = r.explain_many(64, 4096)
    assert e.level == "builtin" and e.size_class is None and e.shape == (64, 4096)
    assert "untuned" in str(e)


def test_tune_stores_a_best_and_the_runtime_serves_it(ctx, queue, device, db_url,
                                                      storage_url):
    from cltune.tuning.tuner import TuneOptions, Tuner  # the tuner loads optuna
    from cltune.tuning_db import Store

    info, dev = device
    store = Store.open(db_url)
    try:
        opts = TuneOptions(family="many", variant="norm/float32", buckets=((4, 10),),
                           trials=4, timeout_s=120, seed=1,
                           restrict={"wg": (8, 16) if info.type == "cpu" else (32, 64),
                                     "vec": (1, 4), "items": (1, 2),
                                     "steps": (1, 4), "slots": (8, 16)})
        res = Tuner(ctx, dev, info, store, storage_url, opts).run()
    finally:
        store.close()
    assert [x.size_class for x in res] == ["2^4x2^10"]
    assert isinstance(res[0].config, ManyConfig) and res[0].gbps
    from cltune.families.many.api import explain_many

    e = explain_many(queue, "norm", np.float32, 20, 900, db=db_url)  # nearest to 2^4 x 2^10
    assert e.level == "exact" and e.size_class == "2^4x2^10" and e.config == res[0].config
    assert explain_many(queue, "norm", np.float32, 1 << 12, 1 << 20,
                        db=db_url).level == "builtin"  # too far from any tuned class
    rng = np.random.default_rng(2)
    hs = [rng.uniform(-1, 2, 900 + i).astype(np.float32) for i in range(20)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an exact answer is served without a warning
        got = cltune.norm_many([cla.to_device(queue, h) for h in hs], db=db_url).get()
    _check(got, hs, "norm", "float32")


def test_cli_tunes_many_and_the_runtime_serves_it(queue, info, db_url, storage_url):
    from typer.testing import CliRunner

    from cltune.cli.app import app  # the CLI (loads the tuner)

    r = CliRunner().invoke(app, ["tune", "--device", str(info.index), "--many", "16x1024",
                                 "--op", "norm", "--trials", "3", "--timeout", "60", "--db",
                                 db_url, "--storage", storage_url])
    assert r.exit_code == 0, r.output
    assert "norm/float32" in r.output and "2^4x2^10" in r.output
    from cltune.families.many.api import explain_many

    assert explain_many(queue, "norm", np.float32, 16, 1024, db=db_url).level == "exact"
    r = CliRunner().invoke(app, ["tune", "--device", str(info.index), "--many", "16x1024",
                                 "--op", "mean"])
    assert r.exit_code != 0 and "--many tunes sum, prod, min, max or norm" in r.output
