"""The scan family's programs of the application's code are vetted (house rule 17).
Compaction: the predicate is built and run first in the device's worker, on the call's own
first elements, and checked there against a one-work-item walk of the same predicate
(`compact.check_select`); a program that crashed, hung or answered wrong there is never built
in the application's process. GenericScanKernel: the same on copies of the first call's
arguments against `clt_gs_serial` (`generic.check_scan`); answers that differ only warn."""

from __future__ import annotations

import json

import numpy as np
import pyopencl.array as cla
import pytest
from pyopencl.tools import get_or_register_dtype, match_dtype_to_c_struct
from support.faults import injected

import cltune
import cltune.families.scan.compact as compact
import cltune.families.scan.generic as generic
from cltune.core.serving import CltuneWarning
from cltune.device.select import info_for
from cltune.isolation.vetting import NoConfigRuns
from cltune.opencl.build import BuildError

SHAPES = [None, (8, 4, 3, 0), (1, 1, 2, 0), (64, 3, 2, 2), (24, 2, 3, 0)]


def _verdicts(cache) -> dict:
    return json.loads((cache / "vetted.json").read_text())["verdicts"]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_the_check_passes_every_call_form_on_this_driver(ctx, queue, shape):
    """check_select itself (here, in this process): values and both sides, extra array and
    scalar arguments, a preamble, indices of both widths with a fixed size's fill and the
    unravel kernel, for the device's shape and tiled, one-a-chunk and ballot (emulated) ones."""
    device = queue.device
    info = info_for(device)
    shape = shape or compact._device_shape(device, 8)
    h = ((np.arange(3001) * 7919) % 23 - 11).astype(np.float32)
    t = np.linspace(-5, 5, 3001).astype(np.float32)
    cases = [
        ("float32", "ary[i] > 0", [], "", 0, h, []),
        ("float32", "ary[i] > lim[i] * scale", [("lim", "a"), ("scale", "s")], "", 0, h,
         [t, np.float32(0.5)]),
        ("int64", "IS_ODD(ary[i])", [], "#define IS_ODD(v) (((v) & 1) != 0)", 0,
         h.astype(np.int64), []),
        ("float32", "ary[i] != 0", [], "", 1, h, []),
        ("uint8", "ary[i] != 0", [], "", 2, (h > 3).astype(np.uint8), []),
    ]
    for elem, pred, kinds, pre, index, data, values in cases:
        why = compact.check_select(ctx, queue, device, info, elem, pred, kinds, pre, index,
                                   shape, data, values)
        assert why == "", (pred, index, why)


def test_the_check_sees_a_wrong_answer(ctx, queue, monkeypatch):
    """A scatter that drops the last kept element (the count launch's chunks cut one short)
    is caught: the check compares with the serial walk, not with itself."""
    device = queue.device
    info = info_for(device)
    shape = compact._device_shape(device, 4)
    real = compact.select

    def short(ary, *a, **k):
        return real(ary[:-1], *a, **k)

    monkeypatch.setattr(compact, "select", short)
    h = np.arange(1, 2001, dtype=np.float32)
    why = compact.check_select(ctx, queue, device, info, "float32", "ary[i] > 0", [], "", 0,
                               shape, h, [])
    assert "counted 1999 kept of 2000" in why


@pytest.mark.multiprocess
def test_a_predicate_that_crashes_the_driver_is_never_built_here(queue, monkeypatch,
                                                                  tmp_path):
    """A crash (SIGABRT) of the vetting run: copy_if and nonzero raise one clear error naming
    the crash and the way to run it anyway; the verdict is kept; the process lives on and
    other predicates' programs are vetted on their own."""
    x = cla.to_device(queue, np.arange(-500, 501, dtype=np.float32))
    with injected(monkeypatch, tmp_path, "abort:check=compact") as cache:
        with pytest.raises(NoConfigRuns, match="(?s)crash.*CLTUNE_TRUST_DRIVER=1"):
            cltune.copy_if(x, "ary[i] > 0")
        with pytest.raises(NoConfigRuns, match="SIGABRT"):
            cltune.nonzero(x)
        kept = [k for k in _verdicts(cache) if ":check:compact:" in k]
        assert len(kept) == 2, kept  # the predicate's program and nonzero's
        monkeypatch.delenv("CLTUNE_TEST_FAULT")
        # the kept verdict answers the next call without a worker
        with pytest.raises(NoConfigRuns, match="SIGABRT"):
            cltune.copy_if(x, "ary[i] > 0")
        out, count, _ = cltune.copy_if(x, "ary[i] > 1")  # another program: vetted, runs
        assert int(count.get()) == 499 and out.get()[0] == 2.0


