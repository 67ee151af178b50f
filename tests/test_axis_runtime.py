"""`r(x, axis=...)` and `r.segments(...)` as applications call them: numpy's shapes, result
dtypes and errors, C and F order, middle and tuple axes, views, `out=`, events."""

from __future__ import annotations

import numpy as np
import pyopencl as cl
import pyopencl.array as cla
import pytest

import cltune
from cltune.core.shapes import AxisError
from cltune.families.axis.api import explain_axis
from cltune.families.axis.segments import explain_segments


@pytest.fixture
def db(tmp_path):
    return f"sqlite:///{tmp_path / 'none.db'}"  # never tuned: builtin configs


#: the tests' databases are never tuned: the runtime says so once per database
pytestmark = pytest.mark.filterwarnings("ignore::cltune.core.serving.CltuneWarning")


def _r(queue, op="sum", dtype=np.float32, db=None):
    return cltune.get_reducer(queue, op, dtype, db=db)


def _close(got, want, dtype):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, want.shape,
                                                                 got.dtype, want.dtype)
    if np.dtype(dtype).kind == "f":
        tol = 5e-3 if np.dtype(dtype).itemsize == 2 else 1e-5
        g, w = got.astype(np.float64), want.astype(np.float64)
        with np.errstate(invalid="ignore"):
            ok = (np.abs(g - w) <= tol * np.maximum(1.0, np.abs(w))) | (g == w) | (
                np.isnan(g) & np.isnan(w))
        assert np.all(ok), (got, want)
    else:
        assert np.array_equal(got, want)


SHAPES = [(7,), (3, 1025), (1, 1), (1031, 1), (2, 3, 5), (4, 33, 17), (2, 3, 4, 5)]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("order", ["C", "F"])
def test_every_axis_matches_numpy(queue, db, shape, order):
    rng = np.random.default_rng(1)
    x = np.asarray(rng.uniform(-1, 2, shape).astype(np.float32), order=order)
    r = _r(queue, db=db)
    xd = cla.to_device(queue, x)
    for axis in [*range(x.ndim), -1]:
        _close(r(xd, axis=axis).get(), x.sum(axis=axis), np.float32)
        _close(r(xd, axis=axis, keepdims=True).get(), x.sum(axis=axis, keepdims=True),
               np.float32)


@pytest.mark.parametrize("op,dtype", [("sum", np.int32), ("max", np.float32), ("min", np.int64),
                                      ("prod", np.float64), ("sum", np.uint64),
                                      ("sum", np.float16), ("max", np.uint32)])
def test_ops_and_result_dtypes(queue, db, device, op, dtype):
    if np.dtype(dtype) == np.float64 and not device[0].fp64:
        pytest.skip("no fp64")
    rng = np.random.default_rng(2)
    if np.dtype(dtype).kind == "f":
        x = rng.uniform(0.9, 1.1, (37, 29)).astype(dtype)
    else:
        x = rng.integers(0, 1000, (37, 29)).astype(dtype)
    r = _r(queue, op, dtype, db)
    for axis in (0, 1):
        want = getattr(np, op)(x, axis=axis)
        _close(r(cla.to_device(queue, x), axis=axis).get(), want, dtype)


def test_tuple_axes_middle_axes_and_views(queue, db):
    x = np.random.default_rng(3).random((4, 5, 6, 7), dtype=np.float32)
    r = _r(queue, db=db)
    xd = cla.to_device(queue, x)
    for axis in [(1, 2), (2, 3), (0, 1, 2), (-2, -3), (0, 1, 2, 3)]:
        _close(r(xd, axis=axis).get(), x.sum(axis=axis), np.float32)
    _close(r(xd, axis=None, keepdims=True).get(), x.sum(keepdims=True), np.float32)
    flat = cla.to_device(queue, x.ravel())
    view = flat[3:3 + 6 * 7].reshape(6, 7)  # an offset view, unaligned
    _close(r(view, axis=1).get(), x.ravel()[3:45].reshape(6, 7).sum(axis=1), np.float32)
    _close(r(x, axis=2).get(), x.sum(axis=2), np.float32)  # a numpy array is uploaded


