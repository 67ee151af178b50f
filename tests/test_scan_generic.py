"""cltune.GenericScanKernel / InclusiveScanKernel / ExclusiveScanKernel with pyopencl's
constructors and calls (#21 item 2): inclusive and exclusive (prev_item), an associative but
not commutative scan_expr, segments (is_segment_start_expr, across_seg_boundary), input fetch
expressions, struct-free and 64-bit index types, offsets, an output statement that writes
where another element's input was, output statements with comments and preprocessor lines; and
pyopencl.algorithm's copy_if, remove_if, partition, unique, RadixSort (keys and values) and
ListOfListsBuilder run on it inside `cltune.use_in_pyopencl()`, with the same answers as
numpy."""

from __future__ import annotations

import numpy as np
import pyopencl.algorithm as alg
import pyopencl.array as cla
import pyopencl.scan as pscan
import pytest

import cltune

N = 100003


@pytest.fixture
def h():
    return np.random.default_rng(0).integers(-5, 5, N).astype(np.int32)


def test_inclusive_exclusive_and_legacy_kernels(ctx, queue, h):
    x, y = cla.to_device(queue, h), cla.empty(queue, (N,), np.int32)
    k = cltune.GenericScanKernel(ctx, np.int32, "__global int *x, __global int *y", "x[i]",
                                 "a+b", "0", "y[i] = prev_item")
    k(x, y)
    assert np.array_equal(y.get(), np.concatenate([[0], np.cumsum(h)[:-1]]))
    inc = cltune.InclusiveScanKernel(ctx, np.int32, "a+b", "0")
    assert np.array_equal(inc(x, cla.empty_like(x)).get(), np.cumsum(h))
    exc = cltune.ExclusiveScanKernel(ctx, np.int32, "a+b", "0")
    z = cla.to_device(queue, h)
    exc(z)  # in place, as pyopencl's
    assert np.array_equal(z.get(), np.concatenate([[0], np.cumsum(h)[:-1]]))
    f = np.random.default_rng(1).random(5001).astype(np.float64)
    got = cltune.InclusiveScanKernel(ctx, np.float64, "max(a, b)", "-INFINITY")(
        cla.to_device(queue, f), cla.empty(queue, (5001,), np.float64)).get()
    assert np.array_equal(got, np.maximum.accumulate(f))


def test_order_is_kept_for_a_non_commutative_scan(ctx, queue, h):
    """'the first nonzero so far': associative, not commutative."""
    x, y = cla.to_device(queue, h), cla.empty(queue, (N,), np.int32)
    cltune.GenericScanKernel(ctx, np.int32, "__global int *x, __global int *y", "x[i]",
                             "a != 0 ? a : b", "0", "y[i] = item")(x, y)
    nz = np.flatnonzero(h)
    want = np.where(np.arange(N) >= nz[0], h[nz[0]], 0)
    assert np.array_equal(y.get(), want)


def test_segments_offsets_fetch_and_index64(ctx, queue, h):
    flags = (np.random.default_rng(1).random(N) < 0.01).astype(np.int32)
    flags[0] = 1
    x, fl = cla.to_device(queue, h), cla.to_device(queue, flags)
    y = cla.empty(queue, (N,), np.int32)
    knl = cltune.GenericScanKernel(ctx, np.int32,
                                   "__global int *x, __global int *fl, __global int *y",
                                   "x[i]", "across_seg_boundary ? b : a+b", "0",
                                   "y[i] = item", is_segment_start_expr="fl[i]",
                                   index_dtype=np.int64)
    knl(x, fl, y)
    seg = np.cumsum(flags) - 1
    want = np.concatenate([np.cumsum(h[seg == s]) for s in range(seg.max() + 1)])
    assert np.array_equal(y.get(), want)
    # input_fetch_exprs with offset -1 (a difference of neighbours) at an offset view
    d = cla.empty(queue, (N - 7,), np.int32)
    cltune.GenericScanKernel(ctx, np.int32, "__global int *x, __global int *d",
                             "i == 0 ? 0 : (xi - xim1)", "a+b", "0", "d[i] = item",
                             input_fetch_exprs=[("xi", "x", 0), ("xim1", "x", -1)])(
        x[7:], d)
    assert np.array_equal(d.get(), h[7:] - h[7])  # telescoping: x[i] - x[0]