@pytest.mark.multiprocess
def test_a_wrong_answer_in_vetting_refuses_and_trust_overrides(queue, monkeypatch, tmp_path):
    x = cla.to_device(queue, np.arange(-50, 51, dtype=np.int32))
    with injected(monkeypatch, tmp_path, "wrong:check=compact"):
        with pytest.raises(NoConfigRuns, match="wrong answer"):
            cltune.partition(x, "ary[i] % 3 == 0")
        monkeypatch.setenv("CLTUNE_TRUST_DRIVER", "1")
        t, f, count, _ = cltune.partition(x, "ary[i] % 3 == 0")
        c = int(count.get())
        h = x.get()
        assert c == (h % 3 == 0).sum() and (t.get()[:c] == h[h % 3 == 0]).all()
        assert (f.get()[:101 - c] == h[h % 3 != 0]).all()


def test_a_predicate_that_does_not_compile_raises_the_compilers_error(queue):
    """A compiler error is not a crash: the verdict (not kept) lets this process build it,
    which raises the compiler's words as pyopencl does."""
    x = cla.to_device(queue, np.arange(10, dtype=np.float32))
    with pytest.raises(BuildError, match="no_such_name"):
        cltune.copy_if(x, "ary[i] > no_such_name")
    knl = cltune.InclusiveScanKernel(queue.context, np.float32, "a + no_such_scan_name", "0")
    with pytest.raises(BuildError, match="no_such_scan_name"):
        knl(x)


def test_the_vetting_input_is_the_calls_own_data(queue, monkeypatch):
    """Arrays up to VET_EXTRA_BYTES are copied whole; a larger extra array in part (never
    fewer elements than the array vetted on), a larger array its first VET_ELEMENTS."""
    whole = cla.to_device(queue, np.arange(30000, dtype=np.float32))
    data, _ = compact._sample(whole, [])
    assert data.size == 30000
    with pytest.raises(ValueError, match="contiguous"):
        cltune.copy_if(whole, "ary[i] > t[i]", [("t", whole.reshape(100, 300)[:, ::2])])
    monkeypatch.setattr(compact, "VET_EXTRA_BYTES", 4096)
    x = cla.to_device(queue, np.arange(30000, dtype=np.float32))
    big = cla.to_device(queue, np.arange(40000, dtype=np.int32))
    data, values = compact._sample(x, [("big", big), ("s", np.float32(2))])
    assert data.size == compact.VET_ELEMENTS and data[-1] == compact.VET_ELEMENTS - 1
    assert values[0].size == compact.VET_ELEMENTS and values[1] == np.float32(2)
    small = cla.to_device(queue, np.arange(7, dtype=np.float64))
    data, values = compact._sample(x[:5], [("small", small)])
    assert data.tolist() == [0, 1, 2, 3, 4] and values[0].tolist() == list(range(7))


def _struct_knl(ctx):
    """A scan of a registered struct type (its C name known only to this process)."""
    dt = np.dtype([("lo", np.int32), ("hi", np.int32)])
    dt, decl = match_dtype_to_c_struct(ctx.devices[0], "clt_test_pair", dt)
    dt = get_or_register_dtype("clt_test_pair", dt)
    pre = decl + """
    clt_test_pair pair_add(clt_test_pair a, clt_test_pair b) {
        clt_test_pair r; r.lo = a.lo + b.lo; r.hi = max(a.hi, b.hi); return r; }
    clt_test_pair pair_of(int v) { clt_test_pair r; r.lo = v; r.hi = v; return r; }"""
    return dt, generic.GenericScanKernel(
        ctx, dt, "__global int *x, __global int *lo, __global int *hi", "pair_of(x[i])",
        "pair_add(a, b)", "pair_of(0)", "lo[i] = item.lo; hi[i] = prev_item.hi;", preamble=pre)