def test_dot_along_an_axis(queue, db):
    rng = np.random.default_rng(4)
    x, y = rng.random((33, 65), dtype=np.float32), rng.random((33, 65), dtype=np.float32)
    r = _r(queue, "dot", db=db)
    xd, yd = cla.to_device(queue, x), cla.to_device(queue, y)
    for axis in (0, 1):
        _close(r(xd, yd, axis=axis).get(), (x * y).sum(axis=axis), np.float32)
    with pytest.raises(ValueError, match="differ"):
        r(xd, cla.to_device(queue, y[:, :64].copy()), axis=0)


def test_nan_inf_and_empty_axes(queue, db):
    x = np.ones((3, 4), np.float32)
    x[1, 2] = np.nan
    x[2, 0] = np.inf
    xd = cla.to_device(queue, x)
    for op in ("sum", "max", "min"):
        _close(_r(queue, op, db=db)(xd, axis=1).get(), getattr(np, op)(x, axis=1), np.float32)
    e = cla.to_device(queue, np.zeros((3, 0), np.float32))
    got = _r(queue, db=db)(e, axis=1).get()
    assert got.tolist() == [0, 0, 0] and not np.signbit(got).any()
    assert _r(queue, db=db)(e, axis=0).shape == (0,)
    with pytest.raises(ValueError, match="no identity"):
        _r(queue, "max", db=db)(e, axis=1)
    assert _r(queue, "prod", db=db)(e, axis=1).get().tolist() == [1, 1, 1]


def test_bad_axes_and_arrays_are_clear_errors(queue, db):
    r = _r(queue, db=db)
    xd = cla.to_device(queue, np.zeros((2, 3, 4), np.float32))
    with pytest.raises(AxisError):
        r(xd, axis=3)
    with pytest.raises(ValueError, match="duplicate"):
        r(xd, axis=(1, -2))
    with pytest.raises(ValueError, match="adjacent"):
        r(xd, axis=(0, 2))
    with pytest.raises(TypeError, match="int"):
        r(xd, axis=1.0)
    r(xd, axis=1).get()  # now cached: equal but wrong axes must still be rejected
    for bad in (1.0, True, (1.0,)):
        with pytest.raises(TypeError, match="int"):
            r(xd, axis=bad)
    with pytest.raises(TypeError, match="dtype"):
        r(cla.to_device(queue, np.zeros((2, 3), np.float64)), axis=0)
    strided = cla.to_device(queue, np.zeros((4, 6), np.float32))[:, ::2]
    with pytest.raises(ValueError, match="contiguous"):
        r(strided, axis=0)


def test_out_and_events(queue, db, ctx):
    x = np.random.default_rng(5).random((64, 33), dtype=np.float32)
    r = _r(queue, db=db)
    xd = cla.to_device(queue, x)
    out = cla.empty(queue, (33,), np.float32)
    assert r(xd, axis=0, out=out) is out
    _close(out.get(), x.sum(axis=0), np.float32)
    with pytest.raises(TypeError, match="shape"):
        r(xd, axis=0, out=cla.empty(queue, (64,), np.float32))
    # wait_for: the input is written by a command that waits on a user event
    gate = cl.UserEvent(ctx)
    y = cla.empty(queue, (64, 33), np.float32)
    q2 = cl.CommandQueue(ctx)
    ev = cl.enqueue_copy(q2, y.base_data, x, wait_for=[gate], is_blocking=False)
    res = r(y, axis=1, wait_for=[ev])
    gate.set_status(cl.command_execution_status.COMPLETE)
    _close(res.get(), x.sum(axis=1), np.float32)
    with pytest.raises(TypeError, match="Events"):
        r(xd, axis=0, wait_for=[1])


