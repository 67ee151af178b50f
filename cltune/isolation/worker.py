"""A persistent evaluation worker per device: where untrusted driver work runs.

Drivers are untrusted (house rule 17): a build or first launch may abort, segfault or never
return. Every kernel that has not run on a device's fingerprint and driver is built and
launched in a worker process (`worker_main`) that holds its own context; this side sends it
requests over a pipe and waits with a deadline. A worker that dies is a `WorkerFailure` of
kind `crashed` (the signal and the last words the driver printed), one that misses its
deadline is killed and is a failure of kind `hung`, and a Python or OpenCL error inside it is
kind `error`; the next request starts a fresh worker. The caller's process never dies with the
driver.

One worker per device fingerprint and process (`worker_for`), shared by the threads of the
process (one request at a time); workers end with the process, and a worker whose parent is
gone exits on its own (`worker_main` watches it).
"""

from __future__ import annotations

import atexit
import os
import re
import select
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cltune.isolation import codec

if TYPE_CHECKING:  # devices -> health -> worker: the type only
    from cltune.device.info import DeviceInfo

#: how long a fresh worker may take to import cltune and open its context
START_DEADLINE_S = 120.0
_TAIL_BYTES = 16384


class WorkerFailure(RuntimeError):
    """The worker could not answer: `kind` is `crashed`, `hung` or `error`, or `unstarted`
    when it exited with a status before it answered its first request (Python could not run
    cltune there: an import error, a broken environment — nothing of the driver's, so no
    verdict on a device or config may be drawn from it or kept); `reason` is one line for a
    user (the signal and the driver's message, or the error)."""

    def __init__(self, kind: str, reason: str, value_error: bool = False) -> None:
        super().__init__(reason)
        self.kind, self.reason = kind, reason
        self.value_error = value_error  # kind `error` from a ValueError: bad input, no driver


def signal_name(returncode: int) -> str:
    if returncode < 0:
        try:
            return signal.Signals(-returncode).name
        except ValueError:
            return f"signal {-returncode}"
    return f"exit status {returncode}"


_NOISE = re.compile(r"^(Fatal Python error|Current thread|Thread 0x|  File |Extension modules|"
                    r"Stack \(most recent|\s*$)")
_TELLING = re.compile(r"error|fatal|assert|abort|fault|exception|terminate|unreachable|"
                      r"cannot|failed", re.I)


def last_words(text: str) -> str:
    """The line of a dead worker's output that says most about why: the last one that names
    an error (LLVM's `LLVM ERROR: ...`, an assertion), else its last line; Python's own
    fault-handler dump is skipped."""
    lines = [ln.strip() for ln in text.splitlines() if not _NOISE.match(ln)]
    lines = [ln for ln in lines if ln]
    telling = [ln for ln in lines if _TELLING.search(ln)]
    pick = (telling or lines or [""])[-1]
    return pick[:300]


#: the worker runs the cltune this process runs: `-c` (like `-m`) puts the working directory
#: first on the worker's path ('' unless PYTHONSAFEPATH is set), and a source checkout there,
#: never installed, would shadow the installed package the application imported; that entry
#: goes, and this package's folder is put first unless it is on the path already (then
#: nothing moves ahead of the rest: the worker resolves other packages as before)
_PACKAGE_ROOT = str(Path(__file__).resolve().parent.parent.parent)
_BOOT = ("import sys; root = sys.argv.pop(1)\n"
         "if sys.path and sys.path[0] == '': del sys.path[0]\n"
         "if root not in sys.path: sys.path.insert(0, root)\n"
         "from cltune.isolation.worker_main import main; sys.exit(main(sys.argv))")


def unstarted(reason: str) -> bool:
    """Whether a stored verdict's reason is a worker that could not start with an exit
    status (kept by cltune before 2026-12-03): not a verdict on the driver; read as unknown."""
    return "evaluation worker did not start: the evaluation worker exited (exit status" in reason