def test_output_may_overwrite_inputs(ctx, queue):
    """ListOfListsBuilder's scan writes ary[i + 1] = item in place."""
    c = np.random.default_rng(3).integers(0, 9, 50001).astype(np.int32)
    a = cla.to_device(queue, c)
    cltune.GenericScanKernel(ctx, np.int32, "__global int *ary", "ary[i]", "a+b", "0",
                             "ary[i + 1] = item;")(a, size=50000)
    got = a.get()
    assert got[0] == c[0] and np.array_equal(got[1:], np.cumsum(c[:-1]))


def test_pyopencl_algorithm_runs_on_it(ctx, queue, h):
    x = cla.to_device(queue, h)
    with cltune.use_in_pyopencl():
        assert pscan.GenericScanKernel is cltune.GenericScanKernel
        out, count, _ = alg.copy_if(x, "ary[i] > 0")
        assert np.array_equal(out[:int(count.get())].get(), h[h > 0])
        out, count, _ = alg.remove_if(x, "ary[i] > 0")
        assert np.array_equal(out[:int(count.get())].get(), h[h <= 0])
        t, f, count, _ = alg.partition(x, "ary[i] > 0")
        c = int(count.get())
        assert np.array_equal(t[:c].get(), h[h > 0]) and np.array_equal(f[:N - c].get(),
                                                                         h[h <= 0])
        u = np.sort(h)
        out, count, _ = alg.unique(cla.to_device(queue, u))
        assert np.array_equal(out[:int(count.get())].get(), np.unique(u))
        keys = np.random.default_rng(4).integers(0, 2**31 - 1, 20011).astype(np.int32)
        rs = alg.RadixSort(ctx, "int *ary", key_expr="ary[i]", sort_arg_names=["ary"])
        (srt,), _ = rs(cla.to_device(queue, keys), key_bits=31)
        assert np.array_equal(srt.get(), np.sort(keys))
        builder = alg.ListOfListsBuilder(ctx, [("mylist", np.int32)], """
            void generate(LIST_ARG_DECL USER_ARG_DECL index_type i)
            {
                for (int j = 0; j < i % 5; ++j) APPEND_mylist(i*10 + j);
            }""", arg_decls=[])
        res, _ = builder(queue, 2003)
        starts, items = res["mylist"].starts.get(), res["mylist"].lists.get()
        assert all(list(items[starts[i]:starts[i + 1]]) == [i * 10 + j for j in range(i % 5)]
                   for i in range(2003))
    assert pscan.GenericScanKernel is not cltune.GenericScanKernel  # restored
    out, count, _ = alg.copy_if(x, "ary[i] > 0")  # pyopencl's own again
    assert int(count.get()) == int((h > 0).sum())


