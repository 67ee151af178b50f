"""The worker's side of an application's kernel: where it is built, run, checked and timed.

Everything here runs in the device's evaluation worker (`isolation.worker`), reached through
its `check` request by reference (`session.py` on the caller's side): a build that crashes the
driver, a launch that never returns, ends the worker, not the application. A session keeps
the arguments on the device between configs (uploaded once, as Kernel Tuner does), the
answer, the check and the timing options; the worker keeps it until it is closed or dies.

One config (`evaluate`): build, make the kernel, set the arguments, then, when there is an
answer or a verify function, reset the outputs from the host copies, run once and compare;
then one untimed launch (unless the check ran it), then `iterations` timed launches, each
waited for, timed by profiling events (ms). What stopped it is the outcome's `step`:
`build` (the compiler refused it), `launch` (the driver refused the launch: too many
resources, a work-group the kernel cannot take), `validate` (a wrong answer, with where and
by how much); a missing kernel name is `usage`.
"""

from __future__ import annotations

import inspect
import re
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from cltune.isolation import faults
from cltune.opencl.errors import compiler_message, one_line
from cltune.opencl.measure import profiling_queue
from cltune.user.lanes import held

_LOCAL_MEM = re.compile(r"uses too much shared data|local memory limit exceeded|"
                        r"local memory \(\d+\) exceeds limit \(\d+\)|"
                        r"CL_OUT_OF_RESOURCES|exceeds CL_DEVICE_LOCAL_MEM_SIZE", re.IGNORECASE)


@dataclass
class Spec:
    """What a session holds (sent once per worker life): the arguments, the answer (None
    entries: not checked), the verify function, atol, iterations, compiler options."""

    arguments: list
    answer: list | None = None
    verify: Any = None
    atol: float = 1e-6
    iterations: int = 7
    compiler_options: list = field(default_factory=list)
    #: Kernel Tuner's benchmark observers (copies in the worker): hooks around each timed
    #: launch, `get_results()` merged into the config's result
    observers: list = field(default_factory=list)
    #: a lock file held while a config is checked and timed ('' for none): where several
    #: workers judge configs at once (`lanes`), their builds overlap and their timings do not
    timing_lock: str = ""
    #: on a CPU device: builds and checks hold `timing_lock` shared (at once, a core each)
    #: and only the timed launches hold it alone (`lanes.held`)
    shared_builds: bool = False


@dataclass
class Job:
    """One config: its params (fault hooks match them), the prepared source, the kernel's name
    after substitution, and the launch sizes."""

    params: dict
    text: str
    name: str
    gsize: tuple
    lsize: tuple


class _Session:
    def __init__(self, ctx: cl.Context, dev: cl.Device, spec: Spec) -> None:
        self.ctx, self.dev, self.spec = ctx, dev, spec
        #: prepared source -> (the thread building it, [program or error, seconds])
        self.ahead: dict[str, tuple[threading.Thread, list]] = {}
        self.queue = profiling_queue(ctx, dev)
        self.args: list = []
        self.host: list = []
        for a in spec.arguments:
            if isinstance(a, cla.Array):  # arrived as the worker's own copy (codec)
                self.args.append(a.data)
                self.host.append(a.get())
            elif isinstance(a, np.ndarray):
                h = np.ascontiguousarray(a)
                self.args.append(cl.Buffer(ctx, cl.mem_flags.READ_WRITE
                                           | cl.mem_flags.COPY_HOST_PTR, hostbuf=h)
                                 if h.nbytes else cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 1))
                self.host.append(h)
            else:
                self.args.append(a)
                self.host.append(a)
        ans = spec.answer
        self.synced = [ans[i] is not None for i in range(len(ans))] if ans is not None else \
            [isinstance(h, np.ndarray) for h in self.host]
        self.checks = ans is not None or spec.verify is not None
        for o in spec.observers:
            if hasattr(o, "register_device"):
                o.register_device(dev)


_sessions: dict[str, _Session] = {}


def open_session(ctx: cl.Context, _queue: cl.CommandQueue, dev: cl.Device, _info: Any,  # noqa: ANN401
                 sid: str, spec: Spec) -> str:
    _sessions[sid] = _Session(ctx, dev, spec)
    return ""


