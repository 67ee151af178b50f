"""cltune.ReductionKernel against pyopencl's own ReductionKernel: its documented examples
(sum, dot, max, norms, the struct min/max collector and a struct argmax written the same way),
sizes that are multiples of nothing, NaN/inf, empty input, range/slice/out/return_event,
errors, the fingerprint, tuning and its provenance (explain), tuning at first use and
`cltune tune --kernel`'s library function. Real OpenCL, no mocks."""

from __future__ import annotations

import sqlite3
import sys
import textwrap
import warnings

import numpy as np
import pyopencl as cl
import pyopencl.array as cla
import pytest
from pyopencl.reduction import ReductionKernel as PyRK
from pyopencl.tools import get_or_register_dtype, match_dtype_to_c_struct

import cltune
from cltune import ReductionKernel
from cltune.cli.tune_modes import load_kernel, tune_kernel_spec
from cltune.tuning_db import Store
from cltune.tuning_db.rows import Measurement

SIZES = (0, 1, 3, 1000, 1000003)

DOT = dict(neutral="0", reduce_expr="a+b", map_expr="x[i]*y[i]",
           arguments="__global const float *x, __global const float *y")


def both(ctx, *a, **kw):
    return ReductionKernel(ctx, *a, db="sqlite:////nonexistent/cltune.db", **kw), PyRK(ctx, *a,
                                                                                       **kw)


def same(got, want, rtol=1e-5):
    got, want = got.get(), want.get()
    if got.dtype.names:
        for k in got.dtype.names:
            np.testing.assert_allclose(got[k], want[k], rtol=rtol)
    else:
        np.testing.assert_allclose(got, want, rtol=rtol)


@pytest.fixture(scope="module")
def data(queue):
    rng = np.random.default_rng(7)
    big = max(SIZES)
    return {"x": cla.to_device(queue, rng.random(big).astype(np.float32)),
            "y": cla.to_device(queue, (rng.random(big) - 0.5).astype(np.float32)),
            "i": cla.to_device(queue, rng.integers(-1000, 1000, big).astype(np.int32))}


def test_sum_dot_and_norms_match_pyopencl_at_every_size(ctx, queue, data):
    kernels = [
        (both(ctx, np.float32, neutral="0", reduce_expr="a+b", map_expr="x[i]",
              arguments="__global float *x"), ("x",)),
        (both(ctx, np.float32, **DOT), ("x", "y")),
        (both(ctx, np.float32, neutral="0", reduce_expr="a+b", map_expr="x[i]*x[i]",
              arguments="__global const float *x"), ("y",)),
        (both(ctx, np.float32, neutral="0", reduce_expr="a+b", map_expr="fabs(x[i])",
              arguments="__global const float *x"), ("y",)),
        (both(ctx, np.int32, neutral="-2147483647-1", reduce_expr="max(a, b)",
              map_expr="x[i]", arguments="__global const int *x"), ("i",)),
    ]
    for (ours, theirs), names in kernels:
        for n in SIZES:
            args = [data[k][:n] for k in names]
            same(ours(*args), theirs(*args), rtol=1e-4)


def test_scalar_argument_count_and_abs_diff(ctx, queue, data):
    count, count_ref = both(ctx, np.int64, neutral="0", reduce_expr="a+b",
                            map_expr="(x[i] > t) ? 1 : 0",
                            arguments="__global const float *x, float t")
    assert count(data["x"], np.float32(0.25)).get() == count_ref(data["x"], np.float32(0.25)).get()
    assert int(count(data["x"], 0.25).get()) == int((data["x"].get() > 0.25).sum())
    diff, diff_ref = both(ctx, np.float32, neutral="0", reduce_expr="a+b",
                          map_expr="fabs(x[i] - y[i])",
                          arguments="__global const float *x, __global const float *y")
    same(diff(data["x"], data["y"]), diff_ref(data["x"], data["y"]), rtol=1e-4)


MMC_PREAMBLE = r"""//CL//
minmax_collector mmc_neutral()
{
    minmax_collector result;
    result.cur_min = 1<<30;
    result.cur_max = -(1<<30);
    return result;
}
minmax_collector mmc_from_scalar(float x)
{
    minmax_collector result;
    result.cur_min = x;
    result.cur_max = x;
    return result;
}
minmax_collector agg_mmc(minmax_collector a, minmax_collector b)
{
    minmax_collector result = a;
    if (b.cur_min < result.cur_min)
        result.cur_min = b.cur_min;
    if (b.cur_max > result.cur_max)
        result.cur_max = b.cur_max;
    return result;
}
"""

ARGMAX_PREAMBLE = r"""//CL//
argmax_t am_neutral() { argmax_t r; r.value = -INFINITY; r.index = LONG_MAX; return r; }
argmax_t am_make(float v, long i) { argmax_t r; r.value = v; r.index = i; return r; }
argmax_t am_agg(argmax_t a, argmax_t b)
{
    if (a.value > b.value) return a;
    if (b.value > a.value) return b;
    return a.index < b.index ? a : b;
}
"""