def test_explain_names_the_layout_and_the_level(queue, db):
    r = _r(queue, db=db)
    e = explain_axis(r, (1 << 10, 64), 1)
    assert e.variant == "sum/float32/rows" and e.level == "builtin" and e.shape == (1024, 64)
    e = explain_axis(r, (1 << 10, 64), 0)
    assert e.variant == "sum/float32/cols" and e.shape == (1024, 64)
    assert explain_axis(r, (3, 5, 7), 1, order="F").shape == (5, 3)
    assert explain_segments(r, 100, 2000).variant == "sum/float32/segs"
    assert "no tuned class" in str(e)
    assert r.explain((1 << 10, 64), axis=1) == explain_axis(r, (1 << 10, 64), 1)
    assert r.explain(1000).n == 1000  # the 1-D form is unchanged


def test_segments_match_numpy(queue, db):
    rng = np.random.default_rng(6)
    lens = rng.integers(0, 40, 300)
    lens[[0, 7, 8]] = 0
    lens[50] = 20000  # a long one
    offs = np.concatenate([[0], np.cumsum(lens)])
    x = rng.random(int(offs[-1]), dtype=np.float32)
    for odt in (np.int32, np.int64):
        od = cla.to_device(queue, offs.astype(odt))
        xd = cla.to_device(queue, x)
        for op in ("sum", "max"):
            got = _r(queue, op, db=db).segments(xd, od).get()
            full = lens > 0
            want = np.full(lens.size, 0.0 if op == "sum" else -np.inf, np.float32)
            want[full] = getattr(np, "add" if op == "sum" else "maximum").reduceat(
                x, offs[:-1][full])
            _close(got, want, np.float32)
    got = _r(queue, "min", np.int32, db).segments(
        np.array([5, 1, 7], np.int32), np.array([0, 2, 2, 3], np.int32), initial=6).get()
    assert got.tolist() == [1, 6, 6]
    assert _r(queue, db=db).segments(x[:3], np.array([0], np.int32)).shape == (0,)


def test_bad_offsets_raise_once_then_only_when_asked(queue, db):
    r = _r(queue, db=db)
    x = cla.to_device(queue, np.arange(10, dtype=np.float32))
    good = cla.to_device(queue, np.array([0, 3, 10], np.int32))
    assert r.segments(x, good).get().tolist() == [3, 42]
    bad = cla.to_device(queue, np.array([0, 5, 3, 12], np.int32))
    with pytest.raises(ValueError, match="segment 1"):
        r.segments(x, bad)
    r.segments(x, bad, check=False)  # never read back: no error, no out-of-range load
    with pytest.raises(ValueError, match="segment 1"):
        r.segments(x, bad, check=True)
    with pytest.raises(TypeError, match="int32 or int64"):
        r.segments(x, cla.to_device(queue, np.array([0, 1], np.float32)))
    for check in (None, False, True):  # host bounds: checked on the host, every call
        with pytest.raises(ValueError, match="segment 1"):
            r.segments(x, np.array([0, 5, 3, 12], np.int64), check=check)
        with pytest.raises(ValueError, match="segment 2"):
            r.segments(x, np.array([0, 5, 7, 12], np.int32), check=check)
    assert r.segments(x, np.array([0, 3, 10], np.int64)).get().tolist() == [3, 42]
    with pytest.raises(TypeError, match="sum"):
        _r(queue, "dot", db=db).segments(x, good)


