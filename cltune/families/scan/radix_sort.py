"""pyopencl's RadixSort on cltune's sort: `cltune.RadixSort` with pyopencl.algorithm's
constructor and call, so that an application changes one import (or runs under
`cltune.use_in_pyopencl()`, which swaps it in):

    >>> rs = cltune.RadixSort(ctx, "int *ary, float *vals", key_expr="ary[i]",
    ...                       sort_arg_names=["ary", "vals"])
    >>> (ary_sorted, vals_sorted), event = rs(ary, vals, key_bits=20)

Each element's key, `(key_dtype)(key_expr)` with the bits above those pyopencl's passes would
sort masked off (`key_bits`, rounded up to whole `bits_at_a_time`), is computed once by a
kernel of the application's arguments (`clt_rs_keys`); cltune.sort's stable order of the keys
(kernels/sort.cl: one launch for n <= 4096, else radix passes over those bits only) then
permutes every named array. The sorted copies come back in the order of `sort_arg_names`, with
one event, as pyopencl documents them.

pyopencl evaluates `key_expr` again in every pass, on the arrays sorted so far. The two agree
whenever the key of element i is a function of the sorted arrays' i-th elements, scalars and
arrays read at fixed places — how RadixSort is used (`ary[i]`, `box_ids[i] >> 3`). A key of
`i` itself or of an unsorted array's i-th element is the element's own original position's
here; pyopencl's passes would read other elements' for the later digits.

The key expression is the application's code and the driver is untrusted (house rule 17): the
first call on a device builds and runs the key kernel in the device's worker, on copies of
that call's arguments, against a one-work-item walk of the same kernel (`check_keys`); the
verdict is kept per fingerprint, driver and program. A crash or hang there and it is never
built here (`NoConfigRuns`); keys that differ are a warning.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyopencl as cl
import pyopencl.array as cla
from pyopencl.tools import (
    VectorArg,
    dtype_to_ctype,
    get_arg_list_scalar_arg_dtypes,
    get_arg_offset_adjuster_code,
    get_or_register_dtype,
    parse_arg_list,
)

from cltune.core.serving import CltuneWarning
from cltune.core.shapes import empty_result
from cltune.device.select import info_for
from cltune.families.scan.generic import macro_body
from cltune.families.scan.sort import stable_positions, take
from cltune.isolation.vetting import NoConfigRuns, checked
from cltune.opencl.build import compile_program
from cltune.opencl.caches import ContextCache
from cltune.opencl.pools import pool_for
from cltune.opencl.sources import text_hash

__all__ = ["RadixSort"]

_programs: ContextCache[Any] = ContextCache()
#: this module's own text, in the vetting key (how it launches the program is vetted too)
_HOST = text_hash(Path(__file__).read_text())


class _Built:
    def __init__(self, prg: cl.Program, user: list, key: type) -> None:
        self.keys = prg.clt_rs_keys
        self.keys.set_scalar_arg_dtypes([*user, np.uint64, key, None])
        self.lock = threading.Lock()


class RadixSort:
    """pyopencl.algorithm.RadixSort's constructor and call on cltune's stable sort (see the
    module's text for what differs: nothing, for keys of the sorted elements)."""

    def __init__(self, context: cl.Context, arguments: Any, key_expr: str,
                 sort_arg_names: Sequence[str], bits_at_a_time: int = 2,
                 index_dtype: Any = np.int32, key_dtype: Any = np.uint32,
                 scan_kernel: Any = None, options: Any = None) -> None:
        del scan_kernel  # pyopencl's scan (its passes); cltune sorts by its own kernels
        self.context = context
        self.arguments = parse_arg_list(arguments)
        self.sort_arg_names = list(sort_arg_names)
        by_name = {a.name: a for a in self.arguments}
        for name in self.sort_arg_names:
            if name not in by_name:
                raise ValueError(f"sort_arg_names: {name!r} is not one of the arguments "
                                 f"({', '.join(by_name)})")
            if not isinstance(by_name[name], VectorArg):
                raise ValueError(f"sort_arg_names: {name!r} is a scalar; only arrays are sorted")
        self.bits = int(bits_at_a_time)
        if self.bits < 1:
            raise ValueError(f"bits_at_a_time must be 1 or more, not {bits_at_a_time!r}")
        self.index_dtype = np.dtype(index_dtype)
        self.key_dtype = np.dtype(key_dtype)
        if self.key_dtype.kind not in "iu":
            raise TypeError(f"key_dtype must be an integer type, not {self.key_dtype}")
        #: the keys sorted as unsigned integers of the key's size (pyopencl's digits are its bits)
        self._ukey = np.dtype(f"u{self.key_dtype.itemsize}")
        self.options = list(options) if isinstance(options, (list, tuple)) else \
            ([] if options is None else str(options).split())
        vectors = [i for i, a in enumerate(self.arguments) if isinstance(a, VectorArg)]
        if not vectors:
            raise ValueError("RadixSort needs an array argument (its length is the sort's n)")
        self.first_array_arg_idx = vectors[-1]  # pyopencl's: the last array's length is n
        self._parsed = [VectorArg(a.dtype, a.name, with_offset=True)
                        if isinstance(a, VectorArg) else a for a in self.arguments]
        kct, ict = dtype_to_ctype(self._ukey), dtype_to_ctype(self.index_dtype)
        uses_double = any(a.dtype == np.float64 for a in self.arguments)
        self._src = "\n".join([
            "/* generated by cltune.families.scan.radix_sort from the application's code */",
            "#pragma OPENCL EXTENSION cl_khr_fp64: enable" if uses_double else "",
            f"__kernel void clt_rs_keys({', '.join(a.declarator() for a in self._parsed)}, "
            f"const ulong clt_n, const {kct} clt_mask, __global {kct} *clt_keys) {{",
            get_arg_offset_adjuster_code(self._parsed),
            "    for (ulong clt_j = get_global_id(0); clt_j < clt_n; "
            "clt_j += get_global_size(0)) {",
            f"        const {ict} i = ({ict})clt_j;",
            f"        clt_keys[clt_j] = (({kct})({dtype_to_ctype(self.key_dtype)})"
            f"({macro_body(key_expr, 'key_expr')})) & clt_mask;",
            "    }",
            "}",
        ])
        self._ctor = {"arguments": arguments, "key_expr": key_expr,
                      "sort_arg_names": self.sort_arg_names, "bits_at_a_time": self.bits,
                      "index_dtype": self.index_dtype, "key_dtype": self.key_dtype,
                      "options": options}
        self._user = list(get_arg_list_scalar_arg_dtypes(self._parsed))
        self._vet_s = 0.0

    def _built(self, dev: cl.Device, sample: Any = None) -> _Built:
        """The key kernel on dev, vetted first where `sample()` (the call's arguments and n)
        is given (None: in the worker's check)."""

        def make() -> _Built:
            if sample is not None:
                self._vet(dev, sample)
            return _Built(compile_program(self.context, dev, self._src, self.options),
                          self._user, self._ukey.type)

        return _programs.get(self.context, (dev.int_ptr, self._src, tuple(self.options)), make)

    def _vet(self, dev: cl.Device, sample: Any) -> None:
        info = info_for(dev)
        key = f"{text_hash(self._src + chr(0) + ' '.join(self.options))}/{_HOST}"
        structs = [(dtype_to_ctype(a.dtype), a.dtype) for a in self.arguments if a.dtype.names]
        v = checked(info, "radix_sort_keys", key, check_keys, self._ctor, structs,
                    args_of=sample, extra_s=self._vet_s)
        if v.ok or v.step == "build":
            return
        if v.step == "validate":
            warnings.warn(f"cltune: RadixSort's keys differed from a one-work-item walk of its "
                          f"key expression when vetted on {info.name} ({v.reason[:300]}); it "
                          "is used", CltuneWarning, stacklevel=5)
            return
        raise NoConfigRuns(
            f"cltune: RadixSort's key expression {self._ctor['key_expr']!r:.60} {v.step} in "
            f"vetting on {info.name} ({v.reason[:300]}); it is not run in this process "
            "(CLTUNE_TRUST_DRIVER=1 runs it anyway)")

    def _launch_keys(self, b: _Built, queue: cl.CommandQueue, inv: list, n: int, mask: int,
                     keys: cla.Array, waits: list | None, serial: bool = False) -> cl.Event:
        """Every element's key into `keys` (`serial`: by one work-item, in order)."""
        wg = 1 if serial or queue.device.type & cl.device_type.CPU else 128
        groups = 1 if serial else \
            max(1, min(-(-n // (wg * 8)), 64 * max(1, queue.device.max_compute_units)))
        with b.lock:
            b.keys.set_args(*inv, n, self._ukey.type(mask), keys.data)
            return cl.enqueue_nd_range_kernel(queue, b.keys, (groups * wg,), (wg,),
                                              wait_for=waits or None)

    def _invocation(self, args: Sequence[Any]) -> tuple[list, list]:
        """(the kernel's arguments: a base and a byte offset for each array, scalars as given;
        the arrays' pending events)."""
        inv: list[Any] = []
        waits: list[Any] = []
        for d, v in zip(self._parsed, args, strict=True):
            if isinstance(d, VectorArg):
                if not isinstance(v, cla.Array):
                    raise TypeError(f"argument {d.name!r} must be a pyopencl.array.Array, not "
                                    f"{type(v).__name__}")
                if v.size and not v.flags.forc:
                    raise ValueError(f"argument {d.name!r} must be contiguous (copy a strided "
                                     "view first)")
                inv += [v.base_data, v.offset]
                waits += [e for e in v.events if e is not None]
            else:
                inv.append(v)
        return inv, waits

    def _mask(self, key_bits: int) -> tuple[int, int]:
        """(the bits pyopencl's passes would sort: key_bits rounded up to whole digits, at
        most the key's; their mask)."""
        width = 8 * self._ukey.itemsize
        bits = min(width, -(-key_bits // self.bits) * self.bits)
        return bits, (1 << bits) - 1

    def __call__(self, *args: Any, queue: cl.CommandQueue | None = None, allocator: Any = None,
                 key_bits: int | None = None, wait_for: Sequence[cl.Event] | None = None,
                 **kwargs: Any) -> tuple[tuple[cla.Array, ...], cl.Event]:
        """Sorted copies of the arrays named in sort_arg_names, in the order of that list,
        and an event, as pyopencl documents; `key_bits`: the keys' lowest bits sorted by.
        (pyopencl 2026.1's own call returns them in the order of `arguments` and, where the
        two orders differ, each named array's place holds another's sorted data.)"""
        if kwargs:
            raise TypeError(f"invalid keyword arguments: {set(kwargs)}")
        if len(args) != len(self.arguments):
            raise TypeError(f"expected {len(self.arguments)} arguments, got {len(args)}")
        first = args[self.first_array_arg_idx]
        if not isinstance(first, cla.Array):
            raise TypeError(f"argument {self.arguments[self.first_array_arg_idx].name!r} must "
                            f"be a pyopencl.array.Array, not {type(first).__name__}")
        n = len(first)
        queue = queue or first.queue
        if queue is None:
            raise TypeError("no queue: pass queue= (the arrays have none)")
        if allocator is None:  # the array's, else the queue's pool (a buffer freed after
            allocator = first.allocator or pool_for(queue)  # every call syncs NVIDIA's driver)
        if key_bits is None:
            key_bits = 8 * self.key_dtype.itemsize
        key_bits = int(key_bits)
        if key_bits < 0:
            raise ValueError(f"key_bits must be 0 or more, not {key_bits}")
        inv, waits = self._invocation(args)
        waits += list(wait_for or [])
        names = self.sort_arg_names  # pyopencl's documented order (see __call__'s text)
        by_name = dict(zip((a.name for a in self.arguments), args, strict=True))
        for nm in names:
            if by_name[nm].size < n:
                raise ValueError(f"argument {nm!r} has {by_name[nm].size} elements; the sort "
                                 f"moves {n} (the length of the last array argument)")
        if n < 2 or key_bits == 0:  # nothing to order: copies, as pyopencl's passes leave them
            outs = tuple(by_name[nm][:n].copy(queue=queue) for nm in names)
            return outs, cl.enqueue_marker(queue, wait_for=[
                e for o in outs for e in o.events] or waits or None)
        bits, mask = self._mask(key_bits)
        self._vet_s = 2e-7 * n  # the serial walk and the copies take time in proportion
        b = self._built(queue.device, lambda: (list(args), n))
        keys = empty_result(queue, (n,), self._ukey, "C", allocator)
        keys.add_event(self._launch_keys(b, queue, inv, n, mask, keys, waits))
        pos = stable_positions(queue, keys, bits)
        outs = tuple(take(queue, by_name[nm], pos, allocator) for nm in names)
        return outs, cl.enqueue_marker(queue, wait_for=[e for o in outs for e in o.events])


def check_keys(ctx: cl.Context, queue: cl.CommandQueue, dev: cl.Device, info: Any,
               ctor: dict, structs: list[tuple[str, np.dtype]], args: list, n: int) -> str:
    """Vetting's check (isolation.vetting.checked, run in the device's worker): the
    application's RadixSort made again, its key kernel run on copies of the call's arguments
    by many work-items and by one; '' or why the keys differ."""
    for name, dt in structs:
        get_or_register_dtype(name, dt)
    rs = RadixSort(ctx, **ctor)
    b = rs._built(dev)
    inv, _ = rs._invocation(args)
    mask = (1 << (8 * rs._ukey.itemsize)) - 1
    got = cla.empty(queue, (max(1, n),), rs._ukey)
    ref = cla.empty(queue, (max(1, n),), rs._ukey)
    rs._launch_keys(b, queue, inv, n, mask, got, None)
    rs._launch_keys(b, queue, inv, n, mask, ref, None, serial=True)
    g, r = got.get()[:n], ref.get()[:n]
    if not np.array_equal(g, r):
        return f"the keys of {int(np.sum(g != r))} of {n} elements differ from a serial walk's"
    return ""