def test_struct_accumulators_as_in_pyopencls_documentation(ctx, queue, data):
    dev = ctx.devices[0]
    mmc = np.dtype([("cur_min", np.int32), ("cur_max", np.int32), ("pad", np.int32)])
    mmc, mmc_decl = match_dtype_to_c_struct(dev, "minmax_collector", mmc)
    mmc = get_or_register_dtype("minmax_collector", mmc)
    ours, theirs = both(ctx, mmc, neutral="mmc_neutral()", reduce_expr="agg_mmc(a, b)",
                        map_expr="mmc_from_scalar(x[i])", arguments="__global int *x",
                        preamble=mmc_decl + MMC_PREAMBLE)
    for n in (1, 1000003):
        with warnings.catch_warnings():
            # its `pad` is never set: no kernel's (nor the reference's) can be compared, and
            # the builtin config must not be "passed over" for it
            warnings.simplefilter("error")
            got, want = ours(data["i"][:n]).get(), theirs(data["i"][:n]).get()
        assert (got["cur_min"], got["cur_max"]) == (want["cur_min"], want["cur_max"])

    am = np.dtype([("value", np.float32), ("index", np.int64)])
    am, am_decl = match_dtype_to_c_struct(dev, "argmax_t", am)
    am = get_or_register_dtype("argmax_t", am)
    ours, theirs = both(ctx, am, neutral="am_neutral()", reduce_expr="am_agg(a, b)",
                        map_expr="am_make(x[i], i)", arguments="__global const float *x",
                        preamble=am_decl + ARGMAX_PREAMBLE)
    host = data["x"].get()
    got, want = ours(data["x"]).get(), theirs(data["x"]).get()
    assert got["index"] == want["index"] == np.argmax(host)
    assert got["value"] == host.max()


def test_nan_inf_and_empty_input(ctx, queue):
    ours, theirs = both(ctx, np.float32, neutral="0", reduce_expr="a+b", map_expr="x[i]",
                        arguments="__global const float *x")
    x = cla.to_device(queue, np.array([1, np.inf, 2, 3], np.float32))
    assert ours(x).get() == np.inf
    x = cla.to_device(queue, np.array([1, np.nan, 2], np.float32))
    assert np.isnan(ours(x).get())
    empty = cla.empty(queue, 0, np.float32)
    assert ours(empty).get() == theirs(empty).get() == 0
    mx, _ = both(ctx, np.float32, neutral="-INFINITY", reduce_expr="fmax(a, b)",
                 map_expr="x[i]", arguments="__global const float *x")
    assert mx(cla.empty(queue, 0, np.float32)).get() == -np.inf


def test_call_convention_range_slice_out_event_offsets(ctx, queue, data):
    ours, theirs = both(ctx, np.float32, **DOT)
    x, y = data["x"], data["y"]
    same(ours(x, y, slice=slice(3, 1001)), theirs(x, y, slice=slice(3, 1001)))
    same(ours(x, y, range=slice(5, 9999, 3)), theirs(x, y, range=slice(5, 9999, 3)))
    same(ours(x[7:5000], y[7:5000]), theirs(x[7:5000], y[7:5000]))  # buffer offsets
    out = cla.zeros(queue, 4, np.float32)
    res, ev = ours(x[:100], y[:100], out=out[2], return_event=True, wait_for=[])
    assert isinstance(ev, cl.Event) and res.base_data == out.base_data
    ev.wait()
    want = float(np.dot(x.get()[:100].astype(np.float64), y.get()[:100]))
    np.testing.assert_allclose(out.get()[2], want, rtol=1e-5)
    assert out.get()[0] == 0 and out.get()[3] == 0
    q2 = cl.CommandQueue(ctx)
    assert ours(x, y, queue=q2).queue is q2


def test_bad_input_is_a_clear_error(ctx, queue, data):
    knl = ReductionKernel(ctx, np.float32, **DOT, db="sqlite:////nonexistent/x.db")
    x = data["x"]
    with pytest.raises(TypeError, match="takes 2 arguments"):
        knl(x)
    with pytest.raises(TypeError, match="dtype float64 does not match"):
        knl(x, x.astype(np.float64))
    with pytest.raises(TypeError, match="pyopencl Array"):
        knl(x, np.ones(3, np.float32))
    with pytest.raises(TypeError, match="both range and slice"):
        knl(x, x, range=slice(0, 2), slice=slice(0, 2))
    with pytest.raises(ValueError, match="step must be positive"):
        knl(x, x, slice=slice(None, None, -1))
    with pytest.raises(TypeError, match="1-element array of float32"):
        knl(x, x, out=cla.empty(queue, 2, np.float32))
    with pytest.raises(ValueError, match="arguments must not be None"):
        ReductionKernel(ctx, np.float32, "0", "a+b")
    with pytest.raises(ValueError, match="// comments"):
        ReductionKernel(ctx, np.float32, "0", "a+b // sum", "x[i]", "__global float *x")
    marked = ReductionKernel(ctx, np.float32, "0", "//CL//\na+b", "//CL// x[i]",
                             "__global const float *x")  # pyopencl's marker, dropped as it does
    assert float(marked(cla.to_device(queue, np.ones(5, np.float32))).get()) == 5.0
    with pytest.raises(ValueError, match="tune="):
        ReductionKernel(ctx, np.float32, **DOT, tune="always")
    with pytest.raises(ValueError, match="reserved"):
        ReductionKernel(ctx, np.float32, "0", "a+b", "n[i]", "__global float *n")
    with pytest.raises(RuntimeError, match="build failed"):
        ReductionKernel(ctx, np.float32, "0", "a+b", "x[i] +", "__global float *x")


