"""The tuning input of the `expr_axis` family (expression reductions along an axis): one size
class's view of the sample arguments on the device, the outputs every config must give, and
timing (see expr_axis/target.py for the target that drives it).

Expected outputs: the heuristic config's, every one of them, and at a sample of outputs
(first, last and spread between) the kernel's host `reference` applied along the axis
(numpy for cltune.stats.api), on the class's view and on an awkward view of the same elements
(odd lengths; for cols, two outer rows, so a strip of outputs crosses from one to the next).
The heuristic must agree with the reference, or there is nothing to tune against. A kernel
without a reference is compared with the heuristic's outputs only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyopencl as cl
import pyopencl.array as cla
from pyopencl.tools import VectorArg

from cltune.core.inputs import close
from cltune.families.expr_axis.config import AxisExprConfig
from cltune.families.expr_axis.defaults import heuristic_build, short_rows
from cltune.families.expr_axis.kernel import AxisBuilt, build
from cltune.families.expr_axis.launch import AxisPlan, device_plan
from cltune.opencl.expression import ExprSpec
from cltune.opencl.measure import Timed

#: outputs per view checked against the host reference (first, last and spread between)
SAMPLED_OUTPUTS = 768

View = tuple[int, int, int]


# ---- validation ------------------------------------------------------------------------------
# ---- the input of a size class ------------------------------------------------------------
def awkward(view: View) -> View | None:
    """A view over at most the same elements with odd lengths (tails everywhere); for cols,
    two outer rows, so a strip of outputs crosses from one to the next."""
    outer, r, inner = view
    n = outer * r * inner
    if inner == 1:
        r2 = r + 3
        o2 = n // r2 - 1
        if o2 < 1:
            r2, o2 = max(1, r - 1), 1
        return (o2, r2, 1) if (o2, r2) != (outer, r) else None
    i2 = inner + 3
    r2 = n // (2 * i2) - 1
    if r2 >= 1:
        return (2, r2, i2)
    i2 = inner - 1
    r2 = n // i2 - 1 if i2 > 1 else 0
    return (1, r2, i2) if r2 >= 1 else None


@dataclass
class _Check:
    view: View
    expected: Any  # the heuristic config's outputs
    expected_rtol: float  # their tolerance
    samples: np.ndarray  # output indices checked against the host reference
    refs: list  # the reference at those outputs (empty: no reference)


class ExprAxisBench(Timed):
    """One size class's input on the device (the class's view and an awkward one over the
    same elements), the expected outputs, timing."""

    def __init__(self, target: Any, args: tuple[Any, ...], view: View) -> None:
        self.target, self.queue, self.view = target, target.queue, view
        spec = target.spec
        self.args = tuple(a.with_queue(self.queue) if isinstance(a, cla.Array) else a
                          for a in args)
        self.inv: list[Any] = []
        vecs = []
        for a, t in zip(self.args, spec.arguments, strict=True):
            if isinstance(t, VectorArg):
                vecs.append(a)
                self.inv += [a.base_data, a.offset]
            else:
                self.inv.append(a)
        self.n = math.prod(view)
        if not vecs or any(v.size < self.n for v in vecs):
            raise ValueError(f"sample arguments: vectors of {self.n} elements needed")
        self.nbytes = sum(self.n * v.dtype.itemsize for v in vecs)
        views = [view] + [v for v in (awkward(view),) if v is not None]
        self.res = cla.empty(self.queue, max(o * i for o, _, i in views), spec.dtype_result)
        self._app_queue: cl.CommandQueue | None = None
        host = [np.ravel(a.get(), order="K") if isinstance(a, cla.Array) else a
                for a in self.args]
        base = heuristic_build(target.ctx, target.dev, target.info, spec, *view)
        self.heuristic = AxisLaunch(target, base.config)
        self.checks = [self._check(v, host) for v in views]

    def _check(self, view: View, host: list) -> _Check:
        got = self.outputs(self.heuristic, view)
        tol = self.target.rtol(self.heuristic, view)
        ref = getattr(self.target.kernel, "reference", None)
        nout = view[0] * view[2]
        if ref is None:
            return _Check(view, got, tol, np.zeros(0, np.int64), [])
        k = min(nout, SAMPLED_OUTPUTS)
        idx = np.unique(np.concatenate([np.arange(min(nout, k // 3)),
                                        np.arange(max(0, nout - k // 3), nout),
                                        np.linspace(0, nout - 1, k - 2 * (k // 3), dtype=np.int64)
                                        ]).astype(np.int64))
        refs = [ref(along(host, self.target.spec, view, int(p)), 0, view[1]) for p in idx]
        chk = _Check(view, got, tol, idx, refs)
        why, _ = self.compare(chk, got, self.heuristic)
        if why:
            raise ValueError(f"the heuristic config {self.heuristic.cfg.short()} disagrees "
                             f"with the kernel's reference on {view}: {why}")
        return chk

    def run(self, la: AxisLaunch, queue: cl.CommandQueue | None = None,
            view: View | None = None) -> list[cl.Event]:
        v = view or self.view
        return la.reducer.launch(queue or self.queue, la.built(v), la.plan(v), self.inv, *v,
                                 self.res.base_data, self.res.offset)

    def outputs(self, la: AxisLaunch, view: View) -> np.ndarray:
        """The config's outputs of the view (the result buffer is overwritten with a pattern
        first, so that an output the kernel leaves out never passes as the last config's)."""
        cl.enqueue_fill_buffer(self.queue, self.res.base_data, np.uint8(0xA5), self.res.offset,
                               self.res.nbytes)
        self.run(la, view=view)
        return self.res.get(queue=self.queue)[:view[0] * view[2]]

    def compare(self, chk: _Check, got: np.ndarray, la: AxisLaunch) -> tuple[str, float]:
        """('' or why not, the largest relative error against the reference samples)."""
        dt = self.target.spec.dtype_result
        tol = self.target.rtol(la, chk.view)
        why = close(got, chk.expected, dt, tol + chk.expected_rtol)
        if why:
            return f"{chk.view}: differs from the heuristic config's outputs: {why}"[:400], 0.0
        worst = 0.0
        if chk.refs:
            want = np.array(chk.refs, dtype=dt)
            why = close(got[chk.samples], want, dt, tol)
            if why:
                return f"{chk.view}: differs from the reference: {why}"[:400], 0.0
            if dt.kind == "f" and not dt.names:
                w = want.astype(np.float64)
                ok = np.isfinite(w)
                scale = float(np.max(np.abs(w[ok]), initial=0.0))
                if scale > 0:
                    worst = float(np.max(np.abs(got[chk.samples][ok] - w[ok]), initial=0.0)
                                  / scale)
        return "", worst

    def validate(self, la: AxisLaunch, max_rel_error: float | None) -> tuple[str, float]:
        worst = 0.0
        for chk in self.checks:
            why, err = self.compare(chk, self.outputs(la, chk.view), la)
            if why:
                return why, math.inf
            worst = max(worst, err)
        if max_rel_error is not None and worst > max_rel_error:
            return f"error {worst:.3g} > --max-rel-error {max_rel_error:.3g}", worst
        return "", worst


