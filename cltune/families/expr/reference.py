"""Validation of an expression's config: the tuning input of a size class (`ExprBench`), the
comparison with the kernel's reference (structs field by field, floats within the config's
error bound), and `NoReference` for a kernel that cannot say what it should give."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pyopencl as cl
import pyopencl.array as cla
from pyopencl.tools import VectorArg

from cltune.core.inputs import close
from cltune.families.expr.launch import ExprLauncher
from cltune.opencl.measure import Timed


class NoReference(ValueError):
    """The kernel has no way to know its expected results (see ExprTarget.reference)."""


# ---- validation -----------------------------------------------------------------------------
class ExprBench(Timed):
    """One size class's input on the device, its reference results, and timing."""

    def __init__(self, target: Any, args: tuple[Any, ...],
                 n: int | None = None) -> None:  # an ExprTarget
        """`n`: the element count, for a kernel without vector arguments (else the first
        vector's length)."""
        self.target, self.queue = target, target.queue
        spec = target.spec
        if len(args) != len(spec.arguments):
            raise ValueError(f"sample arguments: expected {len(spec.arguments)}, "
                             f"got {len(args)}")
        self.args = tuple(a.with_queue(self.queue) if isinstance(a, cla.Array) else a
                          for a in args)
        vecs = [a for a, t in zip(self.args, spec.arguments, strict=True)
                if isinstance(t, VectorArg)]
        if vecs:
            self.n = vecs[0].size
        elif n is None:
            raise ValueError("a kernel without vector arguments needs the element count n")
        else:
            self.n = int(n)
        self.nbytes = sum(v.nbytes for v in vecs)
        self.inv: list[Any] = []
        for a, t in zip(self.args, spec.arguments, strict=True):
            self.inv += [a.base_data, a.offset] if isinstance(t, VectorArg) else [a]
        self.res = cla.empty(self.queue, (), spec.dtype_result)
        self._app_queue: cl.CommandQueue | None = None
        # the full input, and an odd-sized slice from element 1 (tails, offsets)
        tail = (1, self.n - 1) if self.n > 3 else (0, self.n)
        self.ranges = tuple(dict.fromkeys(((0, self.n), tail)))
        try:
            self.refs: list[Any] | None = [target.reference(self.args, lo, hi)
                                           for lo, hi in self.ranges]
        except NoReference:
            if not target.answers_optional:
                raise
            self.refs = None

    def run(self, la: ExprLauncher, queue: cl.CommandQueue | None = None) -> list[cl.Event]:
        return la.enqueue(queue or self.queue, self.inv, 0, 1, self.n, self.res.base_data,
                          self.res.offset)

    def validate(self, la: ExprLauncher, max_rel_error: float | None) -> tuple[str, float]:
        """('' or why not, largest relative error seen) against the reference."""
        dt = self.target.spec.dtype_result
        worst = 0.0
        if self.refs is None:  # vetting a kernel without a reference: it must run, that is all
            for lo, hi in self.ranges:
                la.enqueue(self.queue, self.inv, lo, 1, hi - lo, self.res.base_data,
                           self.res.offset)
            self.res.get()
            return "", worst
        for (lo, hi), ref in zip(self.ranges, self.refs, strict=True):
            la.enqueue(self.queue, self.inv, lo, 1, hi - lo, self.res.base_data,
                       self.res.offset)
            got = self.res.get()
            why = close(got, ref, dt, self.target.rtol(la, hi - lo))
            if why:
                return f"n={hi - lo}: {why}", math.inf
            if dt.kind == "f" and np.isfinite(ref) and ref != 0:
                worst = max(worst, abs(float(got) - float(ref)) / abs(float(ref)))
        if max_rel_error is not None and worst > max_rel_error:
            return f"error {worst:.3g} > --max-rel-error {max_rel_error:.3g}", worst
        return "", worst
