"""Timing with OpenCL profiling events: warm-up, repeats, median; blocking waits only.

The host never polls: it waits with `event.wait()` / `queue.finish()`. On a 2-core CPU device a
polling host steals a worker thread and inflates kernel times.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

import numpy as np
import pyopencl as cl

from cltune.core.outcome import Timing


def profiling_queue(ctx: cl.Context, dev: cl.Device) -> cl.CommandQueue:
    return cl.CommandQueue(ctx, dev, properties=cl.command_queue_properties.PROFILING_ENABLE)


def device_seconds(events: list[cl.Event]) -> float:
    """From the first kernel's start to the last one's end."""
    events[-1].wait()
    return (events[-1].profile.end - events[0].profile.start) * 1e-9


class Timed:
    """Timing of any family's bench: `run(launcher, queue=None)` enqueues one reduction and
    returns its kernel events; `queue` is a profiling queue."""

    queue: cl.CommandQueue

    def run(self, launcher: Any, queue: cl.CommandQueue | None = None) -> list[cl.Event]:
        raise NotImplementedError

    def per_call(self, launcher: Any, *, budget_s: float = 0.05) -> float:
        """Wall seconds per call as an application sees them: back-to-back enqueues on an
        ordinary (non-profiling) in-order queue, launch and host cost included, one blocking
        wait at the end. As many calls as fit in `budget_s` (at least 3, at most 2000)."""
        if getattr(self, "_app_queue", None) is None:
            self._app_queue = cl.CommandQueue(self.queue.context, self.queue.device)
        q = self._app_queue

        def call() -> list[cl.Event]:
            return self.run(launcher, q)

        call()
        q.finish()
        t0 = time.perf_counter()
        call()
        q.finish()
        calls = max(3, min(2000, int(budget_s / max(time.perf_counter() - t0, 1e-7))))
        t0 = time.perf_counter()
        for _ in range(calls):
            evs = call()
        evs[-1].wait()
        return (time.perf_counter() - t0) / calls

    def time(self, launcher: Any, *, warmup: int = 2, min_repeats: int = 5,
             max_repeats: int = 200, budget_s: float = 0.3) -> Timing:
        for _ in range(warmup):
            self.run(launcher)
        self.queue.finish()
        samples: list[float] = []
        t0 = time.perf_counter()
        while len(samples) < max_repeats:
            samples.append(device_seconds(self.run(launcher)))
            if len(samples) >= min_repeats and time.perf_counter() - t0 > budget_s:
                break
        return Timing(statistics.median(samples), len(samples), tuple(samples))


class Bench(Timed):
    """Input on the device for timing one launcher after another on the same data."""

    def __init__(self, ctx: cl.Context, queue: cl.CommandQueue, xs: list[np.ndarray],
                 out_dtype: np.dtype) -> None:
        mf = cl.mem_flags
        self.ctx, self.queue = ctx, queue
        self._app_queue: cl.CommandQueue | None = None
        self.n = xs[0].size
        self.bufs = [cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=a) for a in xs]
        self.out = cl.Buffer(ctx, mf.READ_WRITE, max(8, out_dtype.itemsize))
        self.nbytes = sum(a.nbytes for a in xs)

    def run(self, launcher: Any, queue: cl.CommandQueue | None = None) -> list[cl.Event]:
        """One reduction of the input on `queue` (default: the profiling queue); a family's
        bench with another launch signature overrides this (the axis family's AxisBench)."""
        y = self.bufs[1] if len(self.bufs) > 1 else None
        return launcher.enqueue(queue or self.queue, self.bufs[0], 0, self.n, self.out, y=y)