def test_fingerprint_ignores_layout_not_meaning(ctx):
    a = ReductionKernel(ctx, np.float32, **DOT)
    b = ReductionKernel(ctx, np.float32, neutral=" 0 ", reduce_expr="a+b",
                        map_expr="x[i]*y[i]\n",
                        arguments="__global const float *x,  __global const float *y")
    c = ReductionKernel(ctx, np.float64, neutral="0", reduce_expr="a+b", map_expr="x[i]*y[i]",
                        arguments="__global const float *x, __global const float *y")
    d = ReductionKernel(ctx, np.float32, neutral="0", reduce_expr="a+b", map_expr="x[i]+y[i]",
                        arguments="__global const float *x, __global const float *y")
    assert a.fingerprint == b.fingerprint
    assert len({a.fingerprint, c.fingerprint, d.fingerprint}) == 3


def _record_sum_best(db_url, info, cfg):
    store = Store.open(db_url)
    try:
        dev_id = store.upsert_device(info.fingerprint_parts(), info.fingerprint,
                                     info.hardware_key, info.name)
        rid = store.record(dev_id, Measurement("reduce", "sum/float32", "2^20", cfg.to_dict(),
                                               cfg.key(), "ok", 1 << 20, "test", "test", "",
                                               1e-4, 40.0))
        store.set_best(dev_id, rid)
    finally:
        store.close()


def _record_expr_best(db_url, info, fingerprint, bucket, cfg):
    """Store `cfg` as the tuned best of the expression `fingerprint` for class 2^bucket."""
    store = Store.open(db_url)
    try:
        dev_id = store.upsert_device(info.fingerprint_parts(), info.fingerprint,
                                     info.hardware_key, info.name)
        rid = store.record(dev_id, Measurement("expr", fingerprint, f"2^{bucket}", cfg.to_dict(),
                                               cfg.key(), "ok", 1 << bucket, "test", "test", "",
                                               1e-4, 40.0))
        store.set_best(dev_id, rid)
    finally:
        store.close()


def _stored(db_url):
    """(fingerprint, family, status, size class, config) of every stored result: what a
    failed lookup assertion shows."""
    with sqlite3.connect(db_url.removeprefix("sqlite:///")) as c:
        return c.execute("SELECT d.fingerprint, r.family, r.status, r.size_class, r.config_json, "
                         "b.id FROM cltune_results r JOIN cltune_devices d ON d.id = r.device_id "
                         "LEFT JOIN cltune_best b ON b.result_id = r.id").fetchall()


def test_a_tuned_size_class_serves_only_sizes_near_it(ctx, device, data, db_url):
    """An expression tuned for 2^20 serves 2^(20 - MAX_BUCKET_STEPS) .. 2^(20 +
    MAX_BUCKET_STEPS) from that class; sizes further away get the fallback (derived from the
    tuned sum, else builtin), and explain says why."""
    from cltune.families.expr.config import ExprConfig
    from cltune.families.expr.serve import MAX_BUCKET_STEPS

    info, _ = device
    knl = ReductionKernel(ctx, np.float32, **DOT, db=db_url)
    fallback = knl.explain(1 << 10)
    tuned = ExprConfig("contiguous" if info.type == "cpu" else "strided", 2, 2, 1, 2)
    assert tuned != fallback.config
    _record_expr_best(db_url, info, knl.fingerprint, 20, tuned)
    knl.reload()
    for b in (20 - MAX_BUCKET_STEPS, 20, 20 + MAX_BUCKET_STEPS):
        e = knl.explain(1 << b)
        assert (e.level, e.bucket, e.config) == ("exact", 20, tuned), (b, e)
    for n in (1 << 10, 1000, 1 << (21 + MAX_BUCKET_STEPS)):
        e = knl.explain(n)
        assert e.level == fallback.level and e.config != tuned, (n, e)
        assert f"tuned for 2^20 (exact), more than 2^{MAX_BUCKET_STEPS} from n" in e.why, e.why
    x, y = data["x"], data["y"]
    for k in (1000, 1 << 16):
        same(knl(x[:k], y[:k]), PyRK(ctx, np.float32, **DOT)(x[:k], y[:k]))