class Worker:
    """One worker process for one device, started on the first request and again after it
    died. `generation` counts the starts (a target opened in an older one is gone)."""

    def __init__(self, info: DeviceInfo) -> None:
        self.info = info
        self.generation = 0
        self.proc: subprocess.Popen | None = None
        self._exit_status = 0  # the last worker's exit status (< 0: a signal)
        self._rfd = self._wfd = -1
        self._log: Any = None
        self._starting = False  # the init request is sent, its answer not read yet
        self._lock = threading.RLock()

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def ensure(self) -> int:
        """Start the worker unless it runs (without waiting for it: it imports and opens its
        context while the caller goes on; the next request waits); the generation of the
        running one."""
        with self._lock:
            if not self.alive:
                self._start()
            return self.generation

    def _started(self) -> None:
        """Wait for the answer to the init request, if it is still due."""
        if self._starting:
            self._starting = False
            try:
                self._answer("init", START_DEADLINE_S, 0)
            except WorkerFailure as e:
                raise self._not_started(e) from None

    def _not_started(self, e: WorkerFailure) -> WorkerFailure:
        """The failure of a worker that never answered its init request: `unstarted` when it
        exited with a status (Python could not run cltune there), else as it failed."""
        kind = "unstarted" if self._exit_status > 0 else e.kind
        return WorkerFailure(kind, f"the evaluation worker did not start: {e.reason}")

    def _start(self) -> None:
        self._reset()
        self._exit_status = 0
        c_read, p_write = os.pipe()
        p_read, c_write = os.pipe()
        self._log = tempfile.TemporaryFile(prefix="cltune-worker-")
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-c", _BOOT, _PACKAGE_ROOT, str(c_read), str(c_write)],
                pass_fds=(c_read, c_write), stdin=subprocess.DEVNULL, stdout=self._log,
                stderr=self._log, start_new_session=True)
        except OSError as e:  # no interpreter to start (an embedded Python, say)
            for fd in (p_read, p_write):
                os.close(fd)
            raise WorkerFailure("error", f"cannot start the evaluation worker "
                                f"({sys.executable}): {e}") from None
        finally:
            os.close(c_read)
            os.close(c_write)
        self._rfd, self._wfd = p_read, p_write
        self.generation += 1
        try:
            codec.send(self._wfd, codec.dumps(("init", (self.info,))))
        except OSError:  # it exited before it read its first request
            raise self._not_started(self._died(0)) from None
        self._starting = True

    def call(self, op: str, *args: Any, deadline_s: float) -> Any:  # noqa: ANN401
        """Run `op(*args)` in the worker (started if needed); its answer, or WorkerFailure."""
        with self._lock:
            self.ensure()
            self._started()
            return self._request(op, args, deadline_s)

    def _request(self, op: str, args: tuple, deadline_s: float) -> Any:  # noqa: ANN401
        start = self._log_size()
        try:
            codec.send(self._wfd, codec.dumps((op, args)))
        except OSError:  # the worker is gone before it read the request
            raise self._died(start) from None
        return self._answer(op, deadline_s, start)

    def _answer(self, op: str, deadline_s: float, start: int) -> Any:  # noqa: ANN401
        ready, _, _ = select.select([self._rfd], [], [], max(0.0, deadline_s))
        if not ready:
            self._kill()
            raise WorkerFailure("hung", f"hung: no answer within {deadline_s:.0f} s "
                                f"(the worker was killed)")
        frame = codec.receive(self._rfd)
        if frame is None:
            raise self._died(start)
        status, value = codec.loads(frame)
        if status == "error":
            raise WorkerFailure("error", *value)
        return value

    def _log_size(self) -> int:
        try:
            return os.fstat(self._log.fileno()).st_size
        except (OSError, AttributeError):
            return 0

    def _died(self, start: int) -> WorkerFailure:
        rc = self.proc.wait() if self.proc is not None else -1
        self._exit_status = rc
        text = ""
        try:
            self._log.seek(max(start, self._log_size() - _TAIL_BYTES))
            text = self._log.read().decode("utf-8", "replace")
        except (OSError, AttributeError):
            pass
        self._reset()
        words = last_words(text)
        what = "driver crashed" if rc < 0 else "the evaluation worker exited"
        return WorkerFailure("crashed", f"{what} ({signal_name(rc)})" + (f": {words}"
                                                                        if words else ""))

    def _kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except OSError:
                self.proc.kill()
            self.proc.wait()
        self._reset()

    def _reset(self) -> None:
        for fd in (self._rfd, self._wfd):
            if fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self._rfd = self._wfd = -1
        self._starting = False
        if self._log is not None:
            self._log.close()
            self._log = None
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.proc = None

    def close(self) -> None:
        """Stop the worker (closing its pipe ends it; killed if it does not go)."""
        with self._lock:
            if self.proc is not None:
                for fd in (self._wfd,):
                    if fd >= 0:
                        os.close(fd)
                self._wfd = -1
                try:
                    self.proc.wait(timeout=2)
                except subprocess.TimeoutExpired:
                    pass
            self._reset()


_workers: dict[tuple[str, int, int, int], Worker] = {}
_workers_lock = threading.Lock()


def worker_for(info: DeviceInfo, slot: int = 0) -> Worker:
    """This process's worker for the device (made on first use, started on first request);
    `slot` > 0: another worker of the same device (a parallel tuning run). Identical devices
    (one fingerprint) have a worker each: the key is the device's place, not its kind."""
    key = (info.fingerprint, info.platform_index, info.device_index, slot)
    with _workers_lock:
        w = _workers.get(key)
        if w is None:
            w = _workers[key] = Worker(info)
        elif w.info != info:  # a restriction of the device's health came since
            w.info = info
            w.close()
        return w


def shutdown_workers() -> None:
    """Stop every worker of this process (they start again on the next request)."""
    with _workers_lock:
        ws = list(_workers.values())
        _workers.clear()
    for w in ws:
        w.close()


atexit.register(shutdown_workers)


def deadline_floor() -> float:
    """Seconds any one request may take at least (`CLTUNE_DEADLINE_S`, default 20)."""
    try:
        return max(0.1, float(os.environ.get("CLTUNE_DEADLINE_S", "") or 20.0))
    except ValueError:
        return 20.0