def close_session(_ctx: Any, _queue: Any, _dev: Any, _info: Any, sid: str) -> str:  # noqa: ANN401
    _sessions.pop(sid, None)
    return ""


def evaluate(_ctx: Any, _queue: Any, _dev: Any, _info: Any, sid: str, job: Job,  # noqa: ANN401
             variant: str, ahead: Job | None = None) -> dict:
    """One config judged in this worker: a dict with `step` ('timed' when it ran right),
    `reason`, `times` (ms), `compile_time`, `verification_time`, `benchmark_time` (ms).
    `ahead`: the next config, built in a thread while this one is checked and timed (a GPU's
    timing leaves the host's cores idle; the caller sends it only there)."""
    s = _sessions.get(sid)
    if s is None:
        return {"step": "lost", "reason": "session not open in this worker"}
    action = faults.matching({"family": "kernel", "variant": variant,
                              **{k: str(v) for k, v in job.params.items()}})
    if action and action != "wrong":
        print(f"cltune test fault: {action} on {job.params}", file=sys.stderr, flush=True)
        faults.fire(action)
    out = _judge(s, job, ahead)
    if action == "wrong" and out["step"] == "timed":
        out = {**out, "step": "validate", "times": None,
               "reason": "wrong answer (injected by CLTUNE_TEST_FAULT)"}
    return out


def _build(s: _Session, text: str) -> tuple[cl.Program, float]:
    """The program of `text` and its build's seconds: the one built ahead, else built now."""
    hit = s.ahead.pop(text, None)
    if hit is not None:
        hit[0].join()
        got, secs = hit[1]
        if isinstance(got, Exception):
            raise got
        return got, secs
    t0 = time.perf_counter()
    prg = cl.Program(s.ctx, text).build(options=list(s.spec.compiler_options), devices=[s.dev])
    return prg, time.perf_counter() - t0


def _build_ahead(s: _Session, text: str) -> None:
    if text in s.ahead:
        return
    box: list = [None, 0.0]

    def run() -> None:
        t0 = time.perf_counter()
        try:
            box[0] = cl.Program(s.ctx, text).build(options=list(s.spec.compiler_options),
                                                   devices=[s.dev])
        except Exception as e:  # noqa: BLE001 - raised where the config is judged
            box[0] = e
        box[1] = time.perf_counter() - t0

    t = threading.Thread(target=run, name="cltune-build-ahead", daemon=True)
    s.ahead[text] = (t, box)
    t.start()


def _judge(s: _Session, job: Job, ahead: Job | None = None) -> dict:
    out: dict[str, Any] = {"step": "", "reason": "", "times": None, "compile_time": 0.0,
                           "verification_time": 0.0, "benchmark_time": 0.0}
    lock = s.spec.timing_lock
    if not (lock and s.spec.shared_builds):  # one worker, or a GPU: builds outside the lock
        got = _prepare(s, job, ahead, out)
        if got is None:
            return out
        with held(lock):
            return _check_and_time(s, got, job, out)
    with held(lock, shared=True):  # a CPU's workers: build and check at once, time alone
        got = _prepare(s, job, ahead, out)
        if got is None or not _first_run(s, got, job, out):
            return out
    with held(lock):
        return _timed(s, got, job, out)