def test_a_tuned_config_equal_to_the_fallback_is_served_as_tuned(ctx, device, db_url):
    """The tuner may store the very config the fallback serves (it is one of its seeds): a
    kernel that served it for a size far from the tuned class first still says `exact` for
    sizes near that class (once the verdict of a config was cached with its first level)."""
    info, _ = device
    knl = ReductionKernel(ctx, np.float32, **DOT, db=db_url)
    fallback = knl.explain(1)
    cfg = fallback.config
    _record_expr_best(db_url, info, knl.fingerprint, 12, cfg)
    again = ReductionKernel(ctx, np.float32, **DOT, db=db_url)  # serves n=1 when built
    assert again.explain(1).level == fallback.level
    e = again.explain(5000)
    assert (e.level, e.bucket, e.config) == ("exact", 12, cfg), e
    assert again.explain(1).level == fallback.level  # and the far size stays the fallback


def test_tune_explain_and_derived_from_the_tuned_sum(ctx, device, queue, data, db_url,
                                                     storage_url):
    info, _ = device
    from cltune.tuning_db.shipped import DeviceKey, lookup_without_db

    knl = ReductionKernel(ctx, np.float32, **DOT, db=db_url)
    # an empty database: derived from the shipped sum where this device has shipped results
    # (the H200), else from the device's limits
    key = DeviceKey(info.fingerprint, info.hardware_key, info.model, info.vendor, info.type,
                    info.driver)
    shipped = lookup_without_db(key, "reduce", "sum/float32").rows
    assert knl.explain(4096).level == ("derived" if shipped else "builtin")
    _record_sum_best(db_url, info, cltune.Config(strategy="serial", wg=8, tile=0, items=2,
                                                 vec=4, groups_per_cu=4, passes=1))
    knl.reload()
    e = knl.explain(1 << 20)
    assert e.level == "derived" and "sum/float32" in e.why
    # the sum's single pass stays one only where the device orders struct partials (NVIDIA)
    assert (e.config.layout, e.config.items) == ("contiguous", 8)
    assert e.config.passes == (1 if info.is_nvidia else 2)
    assert e.config.wg * e.config.groups_per_cu == 32  # work-items per compute unit kept
    x, y = data["x"][:4096], data["y"][:4096]
    results = knl.tune(x, y, trials=4, timeout=30, storage=storage_url)
    assert results[0].size_class == "2^12" and results[0].config is not None
    e = knl.explain(4096)
    assert e.level == "exact", (e.why, results, _stored(db_url), info.fingerprint)
    assert e.bucket == 12 and e.config == results[0].config
    same(knl(x, y), PyRK(ctx, np.float32, **DOT)(x, y))
    # a second kernel object of the same expression finds the result in the database
    again = ReductionKernel(ctx, np.float32, **DOT, db=db_url)
    e = again.explain(5000)
    assert e.level == "exact", (e.why, e.config, results, _stored(db_url))


def test_first_use_tunes_in_the_background_and_switches(ctx, queue, data, db_url):
    knl = ReductionKernel(ctx, np.float32, neutral="0", reduce_expr="a+b",
                          map_expr="x[i]*2.5f", arguments="__global const float *x",
                          tune="first-use", budget_s=1.5, db=db_url)
    assert knl.background is None  # nothing before the first call
    x = data["x"][:2048]
    first = knl(x).get()  # served at once by the untuned config
    np.testing.assert_allclose(first, 2.5 * x.get().astype(np.float64).sum(), rtol=1e-5)
    assert knl.background is not None
    knl.background.join(timeout=60)
    assert knl.background_error is None
    assert knl.explain(2048).level == "exact"
    np.testing.assert_allclose(knl(x).get(), first, rtol=1e-5)


def test_results_come_from_a_pool_unless_an_allocator_is_named(ctx, queue, data):
    """A result per call from the kernel's memory pool when neither allocator= nor the input
    names one (a buffer created and released per call is slow on some drivers); results that
    are alive at once never share memory; an allocator given or carried by the input wins."""
    import pyopencl.tools as cltools

    knl = ReductionKernel(ctx, np.float32, **DOT)
    x, y = data["x"], data["y"]
    assert x.allocator is None
    outs = [knl(x[:k], y[:k]) for k in (101, 202, 303, 404)]
    assert all(isinstance(o.base_data, cltools.PooledBuffer) for o in outs)
    assert len({o.base_data.int_ptr for o in outs}) == 4
    for o, k in zip(outs, (101, 202, 303, 404), strict=True):
        same(o, PyRK(ctx, np.float32, **DOT)(x[:k], y[:k]))
    del outs
    again = [knl(x[:k], y[:k]).get() for k in range(1, 200)]  # freed results are reused
    np.testing.assert_allclose(again[-1], np.dot(x.get()[:199].astype(np.float64),
                                                 y.get()[:199]), rtol=1e-5)
    seen = []

    def mine(nbytes):
        seen.append(nbytes)
        return cl.Buffer(ctx, cl.mem_flags.READ_WRITE, nbytes)

    r = knl(x[:100], y[:100], allocator=mine)
    assert seen and not isinstance(r.base_data, cltools.PooledBuffer)
    own = cltools.MemoryPool(cltools.ImmediateAllocator(queue))
    xa = cla.to_device(queue, x.get()[:100], allocator=own)
    ya = cla.to_device(queue, y.get()[:100], allocator=own)
    assert knl(xa, ya).allocator is own
    same(knl(xa, ya), PyRK(ctx, np.float32, **DOT)(x[:100], y[:100]))


