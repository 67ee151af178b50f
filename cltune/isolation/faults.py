"""Test-only fault injection: make the evaluation worker crash or hang for real on chosen work.

`CLTUNE_TEST_FAULT` holds rules separated by `;`, each `ACTION:KEY=VALUE,KEY=VALUE`. ACTION is
`abort` (SIGABRT, as LLVM's fatal errors), `segv` (a read of address 0, as a driver's bad pointer),
`hang` (sleeps for an hour, as a compiler that never returns), `slow` (sleeps 1.5x the deadline
floor, `CLTUNE_DEADLINE_S`, then goes on: a build slower than the deadline on a loaded host) or
`wrong` (the worker reports a wrong answer, as a miscompiled kernel). A rule matches work whose
fields (`family`, `variant`, the config's parameters, `probe` for a health probe, or `check` and
`key` for a kernel vetted by `vetting.checked`) have all the given values, compared as text.
`launch_error:status=NAME` (a `pyopencl.status_code` name) makes every kernel launch in the worker
raise the error pyopencl raises for that status; `build_error:` makes every program build there
fail as a compiler error does. Only the worker process (`worker_main`) reads it,
so a fault never fires in the process that asked for the work.

    CLTUNE_TEST_FAULT="abort:vec=16;hang:family=axis,wg=8"

"""

from __future__ import annotations

import ctypes
import os
import signal
import time
from collections.abc import Mapping

ENV = "CLTUNE_TEST_FAULT"
ACTIONS = ("abort", "segv", "hang", "slow", "wrong", "launch_error", "build_error")


def rules(text: str | None = None) -> list[tuple[str, dict[str, str]]]:
    """The parsed rules (malformed ones are ignored: this is a test hook, not user input)."""
    text = os.environ.get(ENV, "") if text is None else text
    out = []
    for part in text.split(";"):
        action, _, fields = part.strip().partition(":")
        if action not in ACTIONS:
            continue
        match = {}
        for kv in fields.split(","):
            k, eq, v = kv.partition("=")
            if eq and k.strip():
                match[k.strip()] = v.strip()
        out.append((action, match))
    return out


def matching(work: Mapping[str, object]) -> str:
    """The action of the first rule matching `work`, else ''."""
    for action, match in rules():
        if action in ("launch_error", "build_error"):  # process-wide, not per work
            continue
        if all(str(work.get(k)) == v for k, v in match.items()):
            return action
    return ""


def break_launches() -> None:
    """Apply the `build_error` and `launch_error` rules: every `pyopencl.Program.build` /
    `pyopencl.enqueue_nd_range_kernel` of this process raises (called once by the worker at
    its start)."""
    import pyopencl as cl  # lazy: the fault module is imported by the worker before OpenCL

    if any(a == "build_error" for a, _ in rules()):
        def no_build(self: object, *_a: object, **_k: object) -> None:
            raise cl.RuntimeError(cl._cl._ErrorRecord(
                "clBuildProgram failed: BUILD_PROGRAM_FAILURE - Build on <device>: error: use "
                "of undeclared identifier 'undefined_name' (injected by CLTUNE_TEST_FAULT)",
                cl.status_code.BUILD_PROGRAM_FAILURE, ""))

        cl.Program.build = no_build
    status = next((m.get("status", "") for a, m in rules() if a == "launch_error"), "")
    if not status:
        return
    code = getattr(cl.status_code, status)
    kind = cl.MemoryError if "RESOURCES" in status or "MEMORY" in status else cl.LogicError

    def broken(*_a: object, **_k: object) -> None:
        raise kind(cl._cl._ErrorRecord("clEnqueueNDRangeKernel", code, ""))

    cl.enqueue_nd_range_kernel = broken


def fire(action: str) -> None:
    """Crash, hang or stall this process as `action` says (`wrong` is the caller's to act
    on)."""
    if action == "abort":
        os.abort()
    if action == "segv":
        signal.signal(signal.SIGSEGV, signal.SIG_DFL)  # no faulthandler dump, a real death
        ctypes.string_at(0)
    if action == "hang":
        time.sleep(3600)
    if action == "slow":
        from cltune.isolation.worker import deadline_floor  # lazy: the worker imports this

        time.sleep(1.5 * deadline_floor())
