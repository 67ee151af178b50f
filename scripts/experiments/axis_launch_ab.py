# ruff: noqa  (one-off experiment, kept terse)
"""Host CPU per axis launch, cltune.families.axis.launch before ArgSetter (pyopencl invokers: every
argument every call) against after, interleaved in one process. Usage:
    git show 1bc4ae0:cltune/families/axis/launch.py > /tmp/old_axis_launch.py
    python scripts/experiments/axis_launch_ab.py DEVICE /tmp/old_axis_launch.py"""
import sys, time, statistics, importlib.util, numpy as np, pyopencl as cl, pyopencl.array as cla
import cltune
from cltune.families.axis import launch as new
spec = importlib.util.spec_from_file_location("cltune._old_axis_launch", sys.argv[2])
old = importlib.util.module_from_spec(spec); sys.modules[spec.name] = old; spec.loader.exec_module(old)
from cltune.device.select import select
from cltune.core.ops import OpSpec

from cltune.families.axis.config import AxisConfig
info, dev = select(sys.argv[1]); ctx = cl.Context([dev]); q = cl.CommandQueue(ctx)
sp = OpSpec("sum", "float32")
x = cla.to_device(q, np.random.rand(64 * 64).astype(np.float32)); out = cla.empty(q, 64, np.float32)
for name, cfg, call in [
        ("rows 64x64, 1 kernel", AxisConfig(wg=8, lanes=1, vec=8, items=2, groups_per_cu=8), lambda la: la.rows(q, x.base_data, 0, 64, 64, out.base_data)),
        ("rows 2x2048, split + fin", AxisConfig(wg=8, lanes=8, vec=1, items=1, groups_per_cu=8), lambda la: la.rows(q, x.base_data, 0, 2, 2048, out.base_data)),
        ("cols 64x64", AxisConfig(wg=8, lanes=0, cols=4, vec=1, items=2, groups_per_cu=4), lambda la: la.cols(q, x.base_data, 0, 1, 64, 64, out.base_data))]:
    las = {"old": old.AxisLauncher(ctx, dev, info, sp, cfg), "new": new.AxisLauncher(ctx, dev, info, sp, cfg)}
    for la in las.values(): call(la)
    ts = {k: [] for k in las}
    for _ in range(15):
        for k, la in las.items():
            q.finish(); t0 = time.thread_time()
            for _ in range(500): call(la)
            ts[k].append((time.thread_time() - t0) / 500 * 1e6); q.finish()
    md = {k: statistics.median(v) for k, v in ts.items()}
    print(f"{info.name[:20]} {name:26s} host CPU per launch: old {md['old']:.2f} us, new {md['new']:.2f} us ({md['old']/md['new']:.2f}x), {len(call(las['new']))} kernel(s)")