def test_the_scan_check_passes_every_form_on_this_driver(ctx, queue):
    """check_scan itself (here, in this process): segments with across_seg_boundary, input
    fetches at -1 on an offset view, an output statement overwriting inputs, a struct type,
    a float sum (rounding of another order allowed), and an empty call."""
    dev, info = queue.device, info_for(queue.device)
    rng = np.random.default_rng(5)
    h = rng.integers(-9, 9, 3001).astype(np.int32)
    fl = (rng.random(3001) < 0.02).astype(np.int32)
    x, f = cla.to_device(queue, h), cla.to_device(queue, fl)
    y = cla.empty(queue, (3001,), np.int32)
    seg = {"dtype": np.int32, "arguments": "__global int *x, __global int *fl, __global int *y",
           "input_expr": "x[i]", "scan_expr": "across_seg_boundary ? b : a+b", "neutral": "0",
           "output_statement": "y[i] = item", "is_segment_start_expr": "fl[i]",
           "index_dtype": np.int64}
    fetch = {"dtype": np.int32, "arguments": "__global int *x, __global int *d",
             "input_expr": "i == 0 ? 0 : (xi - xim1)", "scan_expr": "a+b", "neutral": "0",
             "output_statement": "d[i] = item + (int)last_item",
             "input_fetch_exprs": [("xi", "x", 0), ("xim1", "x", -1)]}
    inplace = {"dtype": np.int32, "arguments": "__global int *ary", "input_expr": "ary[i]",
               "scan_expr": "a+b", "neutral": "0", "output_statement": "ary[i + 1] = item;"}
    fsum = {"dtype": np.float32, "arguments": "__global float *v, __global float *o",
            "input_expr": "v[i]", "scan_expr": "a+b", "neutral": "0",
            "output_statement": "o[i] = prev_item"}
    v = cla.to_device(queue, rng.random(3001).astype(np.float32))
    cases = [(seg, [x, f, y], 3001), (fetch, [x[7:], y[7:]], 2994), (inplace, [x], 3000),
             (fsum, [v, cla.empty_like(v)], 3001), (fsum, [v, cla.empty_like(v)], 0)]
    for ctor, args, n in cases:
        assert generic.check_scan(ctx, queue, dev, info, ctor, [], args, n) == "", ctor
    dt, knl = _struct_knl(ctx)
    why = generic.check_scan(ctx, queue, dev, info, knl._ctor, [("clt_test_pair", dt)],
                             [x, y, cla.empty_like(y)], 3001)
    assert why == ""


def test_the_scan_check_sees_a_wrong_answer(ctx, queue, monkeypatch):
    """A scan whose launches write nothing (its call made a no-op) differs from the walk, and
    the check names the array."""
    dev, info = queue.device, info_for(queue.device)
    x = cla.to_device(queue, np.arange(5000, dtype=np.int32))
    inc = {"dtype": np.int32, "arguments": "__global int *x, __global int *o",
           "input_expr": "x[i]", "scan_expr": "a+b", "neutral": "0",
           "output_statement": "o[i] = item"}
    monkeypatch.setattr(generic.GenericScanKernel, "_enqueue", lambda self, *a, **k: [])
    why = generic.check_scan(ctx, queue, dev, info, inc, [], [x, cla.zeros_like(x)], 5000)
    assert why == "arrays o differ from the serial walk's"


@pytest.mark.multiprocess
def test_a_scan_that_crashes_the_driver_is_never_built_here(ctx, queue, monkeypatch,
                                                             tmp_path):
    """A crash (SIGSEGV) of the vetting run: the first call raises one clear error;
    a wrong answer there is a warning and the scan runs; CLTUNE_TRUST_DRIVER=1 runs it."""
    x = cla.to_device(queue, np.arange(1, 1002, dtype=np.int32))
    y = cla.empty_like(x)
    with injected(monkeypatch, tmp_path, "segv:check=generic_scan") as cache:
        knl = cltune.InclusiveScanKernel(ctx, np.int32, "a+b", "0")
        with pytest.raises(NoConfigRuns, match="(?s)GenericScanKernel.*CLTUNE_TRUST_DRIVER"):
            knl(x, y)
        assert any(":check:generic_scan:" in k for k in _verdicts(cache))
        monkeypatch.setenv("CLTUNE_TRUST_DRIVER", "1")
        assert np.array_equal(knl(x, y).get(), np.cumsum(np.arange(1, 1002)))
    with injected(monkeypatch, tmp_path / "w", "wrong:check=generic_scan"):
        monkeypatch.delenv("CLTUNE_TRUST_DRIVER")
        knl = cltune.ExclusiveScanKernel(ctx, np.int32, "a+b", "0")
        with pytest.warns(CltuneWarning, match="differed"):
            knl(x, y)
        assert np.array_equal(y.get()[1:], np.cumsum(np.arange(1, 1001)))
