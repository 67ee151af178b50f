"""Sorting on the device: `cltune.sort`, `cltune.argsort`, `cltune.sort_by_key` — a stable LSD
radix sort of (key, index) pairs (kernels/sort.cl), numpy's order and torch's semantics:

    >>> y = cltune.sort(x)                          # ascending, stable, NaN last
    >>> i = cltune.argsort(x, descending=True)      # int64; NaN first, ties in input order
    >>> k, v = cltune.sort_by_key(keys, values)     # values (any 1-16 byte dtype) by keys

Every value becomes an unsigned key whose order is numpy's (floats by a sign flip with every
NaN after +inf and -0 equal to +0; signed integers by a bias; float16 by its bits, so no
cl_khr_fp16 is needed); each pass sorts by CLT_SORT_BITS bits of it (a histogram a chunk, one
scan of the histograms, a stable scatter), the lowest first. Along the last axis, the rows'
own bits are sorted last, so every row comes out sorted in place. The values come back by
their indices, so the output holds the input's exact bits (-0.0, NaN payloads).

Rows of up to LOCAL_MAX elements (and whole arrays that short) are sorted in one launch
instead, (key, index) pairs through a bitonic network: on GPUs in each group's __local memory
(clt_sort_rows_local, several short rows a group; H100: 3-26x the passes, 1.7-4.0x
torch.sort(dim=1) for rows of 16-256, 0.6-0.8x for 1024-4096), on CPUs 8 rows a work-item in
the lanes of vectors (clt_sort_rows_vec; 4-27x the passes, ahead of numpy's quicksort from
rows of 1024 and of its stable sort everywhere: docs/logs/benchmarks-2026-11-30-to-2026-12-06.md).

The passes' shape is tuned per device and key dtype (`cltune tune --op sort`: the family in
sort_config/sort_family/sort_serve/sort_target); untuned, CPUs take 8-bit digits and one
work-item a chunk, GPUs 8-bit digits in groups of 256 x 8 that sort each tile in __local
memory (clt_sort_scatter's rounds) before writing it out. Onesweep (CUB's) takes whole GPU
arrays from the sizes ONESWEEP_ON names (2^23 keys, 2^22 with indices; below, the chunks'
passes are faster) up to 2^30 elements, one launch counting every pass's digits
(clt_sort_hist_all), then one launch a pass (clt_sort_onesweep) in which each tile finds where
its digits go by decoupled look-back over the tiles before it. Rows of 512-4096 (32-bit keys
and narrower) are sorted on GPUs a group a row by an in-group radix sort
(clt_sort_rows_radix: H100 4096x4096 403 us against the bitonic network's 944 and
torch.sort(dim=1)'s 577). The program is vetted in the
device's worker before this process builds it (house rule 17: `check_sort`, against numpy's
stable argsort).
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from cltune.core.buckets import bucket_of
from cltune.core.shapes import empty_result
from cltune.device.select import info_for
from cltune.families.scan import sort_serve
from cltune.isolation.vetting import NoConfigRuns, checked
from cltune.opencl.build import BuildError, compile_program
from cltune.opencl.caches import ContextCache
from cltune.opencl.events import in_order, waits_on
from cltune.opencl.pools import pool_for
from cltune.opencl.sources import kernel_file, text_hash

__all__ = ["argsort", "sort", "sort_by_key", "stable_positions", "take"]

#: CLT_SORT_TYPE of each key dtype (kernels/sort.cl; bool sorts as uint8)
TYPE_CODES = {np.dtype(t): i for i, t in enumerate(
    (np.float32, np.float64, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32,
     np.int64, np.uint64, np.float16))}
#: the value sizes clt_sort_gatherN moves
WORDS = (1, 2, 4, 8, 16)
_U32, _U64 = np.uint32, np.uint64
_I64 = np.dtype(np.int64)
_programs: ContextCache[Any] = ContextCache()
#: this module's own text, in the vetting key (how it launches the program is vetted too)
_HOST = text_hash(Path(__file__).read_text())


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def device_shape(dev: cl.Device, key_bytes: int, idx_bytes: int) -> tuple[int, int, int, int]:
    """(work-group size, items a work-item, bits a pass, chunks per compute unit) on dev:
    CPUs walk a chunk a work-item with 8-bit digits; GPUs take 8-bit digits too, each tile
    sorted in __local memory by clt_sort_scatter in groups of GPU_WG x GPU_ITEMS (fewer
    items, then a smaller group, where __local memory is short)."""
    known = _SHAPES.get((dev.int_ptr, key_bytes, idx_bytes))
    if known is not None:
        return known
    if dev.type & cl.device_type.CPU:
        shape = _SHAPES[(dev.int_ptr, key_bytes, idx_bytes)] = (1, 4096, 8, 2)
        return shape
    wg = min(GPU_WG, 1 << (dev.max_work_group_size.bit_length() - 1))
    items, bits = GPU_ITEMS, GPU_BITS
    while items > 1 and split_local(wg, items, bits, key_bytes, idx_bytes) + 256 > \
            dev.local_mem_size:
        items //= 2
    while wg > 1 and split_local(wg, items, bits, key_bytes, idx_bytes) + 256 > \
            dev.local_mem_size:
        wg //= 2
    shape = _SHAPES[(dev.int_ptr, key_bytes, idx_bytes)] = (wg, items, bits, GPU_PER_CU)
    return shape


def shape_for(q: cl.CommandQueue, dt: np.dtype, n: int, idx64: bool,
              db: str | None = None) -> tuple[int, int, int, int]:
    """The radix passes' shape for a sort of n keys of dt on q's device: (work-group size,
    items a work-item, bits a pass, chunks per compute unit) — the stored best of the tuned
    size class nearest to n (family `sort`: sort_serve, the database's chain), vetted in the
    device's worker before it is built here; else (nothing tuned near n, or the tuned shape
    does not build or run right here) the device's untuned shape, `device_shape`. The answer
    is kept per (context, device, dtype, size class, index width, database): a warm call asks
    no database (`cltune.clear_caches()` asks again). `db`: a tuning database's URL or path
    (None: CLTUNE_DB, else cltune's default)."""
    kb, ib = (8 if dt.itemsize == 8 else 4), (8 if idx64 else 4)
    bucket = bucket_of(n)

    def serve() -> sort_serve.Served:
        s = sort_serve.served(info_for(q.device), dt, bucket, kb, ib, split_local, db)
        if s.shape is not None:
            try:  # vetted (house rule 17) and built now: _order finds the build
                _program(q, dt, idx64, s.shape, True)
            except (NoConfigRuns, BuildError) as e:
                return sort_serve.passed_over(s, str(e))
        return s

    s = sort_serve.SERVED.get(q.context, (q.device.int_ptr, dt.str, bucket, idx64, db), serve)
    return s.shape if s.shape is not None else device_shape(q.device, kb, ib)


#: GPUs' untuned shape (clt_sort_scatter of groups): groups of 256 x 8 elements, 8-bit digits
#: (rounds of SUB_BITS in a tile), chunks for 2 groups a compute unit
GPU_WG, GPU_ITEMS, GPU_BITS, GPU_PER_CU = 256, 8, 8, 2
#: the bits of one counting round within a tile (CLT_SORT_SUB)
SUB_BITS = 4


def _padw(n: int) -> int:
    return n + n // 32


def split_local(wg: int, items: int, bits: int, key_bytes: int, idx_bytes: int) -> int:
    """The __local bytes clt_sort_scatter of groups (wg > 1) takes in that shape."""
    radix, sub = 1 << bits, 1 << min(bits, SUB_BITS)
    return (radix * (idx_bytes + 8) + _padw(sub * wg) * 4 + wg * 4 + 128 +
            _padw(wg * items) * (key_bytes + idx_bytes))


_SHAPES: dict[tuple[int, int, int], tuple[int, int, int, int]] = {}


def describe(dev: cl.Device, dtype: Any, shape: tuple[int, ...] | None = None) -> str:
    """How a sort of `dtype` keys (along the last axis of `shape`, where given) runs on dev
    (for benchmarks' tables)."""
    dt = np.dtype(np.uint8) if np.dtype(dtype) == np.bool_ else np.dtype(dtype)
    kb = 8 if dt.itemsize == 8 else 4
    if shape:
        rows, row_len = int(np.prod(shape[:-1], dtype=np.int64)), int(shape[-1])
        rshape = radix_rows_shape(dev, kb, row_len)
        if rshape is not None:
            return (f"kernels/sort.cl: one launch, a group of {rshape[0]} a row, an in-group "
                    f"radix sort of {rshape[2]}-bit rounds in __local memory")
        plan = local_plan(dev, kb, rows, row_len)
        if plan is not None:
            return (f"kernels/sort.cl: one launch, rows in __local memory (padded to "
                    f"{1 << plan[0]}, {plan[1]} a group of {plan[2]}), a bitonic network")
        if vec_plan(dev, kb, rows, row_len) is not None:
            return ("kernels/sort.cl: one launch, 8 rows a work-item in vector lanes, a bitonic "
                    "network")
    served = None
    if shape:  # which level serves the radix passes of that many keys (no vetting here)
        n = int(np.prod(shape, dtype=np.int64))
        served = sort_serve.served(info_for(dev), dt, bucket_of(n), kb, 4, split_local)
    if served is not None and served.shape is not None:
        wg, items, bits, per_cu = served.shape
        how = f"tuned for 2^{served.bucket}: {served.level}"
    else:
        wg, items, bits, per_cu = device_shape(dev, kb, 4)
        how = "untuned"
    n = int(np.prod(shape, dtype=np.int64)) if shape else 0
    rows = int(np.prod(shape[:-1], dtype=np.int64)) if shape else 1
    least = ONESWEEP_ON["cpu" if dev.type & cl.device_type.CPU else "gpu"]
    if wg > 1 and rows <= 1 and least is not None and least[0] <= n < ONESWEEP_MAX:
        return (f"kernels/sort.cl: LSD radix by onesweep, {bits}-bit digits "
                f"({-(-8 * dt.itemsize // bits)} passes after one histogram launch), tiles of "
                f"{wg} x {items} placed by decoupled look-back ({how})")
    return (f"kernels/sort.cl: LSD radix, {bits}-bit digits ({-(-8 * dt.itemsize // bits)} "
            f"passes), groups of {wg} x {items}, {per_cu} chunks a compute unit ({how})")


class _Program:
    """One build's kernels (their arguments are shared: calls take `lock`)."""

    def __init__(self, prg: cl.Program, key: type, idx: type, dev: cl.Device) -> None:
        self.hist = prg.clt_sort_hist
        self.values = prg.clt_sort_values
        self.scan, self.scatter = prg.clt_sort_scan, prg.clt_sort_scatter
        self.hist_all = self.onesweep = None
        onesweep = getattr(prg, "clt_sort_onesweep", None)  # the group form's (wg > 1)
        if onesweep is not None:  # (one retrieval: pyopencl warns at a second)
            self.hist_all, self.onesweep = prg.clt_sort_hist_all, onesweep
            self.hist_all.set_scalar_arg_dtypes([None, _U64, _U64, key, _U32, None, None, _U64,
                                                 None])
            self.onesweep.set_scalar_arg_dtypes([None, None, _U64, _U32, None, None, None, _U32,
                                                 None, None, _U32, _U32, None, _U64, key, _U32,
                                                 None, None, _U32])
        self.gather = {n: getattr(prg, f"clt_sort_gather{n}") for n in WORDS}
        self.lock = threading.Lock()
        self.values.set_scalar_arg_dtypes([None, None, None, None, _U64, _U64, key, None])
        self.hist.set_scalar_arg_dtypes([None, None, _U64, _U64, _U32, _U64, None, None, _U64,
                                         key, _U32, None])
        self.scan.set_scalar_arg_dtypes([None, _U32, None])
        self.scatter.set_scalar_arg_dtypes([None, None, _U64, _U64, _U32, _U64, None, None, None,
                                            _U32, None, _U32, _U32, None, None, _U64, key,
                                            _U32, None, None, _U64])
        for k in self.gather.values():
            k.set_scalar_arg_dtypes([None, _U64, None, _U64, _U64, None, None, _U32, _U32])
        self.rows_radix = getattr(prg, "clt_sort_rows_radix", None) if self.onesweep else None
        if self.rows_radix is not None:
            self.rows_radix.set_scalar_arg_dtypes([None, _U64, _U32, _U32, key, None, None,
                                                   _U32, _U32])
        self.rows_local = prg.clt_sort_rows_local
        self.rows_wg = self.rows_local.get_work_group_info(
            cl.kernel_work_group_info.WORK_GROUP_SIZE, dev)
        self.take = {n: getattr(prg, f"clt_sort_take{n}") for n in WORDS}
        for k in self.take.values():
            k.set_scalar_arg_dtypes([None, _U64, None, _U64, None])
        self.take_bytes = prg.clt_sort_take_bytes
        self.take_bytes.set_scalar_arg_dtypes([None, _U64, None, _U64, _U64, None])
        self.transpose = {n: getattr(prg, f"clt_sort_transpose{n}") for n in (1, 2, 4, 8)}
        for k in self.transpose.values():
            k.set_scalar_arg_dtypes([None, _U64, None, _U64, _U64, _U64])
        self.rows_vec = prg.clt_sort_rows_vec
        self.rows_vec.set_scalar_arg_dtypes([None, _U64, _U64, _U32, _U32, key, None, None,
                                             _U32, _U32, None])
        self.rows_local.set_scalar_arg_dtypes([None, _U64, _U64, _U32, _U32, _U32, key, None,
                                               None, _U32, _U32, None])


def _options(code: int, idx64: bool, shape: tuple[int, int, int, int]) -> list[str]:
    wg, items, bits, _ = shape
    return [f"-DCLT_SORT_TYPE={int(code)}", f"-DCLT_SORT_WG={int(wg)}",
            f"-DCLT_SORT_ITEMS={int(items)}", f"-DCLT_SORT_BITS={int(bits)}",
            f"-DCLT_SORT_IDX64={int(idx64)}", f"-DCLT_SORT_SUB={SUB_BITS}"]


def _program(q: cl.CommandQueue, dt: np.dtype, idx64: bool,
             shape: tuple[int, int, int, int] | None, vet: bool) -> tuple[_Program, tuple]:
    """The built program for keys of dt (vetted first, where `vet`) and its shape."""
    dev = q.device
    shape = shape or device_shape(dev, 8 if dt.itemsize == 8 else 4, 8 if idx64 else 4)
    code = TYPE_CODES[dt]

    def make() -> _Program:
        kind = "cpu" if dev.type & cl.device_type.CPU else "gpu"
        opts = [*_options(code, idx64, shape), f"-DCLT_OS_WINDOW={int(ONESWEEP_WINDOW[kind])}",
                f"-DCLT_SORT_PACK2={int(TILE_PACK2[kind])}"]
        if vet:
            info = info_for(dev)
            key = f"{dt.str}/{' '.join(opts)}/{text_hash(kernel_file('sort.cl'))}/{_HOST}"
            v = checked(info, "sort", key, check_sort, dt.str, idx64, shape)
            if not v.buildable:
                raise NoConfigRuns(f"cltune: the sort of {dt.name} keys {v.step} in vetting on "
                                   f"{info.name} ({v.reason[:300]}); it is not run in this "
                                   "process (CLTUNE_TRUST_DRIVER=1 runs it anyway)")
        prg = compile_program(q.context, dev, kernel_file("sort.cl"), opts)
        return _Program(prg, _U64 if dt.itemsize == 8 else _U32, _U64 if idx64 else _U32, dev)

    return _programs.get(q.context, (dev.int_ptr, dt.str, idx64, shape), make), shape


#: the most elements a group sorts in __local memory (a row padded to a power of two, or
#: several short rows): GPUs 2048, CPUs (a group is one core's run) 4096
GROUP_ELEMENTS = {"gpu": 2048, "cpu": 4096}
#: the devices whose rows go through __local memory: GPUs; not CPUs, where a group is one
#: core's serial run of the network (measured 1.5-5x slower than the radix passes there)
LOCAL_ON = {"gpu": True, "cpu": False}
#: the devices whose rows are sorted 8 a work-item in vector lanes (clt_sort_rows_vec): CPUs
VEC_ON = {"gpu": False, "cpu": True}
#: the longest row sorted in __local memory (beyond, the radix passes)
LOCAL_MAX = 4096


def local_plan(dev: cl.Device, key_bytes: int, rows: int, row_len: int, *,
               force: bool = False) -> tuple[int, int, int] | None:
    """(log2 of the padded row P, rows a group R, work-group size) that sort `rows` rows of
    `row_len` in __local memory (clt_sort_rows_local), or None where a row does not fit or
    the device's kind does not take this path (`LOCAL_ON`; `force`: the checks take it)."""
    if rows < 1 or row_len < 2 or row_len > LOCAL_MAX:
        return None
    cpu, local_mem, units, max_wg = _facts(dev)
    if not (force or LOCAL_ON["cpu" if cpu else "gpu"]):
        return None
    log_p = (row_len - 1).bit_length()
    p = 1 << log_p
    entry = 12 if key_bytes == 8 else 8  # (key, index) words
    room = local_mem - 1024
    if p * entry > room:
        return None
    per_group = max(p, GROUP_ELEMENTS["cpu" if cpu else "gpu"])
    r = max(1, min(per_group // p, rows, room // (p * entry)))
    fill = units * (2 if cpu else 4)
    while r > 1 and _cdiv(rows, r) < fill:  # fewer rows a group where groups are too few
        r //= 2
    # a work-item takes 8 entries a round of the network
    wg = 1 << min(max(1, r * p // 8).bit_length() - 1, max_wg.bit_length() - 1,
                  8 if cpu else 10)
    return log_p, r, max(1, wg)


def vec_plan(dev: cl.Device, key_bytes: int, rows: int, row_len: int, *,
             force: bool = False) -> tuple[int, int] | None:
    """(log2 of the padded row P, work-items a group) that sort `rows` rows of `row_len` 8 a
    work-item in vector lanes (clt_sort_rows_vec: CPUs), or None where a work-item's rows do
    not fit the group's __local memory or the device's kind does not take this path."""
    if rows < 1 or row_len < 2 or row_len > LOCAL_MAX:
        return None
    cpu, local_mem, _, _ = _facts(dev)
    if not (force or VEC_ON["cpu" if cpu else "gpu"] and (rows >= 8 or row_len <= 1024)):
        return None  # (fewer than 8 long rows: the passes beat a network in one lane of 8)
    log_p = (row_len - 1).bit_length()
    per_item = (1 << log_p) * 8 * (12 if key_bytes == 8 else 8)
    if per_item > local_mem - 1024:  # (PoCL aborts the process where a launch asks more)
        return None
    # a work-item a group: 2-4 measured the same on both CPU runtimes (300-100000 rows)
    return log_p, 1


_FACTS: dict[int, tuple[bool, int, int, int]] = {}


def _facts(dev: cl.Device) -> tuple[bool, int, int, int]:
    """(a CPU, __local bytes, compute units, work-group limit) of dev, asked once."""
    f = _FACTS.get(dev.int_ptr)
    if f is None:
        f = _FACTS[dev.int_ptr] = (bool(dev.type & cl.device_type.CPU), dev.local_mem_size,
                                   max(1, dev.max_compute_units), dev.max_work_group_size)
    return f


def _allocator(q: cl.CommandQueue, x: cla.Array | None) -> Any:  # noqa: ANN401
    """The results' allocator: the input's own, else the queue's pool (a buffer freed after
    every call is a device synchronisation on NVIDIA's driver), else pyopencl's default."""
    own = x.allocator if x is not None else None
    return own if own is not None else pool_for(q)


def _key_dtype(x: cla.Array) -> np.dtype:
    dt = np.dtype(np.uint8) if x.dtype == np.bool_ else x.dtype
    if dt not in TYPE_CODES:
        raise TypeError(f"cltune.sort sorts real numbers and booleans, not {x.dtype} "
                        "(complex values have no order numpy and torch agree on)")
    return dt


class _Sorted:
    """A sort's result on the device: the keys and indices in order (the indices hold
    nothing unless asked for, or some value's bits need them: `special`), the program, the
    flip, and the events still to wait for."""

    def __init__(self, keys: Any, idx: Any, special: Any, prg: _Program, flip: int,
                 waits: list) -> None:
        self.keys, self.idx, self.special, self.prg = keys, idx, special, prg
        self.flip, self.waits = flip, waits


def _blocks(n: int, q: cl.CommandQueue) -> int:
    """Work-groups of 64 for the element-wise kernels: contiguous blocks of >= 4096."""
    return max(1, min(_cdiv(n, 4096), 32 * max(1, q.device.max_compute_units)))


def _order(q: cl.CommandQueue, x: cla.Array, rows: int, row_len: int, descending: bool,
           shape: tuple | None = None, vet: bool = True, want_idx: bool = True,
           idx64: bool | None = None, own_rows: bool | None = None,
           key_bits: int | None = None, out: cla.Array | None = None,
           pos: cla.Array | None = None, db: str | None = None,
           onesweep: bool | None = None) -> _Sorted:
    """x's n elements sorted (within each row of row_len when rows > 1; the indices moved
    along where `want_idx` or the rows' passes read them). Rows enough to fill the device
    (`own_rows`, by default from the shape) are each a group's chunk, sorted in place by their
    own histograms; fewer rows are sorted whole, then by their own bits. `idx64` (tests)
    forces 64-bit indices and offsets (2^32 elements or more take them anyway); `key_bits`: only
    the keys' lowest bits are sorted (unsigned keys whose higher bits are zero). `out` / `pos`:
    the last pass writes the sorted values (x's dtype) / int64 positions (within a row for
    rows) there instead of keys and indices (the result's keys and indices then hold
    nothing). `onesweep` (None: from the sizes ONESWEEP_ON says) sorts a whole array of < 2^30
    elements in groups (wg > 1) by one histogram launch and a onesweep launch a pass
    (`_onesweep`); False: the chunks' passes (histogram, scan, scatter a pass)."""
    n, sort_bits = x.size, key_bits
    mode = (1 if out is not None else 0) | (2 if pos is not None else 0)
    want_idx = want_idx or pos is not None
    dt = _key_dtype(x)
    idx64 = n >= 1 << 32 if idx64 is None else bool(idx64)
    prg, (wg, items, bits, per_cu) = _program(
        q, dt, idx64, shape or shape_for(q, dt, n, idx64, db), vet)
    kb, ib = (8 if dt.itemsize == 8 else 4), (8 if idx64 else 4)
    key_bits = 8 * dt.itemsize
    flip = _flip(dt, descending)
    # scratch from the queue's pool (in order: nothing enqueued later reuses it before this
    # call's kernels have run), else buffers of this call's own
    pool = pool_for(q)
    alloc = pool.allocate if pool is not None else \
        (lambda nbytes: cl.Buffer(q.context, cl.mem_flags.READ_WRITE, nbytes))
    keys = [alloc(n * kb), alloc(n * kb)]
    idx = [alloc(n * ib), alloc(n * ib)]
    tile = wg * items
    radix = 1 << bits
    if onesweep is None:
        least = ONESWEEP_ON["cpu" if q.device.type & cl.device_type.CPU else "gpu"]
        onesweep = rows <= 1 and not idx64 and n < ONESWEEP_MAX and least is not None and \
            n >= least[1 if (want_idx or pos is not None) else 0]
    if onesweep and wg > 1 and prg.onesweep is not None and rows <= 1:
        return _onesweep(q, x, prg, (wg, items, bits), n, kb, ib, -(-min(key_bits, sort_bits or
                         key_bits) // bits), _flip(dt, descending), want_idx, mode, out, pos,
                         keys, idx, alloc)
    fill = per_cu * max(1, q.device.max_compute_units)  # the groups that fill the device
    if own_rows is None:  # rows of a tile at least: shorter ones would pay a group's
        own_rows = rows > 1 and rows >= fill and row_len >= tile  # overhead for a few items
    if rows > 1 and own_rows:
        groups, chunk = rows, row_len
    else:
        own_rows = False
        groups = max(1, min(_cdiv(n, tile), fill))
        chunk = _cdiv(_cdiv(n, groups), tile) * tile
        groups = _cdiv(n, chunk)
    hist = alloc(radix * groups * ib)
    tot = alloc(radix * ib)  # each digit's count over the chunks
    special = alloc(4)
    passes = [(s, 0) for s in range(0, min(key_bits, sort_bits or key_bits), bits)]
    if rows > 1 and not own_rows:
        want_idx = True  # the rows' passes read each element's row from its index
        passes += [(s, row_len) for s in range(0, (rows - 1).bit_length(), bits)]
    ordered = in_order(q) is not None
    waits = waits_on(q, x.events) or []
    ev = None

    def go(k: cl.Kernel, gsize: int, lsize: int) -> None:
        nonlocal ev, waits
        w = waits if waits else ([ev] if (ev is not None and not ordered) else None)
        ev = cl.enqueue_nd_range_kernel(q, k, (gsize,), (lsize,), wait_for=w)
        waits = []

    cur = 0
    first = True  # keys from x, indices from the elements' places
    xoff = x.offset // x.dtype.itemsize
    outs = (out.data if out is not None else special, pos.data if pos is not None else special,
            row_len if rows > 1 else 0)
    ev = cl.enqueue_fill_buffer(q, special, np.uint32(0), 0, 4, wait_for=waits or None)
    waits = []
    with prg.lock:
        for p, (shift, rl) in enumerate(passes):
            prg.hist.set_args(keys[cur], idx[cur], n, chunk, shift, rl, hist, x.base_data, xoff,
                              flip, int(first), special)
            go(prg.hist, groups * wg, wg)
            if not own_rows:
                prg.scan.set_args(hist, groups, tot)
                go(prg.scan, radix * wg, wg)  # a group a digit
            prg.scatter.set_args(keys[cur], idx[cur], n, chunk, shift, rl, hist, keys[1 - cur],
                                 idx[1 - cur], int(want_idx), special, int(own_rows),
                                 int(first), tot, x.base_data, xoff, flip,
                                 mode if p == len(passes) - 1 else 0, *outs)
            go(prg.scatter, groups * wg, wg)
            first = False
            cur = 1 - cur
    return _Sorted(keys[cur], idx[cur], special, prg, flip, [ev] if ev is not None else [])


#: onesweep's look words hold a count in 30 bits
ONESWEEP_MAX = 1 << 30
#: per device kind, from how many elements a whole array sorted in groups (wg > 1) takes
#: onesweep: (values only, indices moved too), or None. H100, float32, groups of 256 x 8,
#: volatile look-back words (docs/logs/h100-sort-onesweep-rows-2026-12-06.txt), µs onesweep /
#: the chunks' passes: sort 2^21 312 / 257, 2^22 519 / 450, 2^23 935 / 947, 2^24 1741 / 1834;
#: argsort 2^21 333 / 322, 2^22 567 / 649, 2^23 1017 / 1259, 2^24 1867 / 2447. CPUs: PoCL
#: 2^16, groups of 64 x 4, 9.5 ms against 5.7.
ONESWEEP_ON: dict[str, tuple[int, int] | None] = {"gpu": (1 << 23, 1 << 22), "cpu": None}
#: the devices whose onesweep look-back words are written and read by volatile 32-bit stores
#: and loads instead of atomics (each word carries its state and count together)
ONESWEEP_VOLATILE = {"gpu": True, "cpu": False}
#: per device kind, how many of a digit's look-back words onesweep reads at once (1: a word at
#: a time). H100, float32, groups of 256 x 8 (docs/logs/h100-sort-onesweep-look-2026-12-08.txt):
#: 4 words took the passes from 1592 to 1467 us at 2^24 (8 and 16 words 1502-1619; no look-back
#: at all 1188), but two later runs with 4 words stopped in argsort at 2^22 on an
#: INVALID_COMMAND_QUEUE not yet explained, so GPUs keep 1
ONESWEEP_WINDOW = {"gpu": 1, "cpu": 1}
#: per device kind, whether the tile sort in __local memory (GPUs' groups) keeps its
#: [sub-digit][work-item] counts two to a word (half the words, half the scan: CUB's packing)
TILE_PACK2 = {"gpu": False, "cpu": False}
#: clt_sort_onesweep's `state` words before the offsets (sort.cl's OFFS_AT)
_OFFS_AT = 64


def _onesweep(q: cl.CommandQueue, x: cla.Array, prg: _Program, shape: tuple[int, int, int],
              n: int, kb: int, ib: int, passes: int, flip: int, want_idx: bool, mode: int,
              out: cla.Array | None, pos: cla.Array | None, keys: list, idx: list,
              alloc: Any) -> _Sorted:
    """_order's whole-array sort in groups: clt_sort_hist_all (every pass's digit counts in
    one read, then their offsets), then one clt_sort_onesweep launch a pass (a tile a group,
    the digits' places before it by decoupled look-back)."""
    wg, items, bits = shape
    radix, tile = 1 << bits, wg * items
    tiles = _cdiv(n, tile)
    state = alloc(4 * (_OFFS_AT + passes * radix))
    look = [alloc(4 * tiles * radix), alloc(4 * tiles * radix)] if passes > 1 else \
        [alloc(4 * tiles * radix)] * 2
    ordered = in_order(q) is not None
    waits = waits_on(q, x.events) or None
    ev = cl.enqueue_fill_buffer(q, state, np.uint32(0), 0, 4 * (_OFFS_AT + passes * radix),
                                wait_for=waits)
    xoff = x.offset // x.dtype.itemsize
    groups = max(1, min(_cdiv(n, tile), 4 * max(1, q.device.max_compute_units)))
    outs = (out.data if out is not None else state, pos.data if pos is not None else state)
    vol = int(ONESWEEP_VOLATILE["cpu" if q.device.type & cl.device_type.CPU else "gpu"])
    with prg.lock:
        prg.hist_all.set_args(x.base_data, xoff, n, flip, passes, state, look[0],
                              tiles * radix, cl.LocalMemory(4 * radix * _cdiv(kb * 8, bits)))
        ev = cl.enqueue_nd_range_kernel(q, prg.hist_all, (groups * wg,), (wg,),
                                        wait_for=None if ordered else [ev])
        cur = 0
        for p in range(passes):
            last = p == passes - 1
            prg.onesweep.set_args(keys[cur], idx[cur], n, p, state, look[p & 1],
                                  look[1 - (p & 1)], int(not last), keys[1 - cur], idx[1 - cur],
                                  int(want_idx), int(p == 0), x.base_data, xoff, flip,
                                  mode if last else 0, *outs, vol)
            ev = cl.enqueue_nd_range_kernel(q, prg.onesweep, (tiles * wg,), (wg,),
                                            wait_for=None if ordered else [ev])
            cur = 1 - cur
    return _Sorted(keys[cur], idx[cur], state, prg, flip, [ev])


def _rows_local(q: cl.CommandQueue, x: cla.Array, rows: int, row_len: int, descending: bool,
                plan: tuple[int, int, int], want_out: bool, want_pos: bool,
                shape: tuple | None = None, vet: bool = True,
                ) -> tuple[cla.Array | None, cla.Array | None]:
    """(sorted values, int64 positions within each row) of x's rows, each as asked, in one
    launch of clt_sort_rows_local (`plan`: local_plan's)."""
    dt = _key_dtype(x)
    prg, _ = _program(q, dt, False, shape, vet)
    log_p, r, wg = plan
    k = prg.rows_local
    wg = max(1, min(wg, prg.rows_wg))
    groups = _cdiv(rows, r)
    local = cl.LocalMemory((r << log_p) * (12 if dt.itemsize == 8 else 8))
    return _rows_launch(q, prg, k, x, want_out, want_pos, (groups * wg, wg), (
        rows, row_len, log_p, r, _flip(dt, descending)), local)


#: the devices whose rows of RADIX_ROWS_MIN..RADIX_ROWS_MAX elements (32-bit keys or narrower)
#: are sorted by the in-group radix sort (clt_sort_rows_radix) instead of the bitonic network
RADIX_ROWS_ON = {"gpu": True, "cpu": False}
RADIX_ROWS_MIN, RADIX_ROWS_MAX = 512, 4096
#: the largest group of the in-group radix sort
RADIX_ROWS_WG = 128


def radix_rows_shape(dev: cl.Device, key_bytes: int, row_len: int, *,
                     force: bool = False) -> tuple[int, int, int, int] | None:
    """The program shape (work-group size, items, bits a round, 1) whose group sorts a row of
    row_len by clt_sort_rows_radix — a tile of at least row_len in __local memory, counts
    packed in registers — or None (64-bit keys, rows outside RADIX_ROWS_MIN..MAX, a device
    kind that does not take it; `force`: the checks take any length up to MAX)."""
    cpu, local_mem, _, max_wg = _facts(dev)
    if key_bytes != 4 or row_len > RADIX_ROWS_MAX or row_len < (2 if force else
                                                                 RADIX_ROWS_MIN):
        return None
    if not (force or RADIX_ROWS_ON["cpu" if cpu else "gpu"]):
        return None
    # about 16 items a work-item in groups of up to 128 (H100, float32 rows, µs: 512: 32 x 16
    # 406; 1024: 64 x 16 392, 256 x 4 685; 2048: 128 x 16 403, 256 x 8 494; 3000: 128 x 24
    # 338, 256 x 12 367; 4096: 128 x 32 403, 256 x 16 465)
    wg = min(RADIX_ROWS_WG, 1 << (max_wg.bit_length() - 1),
             max(8, 1 << (_cdiv(row_len, 16) - 1).bit_length()))  # (groups: sort.cl's form)
    items = _cdiv(row_len, wg)
    for bits in (4, 3, 2):  # the widest rounds whose counts fit a register word and memory
        if items <= (1 << min(64 // (1 << bits), 31)) - 1 and \
                split_local(wg, items, bits, 4, 4) + 256 <= local_mem:
            return wg, items, bits, 1
    return None


def _rows_radix(q: cl.CommandQueue, x: cla.Array, rows: int, row_len: int, descending: bool,
                shape: tuple[int, int, int, int], want_out: bool, want_pos: bool,
                vet: bool = True) -> tuple[cla.Array | None, cla.Array | None]:
    """(sorted values, int64 positions within each row) of x's rows, each as asked, in one
    launch of clt_sort_rows_radix (a group a row; `shape`: radix_rows_shape's)."""
    dt = _key_dtype(x)
    prg, _ = _program(q, dt, False, shape, vet)
    k = prg.rows_radix
    wg = shape[0]
    alloc = _allocator(q, x)
    out = empty_result(q, x.shape, x.dtype, "C", alloc) if want_out else None
    pos = empty_result(q, x.shape, _I64, "C", alloc) if want_pos else None
    dummy = (out if out is not None else pos).data
    with prg.lock:
        k.set_args(x.base_data, x.offset // x.dtype.itemsize, row_len, 8 * dt.itemsize,
                   _flip(dt, descending), out.data if out is not None else dummy,
                   pos.data if pos is not None else dummy, int(want_out), int(want_pos))
        ev = cl.enqueue_nd_range_kernel(q, k, (rows * wg,), (wg,),
                                        wait_for=waits_on(q, x.events))
    for a in (out, pos):
        if a is not None:
            a.add_event(ev)
    return out, pos


def _flip(dt: np.dtype, descending: bool) -> int:
    """What a key is XORed with: all ones of its bits for a descending sort."""
    return ((1 << (8 * dt.itemsize)) - 1) if descending else 0


def _rows_launch(q: cl.CommandQueue, prg: _Program, k: cl.Kernel, x: cla.Array,
                 want_out: bool, want_pos: bool, sizes: tuple[int, int], scalars: tuple,
                 local: cl.LocalMemory) -> tuple[cla.Array | None, cla.Array | None]:
    """One launch of a one-launch rows kernel (x, its offset, `scalars`, the values' and
    positions' outputs and flags, `local`): (values, positions) as asked."""
    alloc = _allocator(q, x)
    out = empty_result(q, x.shape, x.dtype, "C", alloc) if want_out else None
    pos = empty_result(q, x.shape, _I64, "C", alloc) if want_pos else None
    dummy = (out if out is not None else pos).data
    with prg.lock:
        k.set_args(x.base_data, x.offset // x.dtype.itemsize, *scalars,
                   out.data if out is not None else dummy, pos.data if pos is not None else dummy,
                   int(want_out), int(want_pos), local)
        ev = cl.enqueue_nd_range_kernel(q, k, (sizes[0],), (sizes[1],),
                                        wait_for=waits_on(q, x.events))
    for a in (out, pos):
        if a is not None:
            a.add_event(ev)
    return out, pos


def _rows_vec(q: cl.CommandQueue, x: cla.Array, rows: int, row_len: int, descending: bool,
              plan: tuple[int, int], want_out: bool, want_pos: bool,
              shape: tuple | None = None, vet: bool = True,
              ) -> tuple[cla.Array | None, cla.Array | None]:
    """(sorted values, int64 positions within each row) of x's rows, each as asked, in one
    launch of clt_sort_rows_vec (`plan`: vec_plan's)."""
    dt = _key_dtype(x)
    prg, _ = _program(q, dt, False, shape, vet)
    log_p, wg = plan
    groups = _cdiv(_cdiv(rows, 8), wg)
    local = cl.LocalMemory(wg * (64 << log_p) * (12 if dt.itemsize == 8 else 8) // 8)
    return _rows_launch(q, prg, prg.rows_vec, x, want_out, want_pos, (groups * wg, wg), (
        rows, row_len, log_p, _flip(dt, descending)), local)


def _rows_sorted(q: cl.CommandQueue, x: cla.Array, rows: int, row_len: int, descending: bool,
                 want_out: bool, want_pos: bool) -> tuple[Any, Any] | None:
    """x's rows sorted in one launch where they fit a group (GPUs: __local memory; CPUs:
    vector lanes): (values, positions) as asked, else None (the radix passes)."""
    kb = 8 if _key_dtype(x).itemsize == 8 else 4
    rshape = radix_rows_shape(q.device, kb, row_len)
    if rshape is not None:
        return _rows_radix(q, x, rows, row_len, descending, rshape, want_out, want_pos)
    plan = local_plan(q.device, kb, rows, row_len)
    if plan is not None:
        return _rows_local(q, x, rows, row_len, descending, plan, want_out, want_pos)
    vplan = vec_plan(q.device, kb, rows, row_len)
    if vplan is not None:
        return _rows_vec(q, x, rows, row_len, descending, vplan, want_out, want_pos)
    return None


def _sorted(q: cl.CommandQueue, x: cla.Array, rows: int, row_len: int, descending: bool,
            want_vals: bool, want_pos: bool, **how: Any) -> tuple[Any, Any]:
    """(sorted values of x's dtype, int64 positions within rows) by the radix passes, as asked
    (None for the other), both written by the last pass; `how`: `_order`'s options."""
    out = empty_result(q, x.shape, x.dtype, "C", _allocator(q, x)) if want_vals else None
    pos = empty_result(q, x.shape, _I64, "C", _allocator(q, x)) if want_pos else None
    s = _order(q, x, rows, row_len, descending, want_idx=want_pos, out=out, pos=pos, **how)
    for a in (out, pos):
        for ev in s.waits if a is not None else ():
            a.add_event(ev)
    return out, pos


def _values(q: cl.CommandQueue, s: _Sorted, x: cla.Array) -> cla.Array:
    """The sorted values of x (its shape): from the keys, or by index (clt_sort_values)."""
    out = empty_result(q, x.shape, x.dtype, "C", _allocator(q, x))
    n = x.size
    with s.prg.lock:
        s.prg.values.set_args(s.keys, s.idx, s.special, x.base_data,
                              x.offset // x.dtype.itemsize, n, s.flip, out.data)
        ev = cl.enqueue_nd_range_kernel(q, s.prg.values, (_blocks(n, q) * 64,), (64,),
                                        wait_for=None if in_order(q) else s.waits or None)
    out.add_event(ev)
    return out


def _gather(q: cl.CommandQueue, prg: _Program, order: Any, n: int, row_len: int,
            src: cla.Array | None, want_pos: bool, waits: list) -> tuple[Any, Any, cl.Event]:
    """(values in order or None, int64 positions or None, event)."""
    word = src.dtype.itemsize if src is not None else 4
    alloc = _allocator(q, src)
    out = empty_result(q, src.shape, src.dtype, "C", alloc) if src is not None else None
    pos = empty_result(q, (n,), _I64, "C", alloc) if want_pos else None
    k = prg.gather[word]
    dummy = order  # an unused argument still needs a buffer
    with prg.lock:
        k.set_args(src.base_data if src is not None else dummy,
                   src.offset // word if src is not None else 0, order, n, row_len,
                   out.data if out is not None else dummy, pos.data if pos is not None else dummy,
                   int(out is not None), int(want_pos))
        ev = cl.enqueue_nd_range_kernel(q, k, (_blocks(n, q) * 64,), (64,),
                                        wait_for=waits or None)
    for a in (out, pos):
        if a is not None:
            a.add_event(ev)
    return out, pos, ev


def _prepare(x: Any, queue: cl.CommandQueue | None, axis: Any, what: str,
             ) -> tuple[cla.Array, cl.CommandQueue, int, int]:
    """(x as a contiguous device array, queue, rows, row length, the axis: None flattened)
    for a sort along `axis`."""
    if isinstance(x, np.ndarray):
        if queue is None:
            raise TypeError(f"{what}: a numpy input needs queue= (the device to run on)")
        x = cla.to_device(queue, np.ascontiguousarray(x))
    if not isinstance(x, cla.Array):
        raise TypeError(f"{what}: x must be a pyopencl.array.Array or numpy array, not "
                        f"{type(x).__name__}")
    q = queue or x.queue
    if q is None:
        raise TypeError(f"{what}: x has no queue: pass queue=")
    dt = _key_dtype(x)
    if dt == np.float64 and not info_for(q.device).fp64:
        raise TypeError(f"{what}: the device has no fp64 (cl_khr_fp64): float64 keys cannot be "
                        "sorted there")
    if x.offset % x.dtype.itemsize:
        raise ValueError(f"{what}: x starts {x.offset} bytes into its buffer, not at a whole "
                         "element (a byte-offset view): copy it first")
    if x.size and not x.flags.c_contiguous:
        raise ValueError(f"{what} takes a C-contiguous array (copy a strided view first)")
    if axis is None:
        return x.reshape(x.size), q, 1, x.size, None
    if isinstance(axis, (bool, np.bool_)) or not isinstance(axis, (int, np.integer)):
        raise TypeError(f"{what}: axis must be an integer or None, not {axis!r}")
    if x.ndim == 0:
        raise ValueError(f"{what}: a 0-d array has no axis {axis} (use axis=None)")
    ax = int(axis) + (x.ndim if axis < 0 else 0)
    if not 0 <= ax < x.ndim:
        raise ValueError(f"{what}: axis {axis} is out of range for {x.ndim} dimensions")
    row_len = x.shape[ax]
    return x, q, (x.size // row_len if row_len else 0), row_len, ax


def _transposed(q: cl.CommandQueue, prg: _Program, x: cla.Array, a: int, p: int, b: int,
                ) -> cla.Array:
    """x read as a C-ordered (a, p, b) array, made (a, b, p): a new array (flat)."""
    n = a * p * b
    out = empty_result(q, (n,), x.dtype, "C", _allocator(q, x))
    k = prg.transpose[x.dtype.itemsize]
    with prg.lock:
        k.set_args(x.base_data, x.offset // x.dtype.itemsize, out.data, p, b, n)
        out.add_event(cl.enqueue_nd_range_kernel(
            q, k, (_blocks(n, q) * 64,), (64,),
            wait_for=waits_on(q, x.events)))
    return out


def _along(q: cl.CommandQueue, x: cla.Array, ax: int | None, rows: int, row_len: int,
           ) -> tuple[cla.Array, Any]:
    """(x with the sorted axis made its rows' — a transposed copy where it is not the last —,
    and how to put an answer of those rows back into x's shape)."""
    if ax is None or ax == x.ndim - 1:
        return x, lambda r: r
    a = int(np.prod(x.shape[:ax], dtype=np.int64))
    b = int(np.prod(x.shape[ax + 1:], dtype=np.int64))
    prg, _ = _program(q, _key_dtype(x), False, None, True)
    xt = _transposed(q, prg, x, a, row_len, b).reshape(rows, row_len)

    def back(r: cla.Array) -> cla.Array:
        return _transposed(q, prg, r, a, b, row_len).reshape(x.shape)

    return xt, back


def sort(x: Any, axis: int | None = -1, descending: bool = False, stable: bool = True, *,
         return_indices: bool = False, queue: cl.CommandQueue | None = None,
         db: str | None = None) -> Any:
    """x sorted along `axis` (any; None: flattened), a new device array of x's dtype and
    exact bits; numpy's order (NaN last; descending: first, as torch's), always stable. An
    axis other than the last is sorted as rows of a transposed copy, put back after.
    `return_indices=True`: (values, int64 indices along the axis), as `torch.sort` returns
    them, from the one sort. `db`: the tuning database the passes' shape comes from (None:
    CLTUNE_DB, else cltune's default)."""
    del stable  # every sort here is stable (torch's stable=False allows any order of ties)
    xx, q, rows, row_len, ax = _prepare(x, queue, axis, "sort")
    if xx.size < 2:
        v = xx.copy(queue=q)
        return (v, cla.zeros(q, xx.shape, np.int64)) if return_indices else v
    xr, back = _along(q, xx, ax, rows, row_len)
    done = _rows_sorted(q, xr, rows, row_len, bool(descending), True, bool(return_indices))
    if done is not None:
        return (back(done[0]), back(done[1])) if return_indices else back(done[0])
    vals, pos = _sorted(q, xr, rows, row_len, bool(descending), True, bool(return_indices),
                        db=db)
    if not return_indices:
        return back(vals)
    return back(vals), back(pos).reshape(xx.shape)


def argsort(x: Any, axis: int | None = -1, descending: bool = False, stable: bool = True, *,
            queue: cl.CommandQueue | None = None, db: str | None = None) -> cla.Array:
    """The int64 indices that sort x along `axis` (positions along it, as numpy's argsort;
    flattened for None)."""
    del stable
    xx, q, rows, row_len, ax = _prepare(x, queue, axis, "argsort")
    shape = xx.shape
    if xx.size < 2:
        return cla.zeros(q, shape, np.int64)
    xr, back = _along(q, xx, ax, rows, row_len)
    done = _rows_sorted(q, xr, rows, row_len, bool(descending), False, True)
    if done is not None:
        return back(done[1])
    _, pos = _sorted(q, xr, rows, row_len, bool(descending), False, True, db=db)
    return back(pos).reshape(shape)


def sort_by_key(keys: Any, values: Any, descending: bool = False, *,
                queue: cl.CommandQueue | None = None, db: str | None = None,
                ) -> tuple[cla.Array, cla.Array]:
    """(keys sorted, values in the keys' order): 1-D arrays of one length; values of any
    dtype of 1, 2, 4, 8 or 16 bytes (their bits moved as they are). Stable."""
    kk, q, _, _, _ = _prepare(keys, queue, None, "sort_by_key")
    if isinstance(values, np.ndarray):
        values = cla.to_device(q, np.ascontiguousarray(values))
    if not isinstance(values, cla.Array):
        raise TypeError(f"sort_by_key: values must be a device or numpy array, not "
                        f"{type(values).__name__}")
    if values.size != kk.size or values.ndim != 1 or keys.ndim != 1:
        raise ValueError(f"sort_by_key takes 1-D keys and values of one length, not "
                         f"{keys.shape} and {values.shape}")
    if values.dtype.itemsize not in WORDS:
        raise TypeError(f"sort_by_key moves values of 1, 2, 4, 8 or 16 bytes, not "
                        f"{values.dtype} ({values.dtype.itemsize} bytes)")
    if values.size and not values.flags.c_contiguous:
        raise ValueError("sort_by_key takes contiguous values (copy a strided view first)")
    if values.offset % values.dtype.itemsize:
        raise ValueError("sort_by_key: values start at a byte offset, not at a whole element: "
                         "copy them first")
    if kk.size < 2:
        return kk.copy(queue=q), values.copy(queue=q)
    done = _rows_sorted(q, kk, 1, kk.size, bool(descending), True, True)
    if done is not None:  # one launch: the keys and their positions, then the values by them
        return done[0], take(q, values, done[1])
    s = _order(q, kk, 1, kk.size, bool(descending), db=db)
    ks = _values(q, s, kk)
    # the values' own pending writes too (the sort waited for the keys' only)
    waits = waits_on(q, values.events) or []
    if not in_order(q):
        waits += s.waits
    vs, _, _ = _gather(q, s.prg, s.idx, kk.size, 0, values, False, waits)
    return ks, vs


def take(q: cl.CommandQueue, a: cla.Array, pos: cla.Array, allocator: Any = None,
         prg: _Program | None = None) -> cla.Array:
    """a[pos]: a contiguous 1-D array of any dtype gathered by int64 positions (words of 1-16
    bytes, other sizes a byte at a time), after the pending writes of both (clt_sort_take*
    of `prg`, by default the uint32 keys' program)."""
    out = empty_result(q, pos.shape, a.dtype, "C",
                       allocator if allocator is not None else _allocator(q, a))
    n = pos.size
    if n == 0:
        return out
    prg = prg or _program(q, np.dtype(np.uint32), False, None, True)[0]
    w = a.dtype.itemsize
    waits = waits_on(q, a.events, pos.events)
    with prg.lock:
        if w in prg.take and a.offset % w == 0:
            k = prg.take[w]
            k.set_args(a.base_data, a.offset // w, pos.data, n, out.data)
        else:
            k = prg.take_bytes
            k.set_args(a.base_data, a.offset, pos.data, n, w, out.data)
        out.add_event(cl.enqueue_nd_range_kernel(q, k, (_blocks(n, q) * 64,), (64,),
                                                 wait_for=waits))
    return out


def stable_positions(q: cl.CommandQueue, keys: cla.Array, key_bits: int | None = None,
                     ) -> cla.Array:
    """The int64 positions that order the 1-D unsigned `keys` stably (ascending), sorting only
    their lowest `key_bits` bits where the radix passes run (the higher ones zero): the
    drop-in RadixSort's order (cltune.families.scan.radix_sort)."""
    n = keys.size
    if n < 2:
        return cla.zeros(q, (n,), np.int64)
    done = _rows_sorted(q, keys, 1, n, False, False, True)
    if done is not None:
        return done[1]
    return _sorted(q, keys, 1, n, False, False, True, key_bits=key_bits)[1]


def reference_order(h: np.ndarray, descending: bool) -> np.ndarray:
    """numpy's stable order of h's elements (NaN last; descending reverses the values' order,
    not the ties'): the checks' reference."""
    vals = h.astype(np.uint8) if h.dtype == np.bool_ else h
    _, inv = np.unique(vals, return_inverse=True, equal_nan=True)
    inv = inv.reshape(-1).astype(np.int64)
    return np.lexsort((np.arange(h.size), -inv if descending else inv))


def sample_keys(dtype: np.dtype, n: int, seed: int = 7) -> np.ndarray:
    """n keys of dtype with what a sort must get right: ties, the extremes and, for floats,
    NaN, -0.0 beside 0.0 and both infinities (the checks' input: vetting, tuning)."""
    rng = np.random.default_rng(seed)
    tie = min(19, n - 1)
    if dtype.kind == "f":
        h = (rng.standard_normal(n) * 100).astype(dtype)
        h[::97] = np.nan
        h[5::101] = -0.0
        h[7::103] = 0.0
        h[11::211] = np.inf
        h[13::307] = -np.inf
        h[17::29] = h[tie]
        return h
    lim = np.iinfo(dtype)
    h = rng.integers(lim.min, lim.max, n, dtype=dtype, endpoint=True)
    h[::31] = lim.min
    h[3::37] = lim.max
    h[5::7] = h[tie]
    return h


def check_sort(ctx: cl.Context, queue: cl.CommandQueue, dev: cl.Device, info: Any,
               dt_str: str, idx64: bool, shape: tuple[int, int, int, int]) -> str:
    """Vetting's check (isolation.vetting.checked, in the device's worker): this build sorts
    20011 values with ties, extremes (and NaN, +-0, +-inf for floats) ascending and
    descending (by the chunks' passes and, in groups, by onesweep), 7 rows of 1301 (by the
    passes, in __local memory, in vector lanes, by the in-group radix sort), a row at an
    offset and many short rows the one-launch ways, as numpy's stable argsort orders them;
    and the transposes that sort along another axis, there and back."""
    dt = np.dtype(dt_str)
    h = sample_keys(dt, 20011)
    x = cla.to_device(queue, h)
    shape = tuple(int(v) for v in shape)
    plain = h.copy()
    if dt.kind == "f":  # no -0 or NaN: the values come back from their keys
        plain[np.isnan(plain) | (plain == 0)] = 1
    for desc in (False, True):
        want = reference_order(h, desc)
        s = _order(queue, x, 1, h.size, desc, shape, vet=False, idx64=idx64)
        _, pos, _ = _gather(queue, s.prg, s.idx, h.size, 0, None, True, s.waits)
        how = f"{dt.name} ({'descending' if desc else 'ascending'})"
        if not np.array_equal(pos.get(), want):
            return f"the argsort of {how} by gathered indices is not numpy's stable order"
        _, pos = _sorted(queue, x, 1, h.size, desc, False, True, shape=shape, vet=False,
                         idx64=idx64)
        if not np.array_equal(pos.get(), want):
            return f"the argsort of {how} is not numpy's stable order"
        if shape[0] > 1 and not idx64:  # onesweep, which serves large arrays in groups
            vals, pos = _sorted(queue, x, 1, h.size, desc, True, True, shape=shape, vet=False,
                                onesweep=True)
            if not np.array_equal(pos.get(), want) or \
                    vals.get().tobytes() != h[want].tobytes():
                return f"onesweep's sort of {how} is not numpy's stable order"
        for v in (h, plain):
            xv = cla.to_device(queue, v)
            wv = v[reference_order(v, desc)].tobytes()
            got = _values(queue, _order(queue, xv, 1, v.size, desc, shape, vet=False,
                                        want_idx=False, idx64=idx64), xv).get()
            vals, pos = _sorted(queue, xv, 1, v.size, desc, True, True, shape=shape, vet=False,
                                idx64=idx64)
            if got.tobytes() != wv or vals.get().tobytes() != wv:
                return f"the sorted values of {how} are not numpy's"
            if not np.array_equal(pos.get(), reference_order(v, desc)):
                return f"the positions beside the sorted values of {how} are not numpy's"
    rows = x[:7 * 1301].reshape(7, 1301)
    want = np.stack([reference_order(r, False) for r in h[:7 * 1301].reshape(7, 1301)])
    # the batched transposes that sort along another axis: values of dt, int64 positions
    prg, _ = _program(queue, dt, idx64, shape, vet=False)
    # the gathers by int64 positions: every word size, and 3-byte values a byte at a time
    perm = np.random.default_rng(3).permutation(1001)
    pdev = cla.to_device(queue, perm.astype(np.int64))
    for hv in (h[:1001].view(np.uint8), h[:1001], np.arange(1001 * 2).astype(np.complex128),
               np.frombuffer(np.arange(3003, dtype=np.uint8).tobytes(), "V3")):
        got = take(queue, cla.to_device(queue, hv[:1001]), pdev, None, prg).get()
        if got.tobytes() != hv[:1001][perm].tobytes():
            return f"the gather of {hv.dtype} values by positions is wrong"
    for v in (x[5:5 + 3 * 17 * 29], cla.to_device(queue, np.arange(3 * 17 * 29))):
        hv = v.get().reshape(3, 17, 29)
        t = _transposed(queue, prg, v, 3, 17, 29)
        if t.get().tobytes() != np.ascontiguousarray(hv.transpose(0, 2, 1)).tobytes():
            return f"the transpose of {v.dtype.name} that sorts along an axis is wrong"
        if _transposed(queue, prg, t, 3, 29, 17).get().tobytes() != hv.tobytes():
            return f"the transpose of {v.dtype.name} back from the rows is wrong"
    # rows in one launch, both ways (whichever this device's calls take): 7 rows of 1301, a row
    # of 1000 at an offset, 301 rows of 13 many a group; values by bits and positions
    kb = 8 if dt.itemsize == 8 else 4
    for v, r, c in ((rows, 7, 1301), (x[11:1011], 1, 1000),
                    (x[:301 * 13].reshape(301, 13), 301, 13)):
        hv = v.get().reshape(r, c)
        for desc in (False, True):
            plan = local_plan(dev, kb, r, c, force=True)
            if plan is None:  # rows longer than this device's __local memory holds
                continue
            w = np.stack([reference_order(row, desc) for row in hv])
            vplan = vec_plan(dev, kb, r, c, force=True)
            for how, done in (("in __local memory", _rows_local(
                    queue, v, r, c, desc, plan, True, True, shape, vet=False)),
                    ("in vector lanes", None if vplan is None else _rows_vec(
                        queue, v, r, c, desc, vplan, True, True, shape, vet=False)),
                    ("by the in-group radix sort", _rows_radix(
                        queue, v, r, c, desc, shape, True, True, vet=False)
                        if shape[0] > 1 and kb == 4 and shape[0] * shape[1] >= c else None)):
                if done is None:
                    continue
                vals, pos = done
                if not np.array_equal(pos.get().reshape(r, c), w):
                    return f"the sort of {r} rows of {c} {dt.name} {how} is not numpy's"
                if vals.get().tobytes() != np.take_along_axis(hv, w, axis=1).tobytes():
                    return f"the sorted values of {r} rows of {c} {dt.name} {how} are not numpy's"
    for own in (False, True):  # sorted whole then by rows, and a group a row
        _, pos = _sorted(queue, rows, 7, 1301, False, False, True, shape=shape, vet=False,
                         idx64=idx64, own_rows=own)
        if not np.array_equal(pos.get().reshape(7, 1301), want):
            return f"the sort of {dt.name} rows (a group a row: {own}) is not numpy's order"
    return ""