def _prepare(s: _Session, job: Job, ahead: Job | None, out: dict,
             ) -> tuple[cl.Kernel, int, int] | None:
    """The config's kernel built with its arguments set, with its work-group and the one the
    driver gives it; None when that failed (`out` says why)."""
    t0 = time.perf_counter()
    try:
        prg, secs = _build(s, job.text)
        t0 = time.perf_counter() - secs
    except cl.Error as e:
        out["compile_time"] = (time.perf_counter() - t0) * 1e3
        msg = str(e)
        out["step"] = "build"
        out["error"] = "CompilationFailedConfig" if _LOCAL_MEM.search(msg) else "CompileError"
        out["reason"] = "build failed: " + (compiler_message(msg) or one_line(e))[:600]
        return None
    try:
        k = getattr(prg, job.name)
    except (AttributeError, cl.Error):
        out["compile_time"] = (time.perf_counter() - t0) * 1e3
        out["step"], out["reason"] = "usage", f"the program has no kernel named {job.name!r}"
        return None
    out["compile_time"] = (time.perf_counter() - t0) * 1e3
    if ahead is not None and ahead.text != job.text:
        _build_ahead(s, ahead.text)
    # a work-group past the kernel's CL_KERNEL_WORK_GROUP_SIZE is launched all the same, as
    # Kernel Tuner does: NVIDIA's driver reports 256 for kernels it runs at 512 and 1024
    # (Kernel Tuner's matmul example on an H100: its best config is one of them); a driver
    # that refuses the launch says so, and the config is reported invalid (below)
    wg = int(np.prod(job.lsize))
    kwg = k.get_work_group_info(cl.kernel_work_group_info.WORK_GROUP_SIZE, s.dev)
    try:
        k.set_args(*s.args)
    except (cl.Error, TypeError, ValueError) as e:
        out["step"], out["reason"] = "usage", f"arguments: {one_line(e)}"
        return None
    return k, wg, kwg


def _check_and_time(s: _Session, got: tuple[cl.Kernel, int, int], job: Job,
                    out: dict) -> dict:
    return _timed(s, got, job, out) if _first_run(s, got, job, out) else out


def _first_run(s: _Session, got: tuple[cl.Kernel, int, int], job: Job, out: dict) -> bool:
    """The config's check (where there is an answer or a verify function), else one untimed
    launch (the driver's first-launch work kept out of the timings); False when it stopped
    there (`out` says why)."""
    k = got[0]
    try:
        if s.checks:
            t1 = time.perf_counter()
            why = _check(s, k, job)
            out["verification_time"] = (time.perf_counter() - t1) * 1e3
            if why:
                out["step"], out["reason"] = "validate", why
                return False
        else:
            t1 = time.perf_counter()
            cl.enqueue_nd_range_kernel(s.queue, k, job.gsize, job.lsize).wait()
            out["benchmark_time"] = (time.perf_counter() - t1) * 1e3
    except cl.Error as e:
        _launch_failed(out, e, got)
        return False
    return True


def _timed(s: _Session, got: tuple[cl.Kernel, int, int], job: Job, out: dict) -> dict:
    """The config's `iterations` timed launches, each waited for, with the observers' hooks
    around them; `out` with step 'timed' and the times (ms)."""
    q, k = s.queue, got[0]
    t1 = time.perf_counter()
    try:
        obs = s.spec.observers
        try:
            _observe(obs, "register_configuration", dict(job.params))
        except Exception as e:  # noqa: BLE001 - the application's observer
            return _observer_failed(out, e)
        times = []
        for _ in range(s.spec.iterations):
            try:
                _observe(obs, "before_start")
                ev = cl.enqueue_nd_range_kernel(q, k, job.gsize, job.lsize)
                _observe(obs, "after_start")
                _observe(obs, "during")
                ev.wait()
                _observe(obs, "after_finish")
            except cl.Error:
                raise
            except Exception as e:  # noqa: BLE001 - the application's observer
                return _observer_failed(out, e)
            times.append((ev.profile.end - ev.profile.start) * 1e-6)
        out["benchmark_time"] += (time.perf_counter() - t1) * 1e3
        try:
            observed: dict = {}
            for o in obs:
                observed.update(o.get_results())
        except Exception as e:  # noqa: BLE001 - the application's observer
            return _observer_failed(out, e)
        if observed:
            out["observed"] = observed
    except cl.Error as e:
        return _launch_failed(out, e, got)
    out["step"], out["times"] = "timed", times
    return out


def _launch_failed(out: dict, e: cl.Error, got: tuple[cl.Kernel, int, int]) -> dict:
    _, wg, kwg = got
    out["step"], out["error"] = "launch", "RuntimeFailedConfig"
    out["reason"] = f"launch failed: {one_line(e)}"
    if wg > kwg:
        out["error"] = "InvalidConfig"
        out["reason"] += f" (a work-group of {wg}; the driver gives this kernel {kwg})"
    return out


def _observe(observers: list, hook: str, *args: Any) -> None:  # noqa: ANN401
    """Each observer's `hook` (where it has one), as Kernel Tuner calls it."""
    for o in observers:
        f = getattr(o, hook, None)
        if f is not None:
            f(*args)


