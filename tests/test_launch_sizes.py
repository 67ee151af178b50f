"""Every launch cltune makes names its work-group size (#39): NVIDIA's OpenCL driver spends
4.3-5.8 µs more host time on an ND-range whose group size it must choose itself (`None`) than
on one that names it (scripts/experiments/enqueue_costs.py, docs/logs/benchmarks-*.md). The public
calls of every family run with the ND-range entry point watched; a launch from cltune's code
with no local size fails the test (probes run once per build are exempt)."""

from __future__ import annotations

import traceback

import numpy as np
import pyopencl as cl
import pyopencl._cl as _cl
import pyopencl.array as cla

import cltune

#: launches made once per build or per device, not per call
EXEMPT = ("clt_scan_probe", "clt_probe", "clt_ax_probe")


def test_every_call_names_its_work_group_size(ctx, queue, monkeypatch):
    real = _cl.enqueue_nd_range_kernel
    unnamed: list[str] = []

    def watch(q, kernel, gsize, lsize, *args, **kw):  # noqa: ANN001, ANN002, ANN003
        if lsize is None and kernel.function_name not in EXEMPT:
            ours = [f for f in traceback.extract_stack()[:-1] if "/cltune/" in f.filename]
            if ours:
                unnamed.append(f"{kernel.function_name} from "
                               f"{ours[-1].filename.split('/cltune/')[-1]}:{ours[-1].lineno}")
        return real(q, kernel, gsize, lsize, *args, **kw)

    monkeypatch.setattr(cl, "enqueue_nd_range_kernel", watch)
    monkeypatch.setattr(_cl, "enqueue_nd_range_kernel", watch)
    rng = np.random.default_rng(0)
    x = cla.to_device(queue, rng.random(20011, dtype=np.float32))
    xi = cla.to_device(queue, rng.integers(0, 300, 20011).astype(np.int32))
    x2 = cla.to_device(queue, rng.random((101, 133), dtype=np.float32))
    r = cltune.get_reducer(queue)
    calls = [lambda: r(x), lambda: r(x2, axis=0), lambda: r(x2, axis=1),
             lambda: cltune.mean(x2, axis=1), lambda: cltune.var(x), lambda: cltune.argmax(x),
             lambda: cltune.norm(x), lambda: cltune.cumsum(x), lambda: cltune.cumsum(x2, axis=0),
             lambda: cltune.histogram(x, 256, (0.0, 1.0)), lambda: cltune.bincount(xi),
             lambda: cltune.histogram(x2, 16, (0.0, 1.0), axis=1),
             lambda: cltune.topk(x, 10), lambda: cltune.topk(x2, 5, axis=0),
             lambda: cltune.sort(x), lambda: cltune.sort(x2, axis=1),
             lambda: cltune.copy_if(x, "ary[i] > 0.5"), lambda: cltune.nonzero(x2 > 0.5),
             lambda: cltune.unique_counts(xi),
             lambda: cltune.InclusiveScanKernel(ctx, np.float32, "a+b", "0")(x, x.copy())]
    for c in calls:
        c()
        c()  # the warm path too
    queue.finish()
    assert not unnamed, sorted(set(unnamed))