def along(host: list, spec: ExprSpec, view: View, p: int) -> list:
    """The host arguments of output p of the view: each vector's elements along the axis (a
    contiguous copy), scalars as they are; a 1-D reference over 0..r gives that output."""
    _, r, inner = view
    o, q = divmod(p, inner)
    lo = o * r * inner + q
    return [np.ascontiguousarray(h[lo:lo + r * inner:inner]) if isinstance(t, VectorArg)
            else h for h, t in zip(host, spec.arguments, strict=True)]


class AxisLaunch:
    """A config of the target: its build (on first use) and plans per view."""

    def __init__(self, target: Any, cfg: AxisExprConfig) -> None:
        self.target, self.cfg, self.reducer = target, cfg, target.reducer
        self._built: AxisBuilt | None = None
        self._plans: dict[View, AxisPlan] = {}

    def built(self, view: View | None = None) -> AxisBuilt:
        """The config's build; for a `view` of short rows, its build for their length (as
        the runtime serves it: defaults.short_rows)."""
        t = self.target
        if view is not None:
            whole = short_rows(t.info, self.cfg, self.plan(view), *view,
                               t.spec.dtype_out.itemsize)
            if whole:
                return build(t.ctx, t.dev, t.info, t.spec, self.cfg, whole)
        if self._built is None:
            self._built = build(t.ctx, t.dev, t.info, t.spec, self.cfg)
        return self._built

    def plan(self, view: View) -> AxisPlan:
        p = self._plans.get(view)
        if p is None:
            p = self._plans[view] = device_plan(self.cfg, self.target.info, *view)
        return p
