"""cltune.RadixSort (#42 item 4): pyopencl.algorithm.RadixSort's constructor and call on
cltune's stable sort — the same sorted arrays as pyopencl's own RadixSort for keys of the
sorted elements (key dtypes, key_bits and bits_at_a_time rounding, several arrays of any
dtype, views at offsets, scalars in the key, tiny and one-launch and radix-pass sizes), its
allocator, queue and wait_for, errors, the vetting of the key expression in the worker, and
the switch that puts it into pyopencl.algorithm."""

from __future__ import annotations

import json

import numpy as np
import pyopencl as cl
import pyopencl.algorithm as palg
import pyopencl.array as cla
import pytest
from support.faults import injected

import cltune
from cltune.core.serving import CltuneWarning
from cltune.isolation.vetting import NoConfigRuns

PYOPENCL_RADIX = palg.RadixSort  # pyopencl's own, whatever a switch does later


_MADE: dict = {}


def both(ctx, queue, args, *call, **kw):
    """(cltune's sorted arrays, pyopencl's) for one constructor and call (each constructor
    made once a context: pyopencl's builds a scan per digit width)."""
    call_kw = {k: kw.pop(k) for k in ("key_bits",) if k in kw}
    key = (ctx.int_ptr, repr(args), repr(sorted(kw.items())))
    if key not in _MADE:
        _MADE[key] = (cltune.RadixSort(ctx, *args, **kw), PYOPENCL_RADIX(ctx, *args, **kw))
    ours_rs, theirs_rs = _MADE[key]
    ours, ev = ours_rs(*call, **call_kw)
    ev.wait()
    theirs, ev2 = theirs_rs(*call, **call_kw)
    ev2.wait()
    return [o.get() for o in ours], [t.get() for t in theirs]


@pytest.mark.parametrize("n", [2, 5, 1000, 4096, 4097, 100003])
def test_pyopencls_answers_for_keys_of_the_sorted_elements(ctx, queue, n):
    rng = np.random.default_rng(n)
    keys = cla.to_device(queue, rng.integers(0, 2**31, n).astype(np.int32))
    keys.get()[:]  # noqa: B018 - uploaded
    vals = cla.to_device(queue, rng.standard_normal(n))
    tags = cla.to_device(queue, rng.integers(-100, 100, n).astype(np.int8))
    args = ("int *ary, double *vals, char *tags", "ary[i]", ["ary", "vals", "tags"])
    for key_bits in (None, 1, 5, 16, 31):
        ours, theirs = both(ctx, queue, args, keys, vals, tags, key_bits=key_bits)
        assert all(np.array_equal(a, b) for a, b in zip(ours, theirs, strict=True)), key_bits
    # ties (a key of few values) keep their input order: stable, as pyopencl's LSD passes
    few = cla.to_device(queue, rng.integers(0, 7, n).astype(np.uint32))
    ours, theirs = both(ctx, queue, ("uint *k, int *pos", "k[i]", ["k", "pos"]), few,
                        cla.to_device(queue, np.arange(n, dtype=np.int32)))
    assert np.array_equal(ours[1], theirs[1])
    assert np.array_equal(ours[1], np.argsort(few.get(), kind="stable"))


def test_key_types_scalars_and_digit_rounding(ctx, queue):
    """64-bit and signed key types (sorted by their bits, as pyopencl's digits), a scalar in
    the key expression, key_bits rounded up to whole digits of bits_at_a_time (1, 3, 4)."""
    rng = np.random.default_rng(3)
    n = 3001
    a = cla.to_device(queue, rng.integers(-2**40, 2**40, n))
    ix = cla.to_device(queue, np.arange(n, dtype=np.int32))
    for kdt, kexpr, key_bits, bits in ((np.uint64, "a[i] >> shift", 30, 4),
                                       (np.int32, "a[i] % 1000", 7, 3),
                                       (np.uint32, "a[i] * 3", 5, 1)):
        ours, theirs = both(ctx, queue, ("long *a, int *ix, int shift", kexpr, ["a", "ix"]),
                            a, ix, np.int32(5), key_bits=key_bits, key_dtype=kdt,
                            bits_at_a_time=bits)
        assert np.array_equal(ours[0], theirs[0]) and np.array_equal(ours[1], theirs[1]), \
            (kdt, kexpr)


def test_sorted_arrays_come_back_in_the_order_of_sort_arg_names(ctx, queue):
    """As pyopencl documents it (its own call mixes the arrays up where sort_arg_names and
    the arguments are in different orders)."""
    h = np.random.default_rng(2).integers(0, 1000, 777).astype(np.uint32)
    k, v = cla.to_device(queue, h), cla.to_device(queue, h.astype(np.float64) / 2)
    rs = cltune.RadixSort(ctx, "uint *k, double *v", "k[i]", ["v", "k"])
    (vs, ks), _ = rs(k, v)
    order = np.argsort(h, kind="stable")
    assert ks.dtype == np.uint32 and np.array_equal(ks.get(), h[order])
    assert vs.dtype == np.float64 and np.array_equal(vs.get(), h[order] / 2)


