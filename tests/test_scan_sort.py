"""cltune.sort / argsort / sort_by_key (#42 item 4): numpy's stable order for every key dtype
(NaN, +-0, +-inf, extremes, ties) ascending and descending, odd sizes, offsets, rows along the
last axis (2-D and 3-D), values of every width moved by their bits, the device's kernel shape
and GPU-like ones (groups sorting each tile in __local memory, 8- and 5-bit digits), errors,
and the vetting of the program in the worker."""

from __future__ import annotations

import json

import numpy as np
import pyopencl.array as cla
import pytest
from support.faults import injected
from typer.testing import CliRunner

import cltune
import cltune.families.scan.sort as sort_mod
from cltune.cli.app import app
from cltune.isolation.vetting import NoConfigRuns

DTYPES = ["float32", "float64", "float16", "int8", "uint8", "int16", "uint16", "int32",
          "uint32", "int64", "uint64", "bool"]
#: (work-group size, items, bits, chunks per compute unit): the device's, then GPU-like ones
#: (groups sort each tile in __local memory: 8-bit digits in two rounds of 4 bits, whole
#: arrays by onesweep; 5-bit digits in rounds of 4 and 1 bits, a group of 24 (not a power of
#: two) x 3 items, whole arrays by the chunks' passes too)
SHAPES = {"device": None, "gpu-64x4-b8": (64, 4, 8, 3), "gpu-24x3-b5-chunks": (24, 3, 5, 2),
          "cpu-1x37-b8": (1, 37, 8, 2)}


@pytest.fixture(params=list(SHAPES))
def shape(request, monkeypatch):
    s = SHAPES[request.param]
    if s:  # the radix passes in that shape, short rows too (not the one-launch sorts), whatever
        # a database of this machine's holds for the family `sort`
        monkeypatch.setattr(sort_mod, "device_shape", lambda dev, kb, ib: s)
        monkeypatch.setattr(sort_mod, "shape_for", lambda q, dt, n, idx64, db=None: s)
        for kind in ("cpu", "gpu"):
            monkeypatch.setitem(sort_mod.LOCAL_ON, kind, False)
            monkeypatch.setitem(sort_mod.VEC_ON, kind, False)
        if request.param.endswith("-chunks"):
            monkeypatch.setattr(sort_mod, "ONESWEEP_MAX", 0)
        else:  # whole arrays in groups by onesweep on any device (CPUs too)
            monkeypatch.setitem(sort_mod.ONESWEEP_ON, "cpu", (0, 0))
    return request.param


