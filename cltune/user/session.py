"""The caller's side of an application's kernel in the evaluation worker: a session opened
there (the arguments sent once per worker life), each config judged there with a deadline.

A build or launch that kills the worker is a `crashed` outcome, one that misses its deadline
`hung` (the worker is killed); the next config starts a new worker and opens the session
again. The deadline of a config is at least `CLTUNE_DEADLINE_S` (20 s) and 120 s (a build
and eight launches of a large problem on a CPU), and ten times the longest evaluation seen so
far.
"""

from __future__ import annotations

import os
import time
import uuid
from typing import Any

from cltune.device.info import DeviceInfo
from cltune.isolation.worker import WorkerFailure, deadline_floor, worker_for
from cltune.user import remote


class Session:
    def __init__(self, info: DeviceInfo, spec: remote.Spec, variant: str) -> None:
        self.info, self.spec, self.variant = info, spec, variant
        self.worker = worker_for(info)
        self.sid = uuid.uuid4().hex
        self.generation = -1
        self.longest_s = 0.0
        #: build the next config while this one is timed: not on the host's CPU, whose cores
        #: the timed kernel uses (CLTUNE_KERNEL_PREBUILD=1/0 forces it)
        force = os.environ.get("CLTUNE_KERNEL_PREBUILD", "").strip()
        self.prebuild = force == "1" if force in ("0", "1") else info.type != "cpu"

    def deadline(self) -> float:
        return max(120.0, deadline_floor(), 10 * self.longest_s)

    def _open(self) -> None:
        gen = self.worker.ensure()
        if gen != self.generation:
            self.worker.call("check", "kernel-session", self.variant, remote.open_session,
                             (self.sid, self.spec), deadline_s=max(120.0, deadline_floor()))
            self.generation = self.worker.generation

    def evaluate(self, job: remote.Job, ahead: remote.Job | None = None) -> dict[str, Any]:
        """The worker's verdict on one config (`remote.evaluate`'s dict), or a `crashed`,
        `hung` or `error` one when the worker could not answer. `ahead` (the next config) is
        built there meanwhile where `prebuild` is on (devices that are not the host's CPU:
        the build overlaps the timing); a config whose evaluation failed while another was
        built ahead is judged again alone, so that the other one's crash is never its."""
        out = self._evaluate(job, ahead if self.prebuild else None)
        if ahead is not None and self.prebuild and out["step"] in ("crashed", "hung", "error"):
            out = self._evaluate(job, None)
        return out

    def _evaluate(self, job: remote.Job, ahead: remote.Job | None) -> dict[str, Any]:
        t0 = time.monotonic()
        try:
            for _ in range(2):
                self._open()
                out = self.worker.call("check", "kernel", self.variant, remote.evaluate,
                                       (self.sid, job, self.variant, ahead),
                                       deadline_s=self.deadline())
                if out.get("step") != "lost":
                    break
                self.generation = -1
        except WorkerFailure as e:
            if e.kind == "error":  # a context in that state is not trusted for the next config
                self.worker.close()
            self.generation = -1
            out = {"step": e.kind, "reason": e.reason, "times": None}
        self.longest_s = max(self.longest_s, time.monotonic() - t0)
        return out

    def run_once(self, job: remote.Job) -> list:
        """run_kernel's one launch in the worker; its outputs (WorkerFailure when it failed)."""
        return self.worker.call("check", "kernel-run", self.variant, remote.run_once,
                                (self.spec, job), deadline_s=self.deadline())

    def close(self) -> None:
        if self.generation == self.worker.generation and self.worker.alive:
            try:
                self.worker.call("check", "kernel-session", self.variant,
                                 remote.close_session, (self.sid,), deadline_s=deadline_floor())
            except WorkerFailure:
                pass