def test_events_are_waited_for_and_do_not_pile_up(ctx, queue, data):
    """A reused `out=` and inputs keep no completed events (pyopencl's Array.add_event makes a
    growing list wait in the middle of back-to-back calls); a pending event of an input or of
    out is still waited for."""
    knl = ReductionKernel(ctx, np.float32, **DOT)
    x, y = data["x"][:5000], data["y"][:5000]
    want = PyRK(ctx, np.float32, **DOT)(x, y)
    o = cla.empty(queue, (), np.float32)
    for _ in range(40):
        knl(x, y, out=o)
    assert len(o.events) == 1
    same(o, want)
    gate = cl.UserEvent(ctx)
    x2 = cla.empty(queue, 5000, np.float32)
    x2.add_event(cl.enqueue_copy(queue, x2.base_data, x.get(), wait_for=[gate],
                                 is_blocking=False))
    r = knl(x2, y, out=o)
    assert r is o and len(o.events) == 1
    assert o.events[0].command_execution_status != cl.command_execution_status.COMPLETE
    gate.set_status(cl.command_execution_status.COMPLETE)
    same(o, want)
    assert x2.events == [] or all(e.command_execution_status ==
                                  cl.command_execution_status.COMPLETE for e in x2.events)


def test_no_tuning_unless_asked(ctx, data, db_url):
    knl = ReductionKernel(ctx, np.float32, **DOT, db=db_url)
    knl(data["x"][:100], data["y"][:100]).get()
    assert knl.background is None