def test_views_allocator_queue_wait_for_and_tiny_inputs(ctx, queue):
    rng = np.random.default_rng(1)
    base = cla.to_device(queue, rng.integers(0, 1000, 5000).astype(np.uint32))
    view = base[7:2007]
    rs = cltune.RadixSort(ctx, "uint *k", "k[i]", ["k"])
    (out,), ev = rs(view)
    assert np.array_equal(out.get(), np.sort(base.get()[7:2007]))
    # a gate the sort waits for: the keys written on another queue once a user event is set
    q2 = cl.CommandQueue(ctx)
    gate = cl.UserEvent(ctx)
    h = rng.integers(0, 1 << 20, 3000).astype(np.uint32)
    x = cla.empty(queue, 3000, np.uint32)
    write = cl.enqueue_copy(q2, x.data, h, wait_for=[gate], is_blocking=False)
    (out,), ev = rs(x, queue=queue, wait_for=[write])
    gate.set_status(cl.command_execution_status.COMPLETE)
    ev.wait()
    assert np.array_equal(out.get(), np.sort(h))
    # an allocator of the caller's (not with the gate: on an H100, a pyopencl MemoryPool of
    # an ImmediateAllocator allocating while its queue waited on an unset user event crashed
    # NVIDIA's driver, in pyopencl's allocation; cltune's own pool did not)
    from pyopencl.tools import ImmediateAllocator, MemoryPool

    pool = MemoryPool(ImmediateAllocator(queue))
    (out,), ev = rs(cla.to_device(queue, h), allocator=pool.allocate)
    assert np.array_equal(out.get(), np.sort(h)) and pool.active_blocks >= 1
    for n in (0, 1):
        (out,), ev = rs(cla.to_device(queue, np.arange(n, dtype=np.uint32)))
        ev.wait()
        assert out.get().tolist() == list(range(n))
    (out,), _ = rs(base[:10], key_bits=0)  # no bits: the input's order, as pyopencl's
    assert np.array_equal(out.get(), base.get()[:10])


def test_errors_are_one_clear_line(ctx, queue):
    x = cla.to_device(queue, np.arange(10, dtype=np.uint32))
    for make, exc, msg in (
            (lambda: cltune.RadixSort(ctx, "uint *k", "k[i]", ["v"]), ValueError,
             "not one of the arguments"),
            (lambda: cltune.RadixSort(ctx, "uint *k, int s", "k[i]", ["s"]), ValueError,
             "scalar"),
            (lambda: cltune.RadixSort(ctx, "int s", "s", []), ValueError, "array argument"),
            (lambda: cltune.RadixSort(ctx, "uint *k", "k[i]", ["k"], bits_at_a_time=0),
             ValueError, "bits_at_a_time"),
            (lambda: cltune.RadixSort(ctx, "uint *k", "k[i]", ["k"], key_dtype=np.float32),
             TypeError, "integer"),
            (lambda: cltune.RadixSort(ctx, "uint *k", "k[i] // no", ["k"]), ValueError,
             "comments")):
        with pytest.raises(exc, match=msg):
            make()
    rs = cltune.RadixSort(ctx, "uint *k", "k[i]", ["k"])
    for call, exc, msg in ((lambda: rs(x, x), TypeError, "expected 1 arguments"),
                           (lambda: rs(x, scan=1), TypeError, "invalid keyword"),
                           (lambda: rs(x.get()), TypeError, "pyopencl.array.Array"),
                           (lambda: rs(x[::2]), ValueError, "contiguous"),
                           (lambda: rs(x, key_bits=-1), ValueError, "key_bits"),
                           (lambda: cltune.RadixSort(ctx, "uint *k, uint *v", "v[i]", ["k"])(
                               x[:5], x), ValueError, "has 5 elements")):
        with pytest.raises(exc, match=msg):
            call()


@pytest.mark.multiprocess
def test_a_key_expression_that_crashes_the_driver_is_never_built_here(ctx, queue,
                                                                      monkeypatch, tmp_path):
    x = cla.to_device(queue, np.arange(1000, 0, -1, dtype=np.uint32))
    with injected(monkeypatch, tmp_path, "segv:check=radix_sort_keys") as cache:
        rs = cltune.RadixSort(ctx, "uint *k", "k[i] + 1", ["k"])
        with pytest.raises(NoConfigRuns, match="(?s)RadixSort's key expression.*TRUST_DRIVER"):
            rs(x)
        verdicts = json.loads((cache / "vetted.json").read_text())["verdicts"]
        assert any(":check:radix_sort_keys:" in k for k in verdicts)
        monkeypatch.setenv("CLTUNE_TRUST_DRIVER", "1")
        assert np.array_equal(rs(x)[0][0].get(), np.arange(1, 1001))
    with injected(monkeypatch, tmp_path / "w", "wrong:check=radix_sort_keys"):
        monkeypatch.delenv("CLTUNE_TRUST_DRIVER")
        rs = cltune.RadixSort(ctx, "uint *k", "k[i] + 2", ["k"])
        with pytest.warns(CltuneWarning, match="differed"):
            (out,), _ = rs(x)
        assert np.array_equal(out.get(), np.arange(1, 1001))


def test_the_check_passes_here(ctx, queue):
    from cltune.families.scan.radix_sort import check_keys

    x = cla.to_device(queue, np.arange(3000, dtype=np.uint32)[::-1].copy())
    ctor = {"arguments": "uint *k, int s", "key_expr": "k[i] ^ s", "sort_arg_names": ["k"]}
    assert check_keys(ctx, queue, queue.device, None, ctor, [], [x, np.int32(3)], 3000) == ""


def test_under_the_switch_pyopencl_algorithm_sorts_with_cltune(ctx, queue):
    x = cla.to_device(queue, np.random.default_rng(3).integers(0, 1 << 30, 20011)
                      .astype(np.uint32))
    with cltune.use_in_pyopencl():
        rs = palg.RadixSort(ctx, "uint *ary", key_expr="ary[i]", sort_arg_names=["ary"])
        assert isinstance(rs, cltune.RadixSort)
        (out,), _ = rs(x, key_bits=30)
    assert np.array_equal(out.get(), np.sort(x.get()))
    assert palg.RadixSort is PYOPENCL_RADIX
