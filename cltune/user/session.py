"""The caller's side of an application's kernel in the evaluation workers: a session opened
there (the arguments sent once per worker life), each config judged there with a deadline.

A build or launch that kills a worker is a `crashed` outcome, one that misses its deadline
`hung` (the worker is killed); the next config starts a new worker and opens the session
again. The deadline of a config is at least `CLTUNE_DEADLINE_S` (20 s) and 120 s (a build
and eight launches of a large problem on a CPU), and ten times the longest evaluation seen so
far.

Where the order of configs is known (the caller passes the next ones), configs are judged
ahead of their turn: on a device with several lanes (`lanes.lanes_for`) each in a worker of
its own, their builds at once and their checks and timings one at a time under the tune's
lock (on a CPU device their checks at once too, and nothing beside a timing); with one
lane, the next config is built in a thread of the worker while one is timed (devices that
are not the host's CPU).
"""

from __future__ import annotations

import dataclasses
import os
import queue
import tempfile
import time
import uuid
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from cltune.device.info import DeviceInfo
from cltune.isolation.worker import Worker, WorkerFailure, deadline_floor, worker_for
from cltune.user import remote
from cltune.user.lanes import gate_of, lanes_for


class _Lane:
    """One worker and the generation of it the session was opened in."""

    def __init__(self, worker: Worker) -> None:
        self.worker, self.generation = worker, -1


def _key(job: remote.Job) -> tuple:
    return (job.text, job.name, tuple(job.gsize), tuple(job.lsize))


class Session:
    def __init__(self, info: DeviceInfo, spec: remote.Spec, variant: str,
                 planned: int | None = None) -> None:
        """`planned`: how many configs will be judged in an order known ahead (0: none, a
        search that picks each from the ones before; None: not known), for `lanes_for`."""
        self.info, self.variant = info, variant
        self.n_lanes = lanes_for(info, spec.arguments, planned)
        self.lock_path = ""
        if self.n_lanes > 1:
            fd, self.lock_path = tempfile.mkstemp(prefix="cltune-timing-", suffix=".lock")
            os.close(fd)
            spec = dataclasses.replace(spec, timing_lock=self.lock_path,
                                       shared_builds=info.type == "cpu")
        self.spec = spec
        self.lanes = [_Lane(worker_for(info, slot)) for slot in range(self.n_lanes)]
        self.worker = self.lanes[0].worker
        self.sid = uuid.uuid4().hex
        self.longest_s = 0.0
        #: with one lane: build the next config while this one is timed: not on the host's
        #: CPU, whose cores the timed kernel uses (CLTUNE_KERNEL_PREBUILD=1/0 forces it)
        force = os.environ.get("CLTUNE_KERNEL_PREBUILD", "").strip()
        self.prebuild = self.n_lanes == 1 and (
            force == "1" if force in ("0", "1") else info.type != "cpu")
        self._free: queue.SimpleQueue[_Lane] = queue.SimpleQueue()
        for lane in self.lanes:
            self._free.put(lane)
        self._pool = ThreadPoolExecutor(self.n_lanes, thread_name_prefix="cltune-lane") \
            if self.n_lanes > 1 else None
        self._pending: dict[tuple, Future] = {}

    @property
    def ahead(self) -> int:
        """How many of the next configs `evaluate` takes ahead."""
        return self.n_lanes - 1 if self._pool is not None else int(self.prebuild)

    def deadline(self) -> float:
        return max(120.0, deadline_floor(), 10 * self.longest_s)

    def _open(self, lane: _Lane) -> None:
        gen = lane.worker.ensure()
        if gen != lane.generation:
            lane.worker.call("check", "kernel-session", self.variant, remote.open_session,
                             (self.sid, self.spec), deadline_s=max(120.0, deadline_floor()))
            lane.generation = lane.worker.generation

    def evaluate(self, job: remote.Job, ahead: Sequence[remote.Job] = ()) -> dict[str, Any]:
        """The workers' verdict on one config (`remote.evaluate`'s dict), or a `crashed`,
        `hung` or `error` one when a worker could not answer. `ahead`: the configs judged
        next, in order (as many as `self.ahead` are taken). With several lanes they are
        judged meanwhile in the other workers; with one, the next is built in the worker
        while this one is timed, and a config whose evaluation failed while another was
        built ahead is judged again alone, so that the other one's crash is never its."""
        if self._pool is None:
            nxt = ahead[0] if ahead and self.prebuild else None
            out = self._evaluate(self.lanes[0], job, nxt)
            if nxt is not None and out["step"] in ("crashed", "hung", "error"):
                out = self._evaluate(self.lanes[0], job, None)
            return out
        fut = self._pending.pop(_key(job), None) or self._submit(job)
        for a in ahead:
            if len(self._pending) >= self.n_lanes - 1:
                break
            if _key(a) not in self._pending and _key(a) != _key(job):
                self._pending[_key(a)] = self._submit(a)
        return fut.result()

    def _submit(self, job: remote.Job) -> Future:
        assert self._pool is not None
        return self._pool.submit(self._on_a_free_lane, job)

    def _on_a_free_lane(self, job: remote.Job) -> dict[str, Any]:
        lane = self._free.get()
        try:
            return self._evaluate(lane, job, None)
        finally:
            self._free.put(lane)

    def _evaluate(self, lane: _Lane, job: remote.Job, ahead: remote.Job | None,
                  ) -> dict[str, Any]:
        t0 = time.monotonic()
        try:
            for _ in range(2):
                self._open(lane)
                out = lane.worker.call("check", "kernel", self.variant, remote.evaluate,
                                       (self.sid, job, self.variant, ahead),
                                       deadline_s=self.deadline())
                if out.get("step") != "lost":
                    break
                lane.generation = -1
        except WorkerFailure as e:
            if e.kind == "error":  # a context in that state is not trusted for the next config
                lane.worker.close()
            lane.generation = -1
            out = {"step": e.kind, "reason": e.reason, "times": None}
        self.longest_s = max(self.longest_s, time.monotonic() - t0)
        return out

    def run_once(self, job: remote.Job) -> list:
        """run_kernel's one launch in the worker; its outputs (WorkerFailure when it failed)."""
        return self.worker.call("check", "kernel-run", self.variant, remote.run_once,
                                (self.spec, job), deadline_s=self.deadline())

    def close(self) -> None:
        """Configs judged ahead and never asked for are dropped (those running finish); the
        sessions are closed, and the workers past the first stopped (their contexts and
        copies of the arguments freed)."""
        if self._pool is not None:
            for f in self._pending.values():
                f.cancel()
            self._pending.clear()
            self._pool.shutdown(wait=True)
        for i, lane in enumerate(self.lanes):
            if i > 0:
                lane.worker.close()
                continue
            if lane.generation == lane.worker.generation and lane.worker.alive:
                try:
                    lane.worker.call("check", "kernel-session", self.variant,
                                     remote.close_session, (self.sid,),
                                     deadline_s=deadline_floor())
                except WorkerFailure:
                    pass
        for path in (self.lock_path, gate_of(self.lock_path)) if self.lock_path else ():
            try:
                os.unlink(path)
            except OSError:
                pass