def test_warm_calls_follow_every_change(queue, db):
    """Axis launches set a kernel's scalar arguments only when they differ from the values last
    set on that kernel object (kernel_args.ArgSetter, shared by launchers of one build): every
    change of shape, offset, split, initial value and result must reach the kernel. Calls
    alternate between shapes of one layout, views at other offsets, two reducers and
    segments with other bounds and initial values; each is checked against numpy."""
    rng = np.random.default_rng(5)
    h = rng.random(70000).astype(np.float32)
    base = cla.to_device(queue, h)
    r1, r2 = _r(queue, db=db), _r(queue, "max", db=db)
    shapes = [(64, 64), (3, 1025), (1031, 7), (2, 9000), (9000, 2)]
    for j in range(20):
        rows, cols = shapes[j % len(shapes)]
        off = (0, 1, 5, 13)[j % 4]
        x = base[off:off + rows * cols].reshape(rows, cols)
        hx = h[off:off + rows * cols].reshape(rows, cols).astype(np.float64)
        for axis in (1, 0):
            r = (r1, r2)[(j + axis) % 2]
            got = r(x, axis=axis).get()
            want = hx.sum(axis=axis) if r is r1 else hx.max(axis=axis)
            np.testing.assert_allclose(got, want, rtol=1e-5,
                                       err_msg=f"{r.spec} {rows}x{cols} off {off} axis {axis}")
    rm = _r(queue, "max", db=db)
    for j in range(8):
        lens = rng.integers(0, 40, 50 + j)
        offs = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
        init = float(j) / 10 if j % 2 else None
        od = cla.to_device(queue, offs)
        got = rm.segments(base, od, init).get()
        want = [max([*h[a:b].astype(np.float64)] + ([init] if init is not None else []),
                    default=-np.inf) for a, b in zip(offs[:-1], offs[1:], strict=True)]
        np.testing.assert_allclose(got, want, rtol=1e-6, err_msg=f"segments {j} init {init}")


def test_warm_launches_sharing_a_kernel_reset_each_others_arguments(queue, db):
    """Warm calls set only their buffers while the kernel still holds their own scalars
    (ArgSetter.launch_again): calls of one config at other row counts, offsets and axes, a
    max reducer and a cold call in between must each set theirs again."""
    rng = np.random.default_rng(8)
    h = rng.random(40000).astype(np.float32)
    base = cla.to_device(queue, h)
    r, rm = _r(queue, db=db), _r(queue, "max", db=db)
    views = [(50, 64, 0), (70, 64, 3), (50, 64, 3), (33, 64, 1)]
    order = [0, 0, 1, 0, 1, 1, 2, 3, 0, 3, 3, 2, 1, 0]
    for step, v in enumerate(order):
        rows, cols, off = views[v]
        x = base[off:off + rows * cols].reshape(rows, cols)
        hx = h[off:off + rows * cols].reshape(rows, cols).astype(np.float64)
        for axis in (1, 0):
            np.testing.assert_allclose(r(x, axis=axis).get(), hx.sum(axis=axis), rtol=1e-5,
                                       err_msg=f"step {step}: {rows}x{cols}+{off} axis {axis}")
        if step % 3 == 2:  # another reducer's launch, then a cold shape, on the same queue
            np.testing.assert_allclose(rm(x, axis=1).get(), hx.max(axis=1), rtol=1e-6)
            y = base[:step * 7 + 64].reshape(-1, 1)
            np.testing.assert_allclose(r(y, axis=0).get(), h[:step * 7 + 64].sum(), rtol=1e-5)


