"""A family's tuning target as the tuner, `cltune verify` and the runtime's vetting drive it:
its evaluations run in the device's worker process (`worker.Worker`), so that a driver that
crashes or hangs is a failed evaluation with its reason, never the end of the caller.

The caller keeps its own target for what needs no kernel (suggestions, seeds, keys), with the
space the worker made (`space()`: the 1-D family's needs probe builds); `RemoteTarget` stands
for the same target inside the worker: made there from the same family, variant and options
(`isolation.codec` carries an application's kernel object over), opened again after the worker
was restarted.

Deadlines: a request may take `worker.deadline_floor()` seconds (20 by default,
`CLTUNE_DEADLINE_S`), or 10x the slowest evaluation of this target that passed, whichever
is more; making a size class's input may take longer (it uploads, and for some families
computes the reference).
"""

from __future__ import annotations

import itertools
import threading
import time
from typing import Any

from cltune.core import strategies
from cltune.core.outcome import Outcome
from cltune.isolation.worker import Worker, WorkerFailure, deadline_floor

SLOWEST_FACTOR = 10.0
PREPARE_FACTOR = 6.0  # making an input and its reference: a multiple of the floor

_keys = itertools.count(1)


class RemoteTarget:
    """One family variant on one device, evaluated in `worker`. `options` are the target
    factory's keyword arguments (as `targets.make_target` takes them)."""

    def __init__(self, worker: Worker, family: str, variant: str, **options: Any) -> None:
        self.worker, self.family, self.variant, self.options = worker, family, variant, options
        self.key = next(_keys)
        self._generation = -1
        self._space: Any = None
        self._sizes: dict[Any, tuple[int, int]] = {}
        self.slowest_ok_s = 0.0
        self._lock = threading.Lock()

    def deadline_s(self) -> float:
        return max(deadline_floor(), SLOWEST_FACTOR * self.slowest_ok_s)

    def _open(self) -> None:
        """Make the target in the worker unless the running worker has it (without its
        space, which `space()` asks for: vetting one config needs none)."""
        gen = self.worker.ensure()
        if gen != self._generation:
            self._space = None
            self.worker.call(
                "open", self.key, self.family, self.variant, self.options, strategies.added(),
                deadline_s=max(60.0, deadline_floor() * PREPARE_FACTOR))
            self._generation = gen

    def _call(self, op: str, *args: Any, deadline_s: float) -> Any:  # noqa: ANN401
        with self._lock:
            self._open()
            return self.worker.call(op, self.key, *args, deadline_s=deadline_s)

    def space(self) -> Any:  # noqa: ANN401
        """The target's space as the worker made it (the 1-D family's and the expressions'
        along axes need probe builds, which are driver work: they run there, never in the
        caller). WorkerFailure when that crashes or hangs."""
        with self._lock:
            self._open()
            if self._space is None:
                self._space = self.worker.call(
                    "space", self.key, deadline_s=max(60.0, deadline_floor() * PREPARE_FACTOR))
            return self._space

    def prepare(self, size_key: Any) -> tuple[int, int]:  # noqa: ANN401
        """(elements, bytes read) of the size class's input, made in the worker; raises
        WorkerFailure when even that crashes or hangs, ValueError when the target refuses
        the input (as it would in this process)."""
        hit = self._sizes.get(size_key)
        if hit is None:
            try:
                hit = self._sizes[size_key] = tuple(self._call(
                    "prepare", size_key,
                    deadline_s=max(60.0, deadline_floor() * PREPARE_FACTOR)))
            except WorkerFailure as e:
                if e.value_error:  # bad input (the target's own ValueError), as in-process
                    raise ValueError(e.reason.partition(": ")[2] or e.reason) from None
                raise
        return hit

    def evaluate(self, cfg: Any, size_key: Any, *, check: bool = True,  # noqa: ANN401
                 max_rel_error: float | None = None, vet: bool = False,
                 deadline_s: float | None = None) -> Outcome:
        """The family's evaluate of `cfg` on the class's input, in the worker; a crash, a
        hang or an error there is an Outcome of step `crashed` / `hung` / `error`. With
        `vet`, the config is built, launched and validated but not timed. `deadline_s`: the
        request's own (else `deadline_s()`)."""
        try:
            n, nbytes = self.prepare(size_key)
        except WorkerFailure as e:
            return Outcome(cfg, e.kind, 0, 0, f"making the input: {e.reason}")
        except ValueError as e:
            return Outcome(cfg, "error", 0, 0, f"making the input: {e}")
        t0 = time.monotonic()
        try:
            out = self._call("evaluate", size_key, cfg.to_dict(), check, max_rel_error, vet,
                             deadline_s=deadline_s or self.deadline_s())
        except WorkerFailure as e:
            if e.kind == "error":
                # the driver raised where the family's own checks did not expect it; a
                # context in that state is not trusted for the next config
                self.worker.close()
                return Outcome(cfg, "error", n, nbytes, f"driver error: {e.reason}")
            return Outcome(cfg, e.kind, n, nbytes, e.reason)
        if out.ok:
            self.slowest_ok_s = max(self.slowest_ok_s, time.monotonic() - t0)
        return out

    def close(self) -> None:
        """Drop this target (and its input) in the worker; nothing when the worker is gone."""
        with self._lock:
            if self.worker.alive and self._generation == self.worker.generation:
                try:
                    self.worker.call("close", self.key, deadline_s=deadline_floor())
                except WorkerFailure:
                    pass
            self._generation = -1

    def side_by_side(self, cfgs: list[Any], size_key: Any,  # noqa: ANN401
                     rounds: int) -> tuple[list[list[float]], list[list[float]]]:
        """Device seconds and seconds per call of each config (all validated before), in
        `rounds` interleaved rounds, in the worker."""
        return self._call("side_by_side", size_key, [c.to_dict() for c in cfgs], rounds,
                          deadline_s=self.deadline_s() * max(1, len(cfgs)) * rounds)