def _observer_failed(out: dict, e: Exception) -> dict:
    out["step"], out["error"] = "observe", "RuntimeFailedConfig"
    out["reason"] = f"an observer raised {type(e).__name__}: {str(e)[:300]}"
    return out


def _check(s: _Session, k: cl.Kernel, job: Job) -> str:
    """'' when one run from reset outputs answers right, else where and by how much not."""
    q = s.queue
    for i, sync in enumerate(s.synced):
        if sync and isinstance(s.host[i], np.ndarray) and s.host[i].nbytes:
            cl.enqueue_copy(q, s.args[i], s.host[i])
    cl.enqueue_nd_range_kernel(q, k, job.gsize, job.lsize)
    got: list = []
    for i, sync in enumerate(s.synced):
        h = s.host[i]
        if sync and isinstance(h, np.ndarray):
            r = np.empty_like(h)
            if h.nbytes:
                cl.enqueue_copy(q, r, s.args[i])
            got.append(r)
        else:
            got.append(None)
    q.finish()
    spec = s.spec
    if spec.verify is not None:
        try:
            ok = _call_verify(spec.verify, spec.answer, got, spec.atol)
        except Exception as e:  # noqa: BLE001 - the application's function: its error, told
            return f"verify raised {type(e).__name__}: {e}"[:600]
        return "" if ok else f"verify returned {ok!r:.40} for this config"
    for i, want in enumerate(spec.answer or ()):
        if want is None:
            continue
        why = compare(want, got[i], spec.atol)
        if why:
            return f"argument {i}: {why}"
    return ""


def _call_verify(verify: Any, answer: Any, got: list, atol: float) -> Any:  # noqa: ANN401
    try:
        takes_atol = "atol" in inspect.signature(verify).parameters
    except (TypeError, ValueError):
        takes_atol = True
    return bool(verify(answer, got, atol=atol) if takes_atol else verify(answer, got))


def compare(want: Any, got: Any, atol: float) -> str:  # noqa: ANN401
    """Kernel Tuner's default check of one output: numpy.allclose(want, got, atol) over the
    flattened arrays (rtol 1e-5, NaN unequal); '' or how far off and where."""
    if isinstance(want, np.ndarray):
        w, g = want.ravel(), np.asarray(got).ravel()
    else:
        w, g = np.asarray(want).ravel(), np.asarray(got).ravel()[:1]
    close = np.isclose(w, g, atol=atol)
    if close.all():
        return ""
    bad = np.flatnonzero(~close)
    i = int(bad[0])
    return (f"{bad.size} of {w.size} values differ from the answer (first at index {i}: "
            f"{g[i]!r} instead of {w[i]!r}; atol {atol:g}, rtol 1e-05)")


def run_once(ctx: cl.Context, _queue: Any, dev: cl.Device, _info: Any,  # noqa: ANN401
             spec: Spec, job: Job) -> list:
    """run_kernel's launch: the arguments uploaded, one launch, every array read back."""
    s = _Session(ctx, dev, spec)
    prg = cl.Program(ctx, job.text).build(options=list(spec.compiler_options), devices=[dev])
    k = getattr(prg, job.name)
    k.set_args(*s.args)
    cl.enqueue_nd_range_kernel(s.queue, k, job.gsize, job.lsize)
    out = []
    for a, h in zip(s.args, s.host, strict=False):
        if isinstance(h, np.ndarray):
            r = np.empty_like(h)
            if h.nbytes:
                cl.enqueue_copy(s.queue, r, a)
            out.append(r)
        else:
            out.append(h)
    s.queue.finish()
    return out


def vet(ctx: cl.Context, queue: Any, dev: cl.Device, info: Any, spec: Spec,  # noqa: ANN401
        job: Job) -> str:
    """A config's first run (`isolation.vetting.checked`): '' when it built and ran here."""
    try:
        run_once(ctx, queue, dev, info, spec, job)
    except cl.Error as e:
        return f"failed: {compiler_message(str(e)) or one_line(e)}"[:500]
    except AttributeError:
        return f"the program has no kernel named {job.name!r}"
    return ""