def data(dt: str, n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    d = np.dtype(dt)
    if d == np.bool_:
        return rng.random(n) < 0.5
    if d.kind == "f":
        h = (rng.standard_normal(n) * 50).astype(d)
        h[::53] = np.nan
        h[1::59] = -0.0
        h[2::61] = 0.0
        h[3::67] = np.inf
        h[4::71] = -np.inf
        h[6::13] = h[min(7, n - 1)]  # ties
        h[8::89] = np.finfo(d).smallest_subnormal  # denormals: above +-0 on every device
        h[9::97] = -np.finfo(d).smallest_subnormal * 3
        return h
    i = np.iinfo(d)
    h = rng.integers(i.min, i.max, n, dtype=d, endpoint=True)
    h[::17] = i.min
    h[1::19] = i.max
    h[2::5] = h[min(3, n - 1)]
    return h


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and a.tobytes() == b.tobytes()


@pytest.mark.parametrize("dt", DTYPES)
def test_every_dtype_in_numpys_stable_order(queue, shape, dt):
    h = data(dt, 5003, seed=len(dt))
    x = cla.to_device(queue, h)
    for desc in (False, True):
        want = sort_mod.reference_order(h, desc)
        got = cltune.argsort(x, descending=desc).get()
        assert np.array_equal(got, want), (dt, desc)
        assert same_bits(cltune.sort(x, descending=desc).get(), h[want])  # -0.0, NaN kept
    if h.dtype.kind == "f":  # no -0 or NaN: the values come back from their keys
        p = h.copy()
        p[np.isnan(p) | (p == 0)] = 2
        for desc in (False, True):
            got = cltune.sort(cla.to_device(queue, p), descending=desc).get()
            assert same_bits(got, p[sort_mod.reference_order(p, desc)]), (dt, desc)
    if dt != "float16":  # numpy's own stable argsort agrees (ascending)
        assert np.array_equal(cltune.argsort(x).get(), np.argsort(h, kind="stable"))


@pytest.mark.parametrize("rows,cols", [(1, 1001), (2, 1), (3, 7), (9, 333), (17, 64),
                                       (300, 5)])
def test_rows_along_the_last_axis(queue, shape, rows, cols):
    h = data("float32", rows * cols, seed=rows).reshape(rows, cols)
    x = cla.to_device(queue, h)
    want = np.stack([sort_mod.reference_order(r, False) for r in h])
    assert np.array_equal(cltune.argsort(x).get(), want)
    assert np.array_equal(cltune.argsort(x, axis=1).get(), want)
    assert same_bits(cltune.sort(x).get(), np.take_along_axis(h, want, axis=1))
    wd = np.stack([sort_mod.reference_order(r, True) for r in h])
    assert np.array_equal(cltune.argsort(x, descending=True).get(), wd)


@pytest.mark.parametrize("dt", ["float32", "int64", "float16", "bool"])
def test_every_axis_as_numpy_sorts_it(queue, dt):
    """An axis other than the last (a transposed copy sorted as rows, put back): 2-D and 3-D,
    C order, both directions, NaN and ties, values by their bits and numpy's positions; rows
    short (one launch) and long (the passes)."""
    for shape in ((37, 5), (4, 301, 3), (3, 5, 7), (5000, 2)):
        h = data(dt, int(np.prod(shape)), seed=len(shape)).reshape(shape)
        x = cla.to_device(queue, h)
        for ax in range(-len(shape), len(shape)):
            want = np.argsort(h, axis=ax, kind="stable") if dt != "float16" else None
            got = cltune.argsort(x, axis=ax).get()
            if want is not None:
                assert np.array_equal(got, want), (shape, ax)
            assert same_bits(cltune.sort(x, axis=ax).get(), np.take_along_axis(h, got, ax))
            wd = np.apply_along_axis(lambda r: sort_mod.reference_order(r, True), ax, h)
            assert np.array_equal(cltune.argsort(x, axis=ax, descending=True).get(), wd), \
                (shape, ax)


@pytest.mark.parametrize("n", [1, 1000, 5003])
def test_values_and_indices_from_one_sort(queue, shape, n):
    """`sort(x, return_indices=True)`: (values, indices) as torch.sort returns them — 1-D,
    rows, another axis, both directions — from the one sort (one launch or the passes)."""
    h = data("float32", n * 6, seed=n).reshape(6, n)
    x = cla.to_device(queue, h)
    for ax, desc in ((None, False), (-1, True), (0, False)):
        v, i = cltune.sort(x, axis=ax, descending=desc, return_indices=True)
        want = cltune.argsort(x, axis=ax, descending=desc).get()
        assert i.dtype == np.int64 and np.array_equal(i.get(), want), (ax, desc)
        flat = h.reshape(-1) if ax is None else h
        got_v = np.take_along_axis(flat, want, axis=-1 if ax is None else ax)
        assert same_bits(v.get(), got_v), (ax, desc)


def test_onesweep_look_back_windows_and_packed_counters(queue, monkeypatch):
    """The tile sort's build options (#42): onesweep's look-back reading `window` words of a
    digit at once (sort.ONESWEEP_WINDOW: 3) and the [sub-digit][work-item] counts two to a word
    (sort.TILE_PACK2), in groups of 64 x 4 (8-bit digits: rounds of 4 bits), 24 x 3 (5 bits:
    rounds of 4 and 1) and 32 x 15 (15 items: the most a 4-bit round packs in registers), by
    onesweep and by the chunks' passes: numpy's stable order, NaN and -0 kept, both ways."""
    for kind in ("cpu", "gpu"):
        monkeypatch.setitem(sort_mod.ONESWEEP_WINDOW, kind, 3)
        monkeypatch.setitem(sort_mod.TILE_PACK2, kind, True)
    monkeypatch.setattr(sort_mod, "_programs", sort_mod.ContextCache())
    for shape in ((64, 4, 8, 3), (24, 3, 5, 2), (32, 15, 8, 2)):
        for dt, n in (("float32", 100003), ("int64", 5003), ("float32", 1)):
            h = data(dt, n, seed=n)
            x = cla.to_device(queue, h)
            for desc in (False, True):
                want = sort_mod.reference_order(h, desc)
                for onesweep in (True, False):
                    vals, pos = sort_mod._sorted(queue, x, 1, n, desc, True, True, shape=shape,
                                                 vet=False, onesweep=onesweep)
                    assert np.array_equal(pos.get(), want), (shape, dt, n, desc, onesweep)
                    assert same_bits(vals.get(), h[want]), (shape, dt, n, desc, onesweep)


def test_3d_offsets_numpy_input_and_axis_none(ctx, queue):
    h = data("int32", 4 * 5 * 101, seed=3).reshape(4, 5, 101)
    x = cla.to_device(queue, h)
    assert np.array_equal(cltune.sort(x).get(), np.sort(h, axis=-1, kind="stable"))
    assert np.array_equal(cltune.argsort(x, axis=2).get(), np.argsort(h, axis=2, kind="stable"))
    assert np.array_equal(cltune.sort(x, axis=None).get(), np.sort(h, axis=None))
    assert np.array_equal(cltune.argsort(x, axis=None).get(),
                          np.argsort(h, axis=None, kind="stable"))
    flat = cla.to_device(queue, h.reshape(-1))
    assert np.array_equal(cltune.sort(flat[7:]).get(), np.sort(h.reshape(-1)[7:]))
    assert np.array_equal(cltune.argsort(flat[7:]).get(),
                          np.argsort(h.reshape(-1)[7:], kind="stable"))
    assert np.array_equal(cltune.sort(h, queue=queue).get(), np.sort(h, axis=-1))
    # tiny and empty inputs
    for n in (0, 1, 2):
        v = cla.to_device(queue, np.arange(n, 0, -1, dtype=np.float64))
        assert np.array_equal(cltune.sort(v).get(), np.arange(1, n + 1, dtype=np.float64))
        assert np.array_equal(cltune.argsort(v).get(), np.arange(n)[::-1])
    z = cla.to_device(queue, np.float32(3.0).reshape(()))
    assert cltune.sort(z, axis=None).get().tolist() == [3.0]


@pytest.mark.parametrize("vdt", ["int8", "float16", "float32", "int64", "complex128"])
def test_sort_by_key_moves_values_of_every_width(queue, shape, vdt):
    for n in (1000, 4099):  # one launch (the device's kind: in __local memory or lanes), passes
        keys = data("float32", n, seed=9)
        vals = np.arange(n).astype(vdt)
        k, v = cltune.sort_by_key(cla.to_device(queue, keys), cla.to_device(queue, vals))
        want = sort_mod.reference_order(keys, False)
        assert same_bits(k.get(), keys[want]) and same_bits(v.get(), vals[want]), n
        k, v = cltune.sort_by_key(cla.to_device(queue, keys), vals, descending=True,
                                  queue=queue)
        want = sort_mod.reference_order(keys, True)
        assert same_bits(v.get(), vals[want]), n


def test_errors(queue):
    x = cla.to_device(queue, np.arange(12, dtype=np.float32).reshape(3, 4))
    cases = [
        (lambda: cltune.sort(x, axis=2), ValueError, "out of range"),
        (lambda: cltune.sort(x, axis=1.0), TypeError, "axis must be"),
        (lambda: cltune.sort(x[:, ::2]), ValueError, "C-contiguous"),
        (lambda: cltune.sort(cla.to_device(queue, np.ones(3, np.complex64))), TypeError,
         "complex"),
        (lambda: cltune.sort([1, 2]), TypeError, "pyopencl.array.Array or numpy"),
        (lambda: cltune.sort(np.ones(3)), TypeError, "queue="),
        (lambda: cltune.sort(cla.to_device(queue, np.float32(1).reshape(()))), ValueError,
         "0-d"),
        (lambda: cltune.sort_by_key(x, x), ValueError, "1-D"),
        (lambda: cltune.sort_by_key(x.reshape(12), x.reshape(12)[:5]), ValueError,
         "one length"),
        (lambda: cltune.sort_by_key(x.reshape(12), np.zeros(12, "V3")), TypeError, "bytes"),
        (lambda: cltune.sort(cla.Array(queue, (5,), np.float32, data=x.base_data, offset=2)),
         ValueError, "byte offset|whole element"),
    ]
    for call, err, msg in cases:
        with pytest.raises(err, match=msg):
            call()


@pytest.mark.multiprocess
def test_a_sort_that_crashes_the_driver_is_never_built_here(queue, monkeypatch, tmp_path):
    x = cla.to_device(queue, np.arange(100, 0, -1, dtype=np.int16))
    with injected(monkeypatch, tmp_path, "abort:check=sort") as cache:
        with pytest.raises(NoConfigRuns, match="(?s)sort of int16.*CLTUNE_TRUST_DRIVER=1"):
            cltune.sort(x)
        assert "check:sort:" in (cache / "vetted.json").read_text()
        monkeypatch.setenv("CLTUNE_TRUST_DRIVER", "1")
        assert np.array_equal(cltune.sort(x).get(), np.arange(1, 101, dtype=np.int16))


def test_the_vetting_check_passes_here(ctx, queue):
    """check_sort itself (1-D both ways, the values from their keys and by index, rows sorted
    whole then by their bits and a group a row), for the device's shape and a GPU-like one,
    with 32- and 64-bit indices and offsets, on this driver."""
    dev = queue.device
    info = cltune.families.scan.sort.info_for(dev)
    for dt in ("float32", "int64", "float16"):
        kb = 8 if np.dtype(dt).itemsize == 8 else 4
        for shape in (sort_mod.device_shape(dev, kb, 4), (32, 3, 4, 2)):
            for idx64 in (False, True):
                assert sort_mod.check_sort(ctx, queue, dev, info, np.dtype(dt).str, idx64,
                                           shape) == "", (dt, shape, idx64)


def test_rows_sorted_whole_or_a_group_a_row_agree(queue):
    """Both ways of sorting rows, forced, on the same rows (the default picks by the rows'
    count and length)."""
    h = data("float64", 40 * 777, seed=4).reshape(40, 777)
    x = cla.to_device(queue, h)
    want = np.stack([sort_mod.reference_order(r, True) for r in h])
    for own in (False, True):
        s = sort_mod._order(queue, x, 40, 777, True, own_rows=own)
        _, pos, _ = sort_mod._gather(queue, s.prg, s.idx, x.size, 777, None, True, s.waits)
        assert np.array_equal(pos.get().reshape(40, 777), want), own
        vals = sort_mod._values(queue, sort_mod._order(queue, x, 40, 777, True, own_rows=own,
                                                       want_idx=False), x)
        assert same_bits(vals.get(), np.take_along_axis(h, want, 1)), own


#: the one-launch sorts of rows: in __local memory with the device's plan (taken on CPUs
#: too), few rows a group (groups of at most 64 entries), one work-item a group, an odd
#: work-group size; 8 rows a work-item in vector lanes (taken on GPUs too); a group a row by
#: the in-group radix sort (32-bit keys and narrower, any length up to its most)
LOCAL = {"device": None, "small-groups": ("group", 64), "one-item": ("wg", 1),
         "odd-wg": ("wg", 7), "vector-lanes": ("vec", 0), "group-radix": ("radix", 0)}


@pytest.fixture(params=list(LOCAL))
def local(request, monkeypatch):
    how = LOCAL[request.param]
    vec = bool(how and how[0] == "vec")
    radix = bool(how and how[0] == "radix")
    for kind in ("cpu", "gpu"):
        monkeypatch.setitem(sort_mod.LOCAL_ON, kind, not vec)
        monkeypatch.setitem(sort_mod.VEC_ON, kind, vec)
        if how is not None:  # the device's own choice stays with "device"
            monkeypatch.setitem(sort_mod.RADIX_ROWS_ON, kind, radix)
    if radix:
        rplan = sort_mod.radix_rows_shape
        monkeypatch.setattr(sort_mod, "radix_rows_shape",
                            lambda *a, **k: rplan(*a, **{**k, "force": True}))
    if vec:  # every row count, 1..7 rows of any length too
        plan = sort_mod.vec_plan
        monkeypatch.setattr(sort_mod, "vec_plan", lambda *a, **k: plan(*a, force=True))
    if how and how[0] == "group":
        monkeypatch.setitem(sort_mod.GROUP_ELEMENTS, "cpu", how[1])
        monkeypatch.setitem(sort_mod.GROUP_ELEMENTS, "gpu", how[1])
    if how and how[0] == "wg":
        plan = sort_mod.local_plan
        monkeypatch.setattr(sort_mod, "local_plan", lambda *a, **k: (
            None if (p := plan(*a, **k)) is None else (p[0], p[1], how[1])))
    return request.param


@pytest.mark.parametrize("dt", DTYPES)
def test_rows_in_local_memory_in_numpys_stable_order(queue, local, dt):
    """The one-launch sorts of rows (padded to a power of two; a bitonic network of (key,
    index) pairs in __local memory, several rows a group, or 8 rows a work-item in vector
    lanes) for every key dtype: NaN, +-0 (the values' own bits), ties across a row, odd
    lengths, row counts not a multiple of 8, both directions, sort and argsort."""
    for rows, cols in ((1, 2), (1, 1000), (3, 7), (9, 257), (301, 13), (2, 4096), (17, 64)):
        h = data(dt, rows * cols, seed=rows + cols).reshape(rows, cols)
        x = cla.to_device(queue, h)
        for desc in (False, True):
            want = np.stack([sort_mod.reference_order(r, desc) for r in h])
            assert np.array_equal(cltune.argsort(x, descending=desc).get(), want), \
                (dt, rows, cols, desc)
            assert same_bits(cltune.sort(x, descending=desc).get(),
                             np.take_along_axis(h, want, axis=1)), (dt, rows, cols, desc)
        if rows == 1:  # axis=None: the same row, flattened
            assert np.array_equal(cltune.argsort(x, axis=None).get(),
                                  sort_mod.reference_order(h.reshape(-1), False))


def test_rows_in_local_memory_at_offsets_and_in_3d(queue, local):
    h = data("int32", 4 * 5 * 101, seed=3).reshape(4, 5, 101)
    x = cla.to_device(queue, h)
    assert np.array_equal(cltune.sort(x).get(), np.sort(h, axis=-1, kind="stable"))
    assert np.array_equal(cltune.argsort(x, axis=2).get(), np.argsort(h, axis=2, kind="stable"))
    flat = cla.to_device(queue, h.reshape(-1))
    assert np.array_equal(cltune.sort(flat[7:1007]).get(), np.sort(h.reshape(-1)[7:1007]))
    assert np.array_equal(cltune.argsort(flat[7:1007], descending=True).get(),
                          sort_mod.reference_order(h.reshape(-1)[7:1007], True))


def test_which_sorts_go_through_local_memory(monkeypatch):
    """The plans: GPUs take rows up to LOCAL_MAX that fit __local memory (64-bit keys need
    more room), several short rows a group while groups stay enough to fill the device, 8
    entries a work-item; CPUs 8 rows a work-item in vector lanes (a group's serial run of the
    __local network only when forced), not for a few rows longer than 1024."""
    monkeypatch.setattr(sort_mod, "_facts", lambda dev: (False, 48 * 1024, 132, 1024))
    plan = sort_mod.local_plan
    assert plan(None, 4, 65536, 256) == (8, 8, 256)
    assert plan(None, 4, 4096, 4096) == (12, 1, 512)
    assert plan(None, 4, 100, 256) == (8, 1, 32)  # 100 rows: a row a group
    assert plan(None, 4, 1, 1000) == (10, 1, 128)
    assert plan(None, 8, 10, 2048) == (11, 1, 256)
    assert plan(None, 8, 10, 4096) is None  # 48 KiB of (key, index) words
    assert plan(None, 4, 10, 4097) is None and plan(None, 4, 10, 1) is None
    monkeypatch.setattr(sort_mod, "_facts", lambda dev: (True, 1 << 20, 2, 4096))
    assert plan(None, 4, 65536, 256) is None
    assert plan(None, 4, 65536, 256, force=True) == (8, 16, 256)
    # CPUs: 8 rows a work-item in vector lanes, 64 (96 for 64-bit keys) bytes an entry
    vec = sort_mod.vec_plan
    assert vec(None, 4, 65536, 256) == (8, 1) and vec(None, 8, 9, 4096) == (12, 1)
    assert vec(None, 4, 1, 1000) == (10, 1)
    assert vec(None, 4, 3, 4096) is None  # a few long rows: the passes
    assert vec(None, 4, 3, 4096, force=True) == (12, 1)
    monkeypatch.setattr(sort_mod, "_facts", lambda dev: (True, 256 * 1024, 2, 8192))
    assert vec(None, 4, 64, 4096) is None and vec(None, 4, 64, 2048) == (11, 1)
    monkeypatch.setattr(sort_mod, "_facts", lambda dev: (False, 48 * 1024, 132, 1024))
    assert vec(None, 4, 65536, 256) is None
    # GPUs: rows of 512-4096 with 32-bit keys or narrower by the in-group radix sort, a tile
    # of the row's length at least (about 16 items a work-item, groups of up to 128), counts
    # packed in registers (3-bit rounds past 15 items)
    rr = sort_mod.radix_rows_shape
    assert rr(None, 4, 4096) == (128, 32, 3, 1) and rr(None, 4, 2048) == (128, 16, 3, 1)
    assert rr(None, 4, 1024) == (64, 16, 3, 1) and rr(None, 4, 3000) == (128, 24, 3, 1)
    assert rr(None, 4, 512) == (32, 16, 3, 1) and rr(None, 4, 600) == (64, 10, 4, 1)
    assert rr(None, 4, 500) is None and rr(None, 4, 4097) is None and rr(None, 8, 2048) is None
    assert rr(None, 4, 100, force=True) == (8, 13, 4, 1)
    monkeypatch.setattr(sort_mod, "_facts", lambda dev: (True, 1 << 20, 2, 4096))
    assert rr(None, 4, 2048) is None and rr(None, 4, 2048, force=True) == (128, 16, 3, 1)


def test_bench_op_sort(info):
    """`cltune bench --op sort`: whole arrays and rows, every answer checked against numpy's,
    cltune's rows and the baselines timed; bad options are one line."""
    runner = CliRunner()
    r = runner.invoke(app, ["bench", "--device", str(info.index), "--op", "sort", "--sizes",
                            "5003", "--shapes", "7x301", "--dtype", "int16", "--repeats", "2",
                            "--json"])
    assert r.exit_code == 0, r.output
    cases = json.loads(r.output)["cases"]
    assert [c["label"] for c in cases] == ["5003", "7x301"], cases
    for c in cases:
        assert not c["wrong"] and {"cltune", "numpy", "numpy-stable", "copy"} <= set(c["rows"])
    for bad, msg in ((["--axis", "0"], "not --axis 0"), (["--dtype", "complex64"], "real")):
        r = runner.invoke(app, ["bench", "--device", str(info.index), "--op", "sort", *bad])
        assert r.exit_code != 0 and msg in r.output, (bad, r.output)