def test_statements_as_pyopencl_takes_them(ctx, queue, h):
    """The output statement keeps its lines: // comments, preprocessor lines, several
    statements; an expression may carry pyopencl's //CL// marker; the user's arguments may
    have any name the kernel itself does not (v, f, prev, carry, N, chunk, ...)."""
    x = cla.to_device(queue, h)
    y = cla.empty_like(x)
    knl = cltune.GenericScanKernel(
        ctx, np.int32, "__global int *v, __global int *carry, int f", "//CL//\nv[i]", "a+b",
        "0", """// the running sum, then a constant
        carry[i] = item; // inclusive
        #ifdef NOT_DEFINED_ANYWHERE
        carry[i] = -1;
        #endif
        if (i == 0) carry[i] += f - f;""")
    knl(x, y, np.int32(7))
    assert np.array_equal(y.get(), np.cumsum(h))
    keys = np.random.default_rng(5).integers(0, 2**31 - 1, 20011).astype(np.int32)
    vals = np.arange(keys.size, dtype=np.int32)
    theirs = alg.RadixSort  # pyopencl's class, as an application imported it before
    with cltune.use_in_pyopencl():  # its default scan_kernel is swapped too (and the name
        assert alg.RadixSort is cltune.RadixSort  # is cltune's sort: test_scan_radix_sort)
        rs = theirs(ctx, "int *ary, int *v", key_expr="ary[i]", sort_arg_names=["ary", "v"])
        assert isinstance(rs.scan_kernel, cltune.GenericScanKernel)
        (srt, perm), _ = rs(cla.to_device(queue, keys), cla.to_device(queue, vals),
                            key_bits=31)
    assert np.array_equal(srt.get(), np.sort(keys))
    assert np.array_equal(perm.get(), np.argsort(keys, kind="stable"))
    assert not isinstance(alg.RadixSort(ctx, "int *ary", key_expr="ary[i]",
                                        sort_arg_names=["ary"]).scan_kernel,
                          cltune.GenericScanKernel)  # restored


def test_errors(ctx):
    with pytest.raises(ValueError, match="neutral"):
        cltune.GenericScanKernel(ctx, np.int32, "__global int *x", "x[i]", "a+b", None,
                                 "x[i] = item")
    with pytest.raises(TypeError, match="divisible by 4"):
        cltune.GenericScanKernel(ctx, np.int16, "__global short *x", "x[i]", "a+b", "0",
                                 "x[i] = item")
    with pytest.raises(ValueError, match="comments"):
        cltune.GenericScanKernel(ctx, np.int32, "__global int *x", "x[i] // id", "a+b", "0",
                                 "x[i] = item")
    with pytest.raises(ValueError, match="OFFSET"):
        cltune.GenericScanKernel(ctx, np.int32, "__global int *x", "x[i]", "a+b", "0",
                                 "x[i] = item", input_fetch_exprs=[("p", "x", 2)])


def test_repeated_calls_of_one_key_take_new_arrays_offsets_and_queues(ctx, queue):
    """The warm call (a key seen before on the queue's kept scratch: its geometry, scratch and
    offset-keyed scalars kept) against numpy on every call: new input and output arrays, input
    and output views at other offsets, an input freed and another allocated in its place, the
    size changing and coming back, a second queue of the context, out-of-place and in place."""
    import pyopencl as cl

    k = cltune.GenericScanKernel(ctx, np.int32, "__global const int *x, __global int *y",
                                 "x[i]", "a+b", "0", "y[i] = item")
    rng = np.random.default_rng(7)
    q2 = cl.CommandQueue(ctx)
    m = 30011
    for step, (qq, xoff, yoff, n) in enumerate([
            (queue, 0, 0, m), (queue, 0, 0, m), (queue, 5, 0, m), (queue, 100, 3, m),
            (queue, 7, 7, m), (queue, 0, 0, 1001), (queue, 0, 0, m), (q2, 0, 0, m),
            (q2, 11, 2, m), (queue, 0, 0, m)]):
        h = rng.integers(-9, 9, n + xoff).astype(np.int32)
        xb = cla.to_device(qq, h)
        yb = cla.empty(qq, (n + yoff,), np.int32)
        x, y = xb[xoff:xoff + n], yb[yoff:yoff + n]
        k(x, y, queue=qq)
        assert np.array_equal(y.get(qq), np.cumsum(h[xoff:xoff + n])), step
        del xb, x  # freed: the next call's input may take its place
    z = cla.to_device(queue, np.ones(m, np.int32))
    for _ in range(2):  # in place, twice (triangular numbers: below 2^31)
        k(z, z)
    assert np.array_equal(z.get(), np.cumsum(np.arange(1, m + 1)))