def test_tune_kernel_spec_imports_module_attribute(tmp_path, monkeypatch, device, db_url,
                                                   storage_url):
    info, _ = device
    (tmp_path / "clt_app_kernels.py").write_text(textwrap.dedent(f"""
        import numpy as np
        import pyopencl as cl
        from cltune import ReductionKernel
        from cltune.device.select import select

        def l1():
            ctx = cl.Context([select("{info.index}")[1]])
            return ReductionKernel(ctx, np.float32, "0", "a+b", "fabs(x[i])",
                                   "__global const float *x")
        NOT_A_KERNEL = 3
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ValueError, match="module:attribute"):
        load_kernel("no_colon")
    with pytest.raises(ValueError, match="cannot import"):
        load_kernel("clt_no_such_module:x")
    with pytest.raises(ValueError, match="not a cltune.ReductionKernel"):
        load_kernel("clt_app_kernels:NOT_A_KERNEL")
    got_info, results = tune_kernel_spec(str(info.index), "clt_app_kernels:l1", (10,),
                                         trials=3, timeout=30, db=db_url, storage=storage_url)
    assert got_info.fingerprint == info.fingerprint
    assert results[0].config is not None and results[0].size_class == "2^10"
    sys.modules.pop("clt_app_kernels", None)


def test_warm_calls_follow_every_change_of_arguments(ctx, queue):
    """A warm call sets only what changed since the launch last set its kernels (expr_launch):
    every change must reach the kernel. Two kernel objects of one expression share the built
    kernels; calls alternate between them, between sizes (another prepared launch of the same
    kernels), between arrays, offsets (views), scalars, ranges and results, and run from
    several threads; every answer is checked against numpy."""
    import threading

    rng = np.random.default_rng(11)
    h = rng.random(70001).astype(np.float32)
    hy = rng.random(70001).astype(np.float32)
    x, y = cla.to_device(queue, h), cla.to_device(queue, hy)
    args = "__global const float *x, __global const float *y, float s, int k"
    kw = dict(neutral="0", reduce_expr="a+b", map_expr="(x[i] > s) ? y[i] * k : 0.0f",
              arguments=args)
    k1, k2 = ReductionKernel(ctx, np.float32, **kw), ReductionKernel(ctx, np.float32, **kw)

    def want(lo, hi, s, k, step=1):
        xs, ys = h[lo:hi:step].astype(np.float64), hy[lo:hi:step].astype(np.float64)
        return float(np.where(xs > s, ys * k, 0).sum())

    out = cla.empty(queue, (), np.float32)
    cases = []
    for j in range(24):
        lo, hi = [(0, 70001), (3, 70001), (0, 4099), (17, 4099), (5, 70000)][j % 5]
        s, k = float(rng.random()), int(rng.integers(1, 5))
        cases.append((lo, hi, s, k, j))
    for lo, hi, s, k, j in cases:
        knl = (k1, k2)[j % 2]
        if j % 3 == 0:  # views: other offsets
            got = knl(x[lo:hi], y[lo:hi], np.float32(s), np.int32(k))
        elif j % 3 == 1:  # a range over the whole arrays: start changes
            got = knl(x, y, np.float32(s), np.int32(k), range=slice(lo, hi))
        else:  # a step, into the same out
            got = knl(x, y, np.float32(s), np.int32(k), range=slice(lo, hi, 3), out=out)
        step = 3 if j % 3 == 2 else 1
        np.testing.assert_allclose(float(got.get()), want(lo, hi, s, k, step), rtol=1e-4,
                                   err_msg=f"case {j}")
    # back to back on one kernel and size: only the start, the step, a scalar change
    for lo, step, k in ((0, 1, 2), (5, 1, 2), (9, 2, 2), (9, 2, 3), (0, 1, 3)):
        got = k1(x, y, np.float32(0.5), np.int32(k), range=slice(lo, lo + 4099 * step, step))
        np.testing.assert_allclose(float(got.get()), want(lo, lo + 4099 * step, 0.5, k, step),
                                   rtol=1e-4, err_msg=f"start {lo} step {step} k {k}")
    # results into different elements of one array: the result offset changes
    outs = cla.zeros(queue, 4, np.float32)
    for j in range(4):
        k1(x, y, np.float32(0.25 * j), np.int32(1), out=outs[j:j + 1])
    np.testing.assert_allclose(outs.get(), [want(0, 70001, 0.25 * j, 1) for j in range(4)],
                               rtol=1e-4)
    for j in range(4):  # tiny: one group, stage 1 writes the result itself
        k1(x[:3], y[:3], np.float32(0.25 * j), np.int32(1), out=outs[j:j + 1])
    np.testing.assert_allclose(outs.get(), [want(0, 3, 0.25 * j, 1) for j in range(4)],
                               rtol=1e-4)
    errors: list[str] = []

    def worker(seed: int) -> None:
        r = np.random.default_rng(seed)
        q = cl.CommandQueue(ctx)
        for _ in range(20):
            s, k = float(r.random()), int(r.integers(1, 5))
            got = float(k1(x.with_queue(q), y.with_queue(q), np.float32(s), np.int32(k),
                           queue=q).get())
            w = want(0, 70001, s, k)
            if abs(got - w) > 1e-4 * abs(w):
                errors.append(f"{seed}: {got} != {w}")

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:5]


def test_a_warm_call_takes_a_zero_of_the_other_sign(ctx, queue):
    """A warm call sets a scalar again only when it changed, and -0.0 == 0.0: yet x / d gives
    infinities of opposite signs, so a zero's sign counts (two prepared sizes, several
    calls in a row of each sign)."""
    knl = ReductionKernel(ctx, np.float32, neutral="0", reduce_expr="a+b", map_expr="x[i] / d",
                          arguments="__global const float *x, float d")
    x = cla.to_device(queue, np.random.default_rng(12).random(5001).astype(np.float32) + 1)
    for n in (5001, 999):
        v = x[:n]
        for d in (0.0, 0.0, -0.0, -0.0, 0.0, -0.0, 2.0):
            got = float(knl(v, d).get())
            if d == 0:
                assert np.isinf(got) and np.signbit(got) == np.signbit(d), (n, d, got)
            else:
                assert got == pytest.approx(float(x.get()[:n].astype(np.float64).sum()) / d,
                                            rel=1e-5)


def test_calls_along_an_axis(ctx, queue):
    """`knl(*args, axis=k, keepdims=...)` (CuPy's ReductionKernel has it too): the vector
    arguments reduced along an axis, numpy's shapes, C and F order, scalar arguments, a 3-D
    middle axis and adjacent tuples; misuse is a clear error."""
    rng = np.random.default_rng(3)
    dot = ReductionKernel(ctx, np.float32, neutral="0", reduce_expr="a+b",
                          map_expr="x[i]*y[i]*s",
                          arguments="__global const float *x, __global const float *y, "
                                    "float s")
    cnt = ReductionKernel(ctx, np.int64, neutral="0", reduce_expr="a+b",
                          map_expr="(x[i] > t) ? 1 : 0",
                          arguments="__global const float *x, float t")
    for shape in ((37, 1025), (1031, 7), (4, 5, 6), (1, 13)):
        h, g = rng.random(shape).astype(np.float32), rng.random(shape).astype(np.float32)
        for order in "CF":
            x = cla.to_device(queue, np.asarray(h, order=order))
            y = cla.to_device(queue, np.asarray(g, order=order))
            axes = [*range(len(shape)), -1, None] + ([(1, 2)] if len(shape) == 3 else [(0, 1)])
            for axis in axes:
                if isinstance(axis, tuple) and order == "F":
                    axis = tuple(a for a in axis)
                for keep in (False, True):
                    got = dot(x, y, np.float32(2), axis=axis, keepdims=keep)
                    want = (2 * h.astype(np.float64) * g).sum(axis=axis, keepdims=keep)
                    assert got.shape == want.shape, (shape, order, axis, keep)
                    np.testing.assert_allclose(got.get(), want, rtol=1e-5,
                                               err_msg=f"{shape} {order} {axis} {keep}")
                    c = cnt(x, np.float32(0.5), axis=axis, keepdims=keep).get()
                    np.testing.assert_array_equal(c, (h > 0.5).sum(axis=axis, keepdims=keep))
    x = cla.to_device(queue, rng.random((8, 9)).astype(np.float32))
    with pytest.raises(TypeError, match="range"):
        cnt(x, np.float32(0), axis=0, range=slice(0, 4))
    with pytest.raises(TypeError, match="out="):
        cnt(x, np.float32(0), axis=0, out=cla.empty(queue, 9, np.int64))
    with pytest.raises(ValueError, match="one shape"):
        dot(x, cla.to_device(queue, rng.random((9, 8)).astype(np.float32)), np.float32(1),
            axis=0)
    with pytest.raises(ValueError, match="adjacent"):
        cnt(cla.to_device(queue, np.zeros((2, 3, 4), np.float32)), np.float32(0), axis=(0, 2))


def test_argument_names_are_not_shadowed_by_the_kernels(ctx, queue):
    """The application's expressions see its own arguments, whatever their names: the
    skeletons' locals are all clt_-prefixed (a user scalar `t` was the axis kernel's strip
    index; `j`, the 1-D kernel's loop counter)."""
    names = ("j", "t", "u", "s", "m", "v", "lid", "lane", "stride", "p_", "a_", "b_", "o_")
    args = ", ".join(["__global const float *x"] + [f"float {n}" for n in names])
    knl = ReductionKernel(ctx, np.float32, neutral="0", reduce_expr="a+b",
                          map_expr="x[i] * j + " + " + ".join(names[1:]), arguments=args)
    vals = [np.float32(k + 2) for k in range(len(names))]
    h = np.random.default_rng(1).random((301, 67)).astype(np.float32)
    x = cla.to_device(queue, h)
    per = h.astype(np.float64) * 2 + sum(float(v) for v in vals[1:])
    np.testing.assert_allclose(knl(x, *vals).get(), per.sum(), rtol=1e-5)
    for axis in (0, 1):
        np.testing.assert_allclose(knl(x, *vals, axis=axis).get(), per.sum(axis=axis),
                                   rtol=1e-5)


def test_first_use_along_an_axis_tunes_that_class_in_the_background(ctx, queue, db_url):
    """tune="first-use": the first call along an axis starts one background run for its
    layout and shape class; calls are served meanwhile (the heuristic) and by the tuned
    config once stored; nothing starts for an axis call of a kernel not asked to tune."""
    kw = dict(neutral="0", reduce_expr="a+b", map_expr="x[i]*2.5f",
              arguments="__global const float *x")
    knl = ReductionKernel(ctx, np.float32, **kw, tune="first-use", budget_s=2.0, db=db_url)
    h = np.random.default_rng(2).random((512, 48)).astype(np.float32)
    x = cla.to_device(queue, h)
    first = knl(x, axis=0).get()
    np.testing.assert_allclose(first, 2.5 * h.astype(np.float64).sum(axis=0), rtol=1e-5)
    assert len(knl.background_axes) == 1
    knl(x, axis=0).get()  # the same class: no second run
    (t,) = knl.background_axes.values()
    t.join(timeout=90)
    assert knl.background_error is None
    np.testing.assert_allclose(knl(x, axis=0).get(), first, rtol=1e-5)
    rows = Store.open(db_url)
    try:
        ids = rows.device_ids()
        got = [r for r in rows.ok_results(ids, "expr_axis", None)
               if r.variant == f"{knl.fingerprint}/cols"]
    finally:
        rows.close()
    assert got, "the background run stored nothing"
    quiet = ReductionKernel(ctx, np.float32, **kw, db=db_url)
    quiet(x, axis=1).get()
    assert quiet.background_axes == {} and quiet.background is None


def test_vectors_named_a_and_b_as_pyopencls_dot_kernel(ctx, queue):
    """pyopencl's get_dot_kernel names its vectors `a` and `b` (its reduce_expr is a function
    of its own): on ours the expressions' `a`/`b` are reduce_expr's operands there and the
    application's arrays in map_expr, whole and along both axes, with a finish and a scalar."""
    rng = np.random.default_rng(3)
    ha, hb = (rng.random((37, 53)).astype(np.float32) for _ in range(2))
    a, b = cla.to_device(queue, ha), cla.to_device(queue, hb)
    dot = ReductionKernel(ctx, np.float32, neutral="0", reduce_expr="a+b",
                          map_expr="a[i]*b[i]*s", arguments=(
                              "__global const float *a, __global const float *b, float s"),
                          name="dot_a_b")
    want = (ha.astype(np.float64) * hb) * 2.0
    np.testing.assert_allclose(dot(a, b, np.float32(2)).get(), want.sum(), rtol=1e-5)
    for axis in (0, 1):
        np.testing.assert_allclose(dot(a, b, np.float32(2), axis=axis).get(),
                                   want.sum(axis=axis), rtol=1e-5)
    mean = ReductionKernel(ctx, np.float32, neutral="0", reduce_expr="a+b", map_expr="a[i]",
                           arguments="__global const float *a", finish_expr="a / n",
                           name="mean_of_a")
    np.testing.assert_allclose(mean(a).get(), ha.astype(np.float64).mean(), rtol=1e-5)
    np.testing.assert_allclose(mean(a, axis=1).get(), ha.astype(np.float64).mean(axis=1),
                               rtol=1e-5)


def test_pyopencls_own_reduction_getters_build_on_ours(device, queue, monkeypatch):
    """pyopencl.reduction's kernel getters (get_sum/dot/subset_dot/minmax/subset_minmax,
    behind cla.sum, dot, vdot, subset_dot, min, max, subset_min/max) build their kernels on
    cltune.ReductionKernel when it is swapped in, and pyopencl.array's functions give
    pyopencl's own answers: real, complex (pyopencl-complex.h) and integer dtypes."""
    import pyopencl.reduction as pr

    _, dev = device
    rng = np.random.default_rng(11)
    n = 100003
    host = {"x": rng.random(n).astype(np.float32), "y": rng.random(n).astype(np.float32),
            "z": (rng.random(n) + 1j * rng.random(n)).astype(np.complex64),
            "i": rng.integers(-100, 100, n).astype(np.int32),
            "lut": rng.integers(0, n, 999).astype(np.int32)}

    def run(q):
        d = {k: cla.to_device(q, v) for k, v in host.items()}
        x, y, z, i, lut = d["x"], d["y"], d["z"], d["i"], d["lut"]
        return {"sum": cla.sum(x), "isum": cla.sum(i), "csum": cla.sum(z),
                "dot": cla.dot(x, y), "vdot": cla.vdot(z, z), "mixed dot": cla.dot(z, x),
                "subset_dot": cla.subset_dot(lut, x, y), "min": cla.min(x),
                "imax": cla.max(i), "subset_min": cla.subset_min(lut, x),
                "subset_max": cla.subset_max(lut, i)}

    want = {k: v.get() for k, v in run(queue).items()}
    monkeypatch.setattr(pr, "ReductionKernel", ReductionKernel)
    fresh = cl.Context([dev])  # the getters memoize per context: a context they never saw
    q = cl.CommandQueue(fresh)
    got = {k: v.get() for k, v in run(q).items()}
    for getter in (pr.get_sum_kernel(fresh, np.dtype(np.float32), np.dtype(np.float32)),
                   pr.get_dot_kernel(fresh, None, np.dtype(np.float32), np.dtype(np.float32)),
                   pr.get_minmax_kernel(fresh, "min", np.dtype(np.float32))):
        assert isinstance(getter, ReductionKernel)
    for k, w in want.items():
        if w.dtype.kind in "iu":
            assert got[k] == w, k
        else:
            np.testing.assert_allclose(got[k], w, rtol=2e-5, err_msg=k)


def test_a_kernel_without_vectors_runs_over_a_range(ctx, queue, storage_url, db_url):
    """As in pyopencl, a kernel may have scalar arguments only (map_expr of `i`): the call
    names `range=` and a queue; tuning names the element count."""
    def tri(lo, hi, step=1):
        return sum(range(lo, hi, step)) * 3

    kw = dict(neutral="0", reduce_expr="a+b", map_expr="(long)i * k", arguments="long k")
    ours, theirs = both(ctx, np.int64, **kw)
    for lo, hi, step in ((0, 1, 1), (0, 100, 1), (5, 100003, 3), (7, 7, 1), (0, 1 << 20, 1)):
        rng = slice(lo, hi, step)
        got = ours(np.int64(3), range=rng, queue=queue).get()
        assert got == tri(lo, hi, step) == theirs(np.int64(3), range=rng, queue=queue).get()
    with pytest.raises(TypeError, match="must have vector argument"):
        ours(np.int64(3), queue=queue)
    with pytest.raises(TypeError, match="no queue"):
        ours(np.int64(3), range=slice(0, 10))
    with pytest.raises(TypeError, match="has none"):
        ours(np.int64(3), axis=0, queue=queue)
    with pytest.raises(TypeError, match="element count"):
        ours.tune(np.int64(3), queue=queue)
    knl = ReductionKernel(ctx, np.int64, **kw, db=db_url)
    res = knl.tune(np.int64(3), n=5000, queue=queue, trials=3, timeout=30, storage=storage_url)
    assert res[0].size_class == "2^12" and res[0].config is not None
    assert knl.explain(4096, queue.device).level == "exact"
    assert knl(np.int64(3), range=slice(0, 4096), queue=queue).get() == tri(0, 4096)


def test_padding_fields_of_struct_results_are_not_compared():
    """A struct field no expression sets (pyopencl's documented `minmax_collector.pad`) holds
    whatever each kernel left there: validation compares every other field and none named as
    padding, so such a kernel's configs are not all refused (CI once saw the builtin "passed
    over" on `pad: output 0: 289 != 2036756992`)."""
    from cltune.core.inputs import PADDING, close

    dt = np.dtype([("cur_min", np.int32), ("cur_max", np.int32), ("pad", np.int32)])
    want = np.array([(1, 9, 289)], dt)
    got = np.array([(1, 9, 2036756992)], dt)
    assert close(got, want, dt, 0.0) == ""
    got["cur_max"] = 8
    assert close(got, want, dt, 0.0).startswith("cur_max: output 0: 8 != 9")
    assert all(PADDING.fullmatch(n) for n in ("pad", "_pad0", "padding", "__pad_1", "PAD"))
    assert not any(PADDING.fullmatch(n) for n in ("padded_sum", "spad", "paddle", "x"))