def test_repeated_calls_reuse_their_launch_and_stay_right(queue, db, ctx):
    """A call seen before (shape, strides, offset, axis, keepdims, queue) launches what the
    first one prepared: other data of that shape, other queues, F order, keepdims, negative
    axes, inputs still being written on another queue, and a bigger shape growing the
    scratch between two warm calls all give numpy's answer."""
    from cltune.families.axis.serve import axis_engine

    rng = np.random.default_rng(11)
    r = _r(queue, db=db)
    q2 = cl.CommandQueue(ctx)
    cases = [((300, 70001), 1), ((70001, 3), 0), ((257, 129), 0), ((257, 129), -1)]
    for shape, axis in cases:
        for rep in range(3):
            h = rng.random(shape, dtype=np.float32)
            for order in ("C", "F"):
                ho = np.asarray(h, order=order)
                x = cla.to_device(queue, ho)
                for keep in (False, True):
                    got = r(x, axis=axis, keepdims=keep).get()
                    want = ho.astype(np.float64).sum(axis=axis, keepdims=keep)
                    assert got.shape == want.shape
                    np.testing.assert_allclose(got, want, rtol=1e-5,
                                               err_msg=f"{shape} {order} axis {axis} rep {rep}")
            # an input still being written on another queue: its event is waited for
            x2 = cla.to_device(q2, h)
            doubled = x2 * 2  # enqueued on q2, pending when the reducer's queue launches
            got = r(doubled, axis=axis).get()
            np.testing.assert_allclose(got, 2 * h.astype(np.float64).sum(axis=axis), rtol=1e-5)
            # the same shape on another queue, and a scratch grown in between
            got = r(x, axis=axis, queue=q2).get(queue=q2)
            np.testing.assert_allclose(got, ho.astype(np.float64).sum(axis=axis), rtol=1e-5)
            big = cla.to_device(queue, rng.random((4, 1 << 20), dtype=np.float32))
            r(big, axis=1).get()
    assert axis_engine(r).warm, "no call was prepared for reuse"
    assert r._axis_hot, "no call on the reducer's queue was prepared for its own hot path"


def test_the_hot_path_along_an_axis_serves_int_axes_only(queue, db):
    """A warm call along an int axis does not serve a bool or float axis that hashes as that
    int (numpy refuses them), nor another context's array: they take the general path."""
    r = _r(queue, db=db)
    h = np.random.default_rng(3).random((40, 30)).astype(np.float32)
    x = cla.to_device(queue, h)
    for _ in range(2):
        np.testing.assert_allclose(r(x, axis=1).get(), h.astype(np.float64).sum(1), rtol=1e-5)
    assert (x.shape, x.strides, x.offset, 1, False) in r._axis_hot
    keep = r(x, axis=1, keepdims=np.array(True))  # any truthy keepdims, as numpy takes it
    assert keep.shape == (40, 1) and (x.shape, x.strides, x.offset, 1, True) in r._axis_hot
    np.testing.assert_allclose(keep.get(), h.astype(np.float64).sum(1, keepdims=True), rtol=1e-5)
    for bad in (True, 1.0):
        with pytest.raises(TypeError):
            r(x, axis=bad)
    ctx2 = cl.Context([queue.device])  # kept: Intel's CPU runtime frees a context nobody holds
    other = cl.CommandQueue(ctx2)
    with pytest.raises(ValueError, match="context"):
        r(cla.to_device(other, h), axis=1)


@pytest.mark.parametrize("op,dtype", [("sum", np.float32), ("sum", np.int32), ("max", np.int64),
                                      ("prod", np.float16), ("min", np.float64)])
def test_an_axis_of_length_one_is_a_converting_copy(queue, db, device, op, dtype):
    """(CPUs serve it with the strided layout as 1 x n): values and result dtypes kept."""
    if np.dtype(dtype) == np.float64 and not device[0].fp64:
        pytest.skip("no fp64")
    rng = np.random.default_rng(5)
    x = rng.integers(-9, 9, (1031, 1, 3)).astype(dtype)
    r, f = _r(queue, op, dtype, db=db), getattr(np, op)
    xd = cla.to_device(queue, x)
    for axis in (1, (1,)):
        got, want = r(xd, axis=axis).get(), f(x, axis=axis)
        _close(got, want, dtype)
    _close(r(cla.to_device(queue, x[:, :, 0].copy()), axis=1).get(), f(x[:, :, 0], axis=1), dtype)
    xf = np.asfortranarray(x)  # F order: the result's order follows, element for element
    got = r(cla.to_device(queue, xf), axis=1, keepdims=True).get()
    _close(got, f(xf, axis=1, keepdims=True), dtype)
    big = cla.to_device(queue, rng.integers(-9, 9, 7 + 1031 * 3).astype(dtype))
    view = big[7:].reshape(1031, 1, 3)  # at an offset
    _close(r(view, axis=1).get(), f(big.get()[7:].reshape(1031, 1, 3), axis=1), dtype)
