"""Run a Python snippet under Oclgrind (an OpenCL device simulator) and parse its diagnostics.

Usage from a test::

    import pytest
    from support.oclgrind import oclgrind_available, run_under_oclgrind
    # (or ``from tests.support.oclgrind import ...`` when tests/ is a package)

    @pytest.mark.skipif(not oclgrind_available(), reason="oclgrind not installed")
    def test_reduction_has_no_races():
        res = run_under_oclgrind(SCRIPT)         # SCRIPT: Python source using pyopencl
        assert res.returncode == 0, res.stderr
        assert res.reports == [], res.summary()

The script runs as ``sys.executable -c SCRIPT`` under::

    oclgrind --data-races --uninitialized --log <tmpfile> python -c SCRIPT

The ``oclgrind`` wrapper (Debian package ``oclgrind``, 21.10 on Debian 12) sets
``LD_PRELOAD=/usr/lib/oclgrind/liboclgrind-rt.so`` plus ``OCLGRIND_*`` variables.
The preloaded runtime's ``clGetPlatformIDs`` etc. win over pyopencl's bundled
ICD loader, so inside the script ``pyopencl.get_platforms()`` returns exactly
one platform, "Oclgrind" ("OpenCL 1.2 (Oclgrind 21.10)"), with one device,
"Oclgrind Simulator" (device type 0xF: CPU|GPU|ACCELERATOR|DEFAULT, so test
``d.type & cl.device_type.CPU``, not ``==``).  ``create_some_context()`` picks
it without asking (``PYOPENCL_CTX`` is set to ``0``).  Pointing
``OCL_ICD_VENDORS`` at a folder holding only Oclgrind's ``.icd`` does *not*
isolate it: pyopencl's loader always adds its bundled PoCL too.

If the wrapper is missing but ``liboclgrind-rt.so`` is present the same thing
is done by hand (``LD_PRELOAD`` + ``OCLGRIND_*``).  ``CLTUNE_OCLGRIND`` may name
the wrapper explicitly.

Diagnostics go to a private log file (``OCLGRIND_LOG``), so they never mix with
the script's own stderr; API errors (``check_api=True``) are printed by
Oclgrind on stderr and are parsed from there.  Each diagnostic becomes an
:class:`OclgrindReport` whose ``kind`` is one of ``data-race``,
``uninitialized``, ``invalid-access`` (out-of-bounds read/write, read-only
buffer written, ...), ``divergence`` (barrier / async copy reached by only part
of a work-group), ``unaligned``, ``api-error``, ``fatal`` (``OCLGRIND FATAL
ERROR`` on stderr) or ``other``.

Oclgrind 21.10 is an OpenCL 1.2 device: sub-group built-ins such as
``sub_group_reduce_add`` *compile* but creating the kernel dies with
"OCLGRIND FATAL ERROR ... Undefined external function" (a ``fatal`` report,
and the script fails).  Only check kernel variants without sub-groups here.

``PYOPENCL_NO_CACHE=1`` is set for the child: programs are then built from
source, so reports quote the offending source line, and no Oclgrind binaries
land in pyopencl's on-disk cache.

Cost (2-core CI machine): start-up about 0.3 s; the simulator with race and
uninitialised-value checks does roughly 25 000 work-items a second for a
64-wide local-memory tree reduction, so n ~ 2000 takes ~0.1 s of kernel time
and n ~ 200 000 about 8 s.  Keep the problem sizes small.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Mapping, Sequence

__all__ = [
    "OclgrindReport",
    "OclgrindResult",
    "oclgrind_available",
    "oclgrind_command",
    "parse_oclgrind_output",
    "run_under_oclgrind",
]

_RUNTIME_CANDIDATES = (
    "/usr/lib/oclgrind/liboclgrind-rt.so",
    "/usr/lib/x86_64-linux-gnu/oclgrind/liboclgrind-rt.so",
    "/usr/local/lib/liboclgrind-rt.so",
    "/usr/lib/liboclgrind-rt.so",
)

# first line of a diagnostic -> kind (first match wins)
_KINDS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("data-race", re.compile(r"data race", re.I)),
    ("divergence", re.compile(r"divergence", re.I)),
    ("uninitialized", re.compile(r"uninitiali[sz]ed", re.I)),
    ("unaligned", re.compile(r"^unaligned", re.I)),
    ("api-error", re.compile(r"^Oclgrind - OpenCL runtime error detected")),
    ("fatal", re.compile(r"^OCLGRIND FATAL ERROR")),
    (
        "invalid-access",
        re.compile(
            r"^Invalid (read|write)|out of bounds|out-of-bounds|array bounds|NULL pointer"
            r"|read-only|write-only|mapped buffer|memory access",
            re.I,
        ),
    ),
)
_SUPPRESSED = re.compile(r"^Oclgrind: (\d+) errors generated - suppressing further errors")
# first lines that Oclgrind writes to stderr (as opposed to the log file)
_STDERR_HEADS = re.compile(
    r"^(Oclgrind - OpenCL runtime error detected"
    r"|OCLGRIND FATAL ERROR"
    r"|(Read-write|Write-write|Unrecognized) data race at"
    r"|Work-group divergence detected"
    r"|Invalid (read|write) "
    r"|Uninitiali[sz]ed (value|address)"
    r"|Unaligned address"
    r"|Oclgrind: )"
)


@dataclasses.dataclass(frozen=True)
class OclgrindReport:
    """One diagnostic printed by Oclgrind."""

    kind: str  # data-race | uninitialized | invalid-access | divergence | unaligned | api-error
    #            | fatal (Oclgrind gave up, e.g. "Undefined external function") | other
    message: str  # first line, e.g. "Read-write data race at local memory address 0x10000000004"
    text: str  # the whole block
    kernel: str | None = None
    line: int | None = None  # OpenCL C source line, when Oclgrind knows it

    def key(self) -> tuple[str, str | None, int | None, str]:
        """Identity without addresses and work-item ids (to de-duplicate)."""
        return (self.kind, self.kernel, self.line, re.sub(r"0x[0-9a-fA-F]+", "ADDR", self.message))


@dataclasses.dataclass
class OclgrindResult:
    """Outcome of :func:`run_under_oclgrind`."""

    returncode: int  # the script's exit status; -9 after a timeout
    stdout: str
    stderr: str
    log: str  # raw Oclgrind log (diagnostics only)
    reports: list[OclgrindReport]
    command: list[str]
    elapsed: float  # seconds
    timed_out: bool = False
    truncated: bool = False  # Oclgrind stopped printing after max_errors

    @property
    def ok(self) -> bool:
        """The script exited 0 and Oclgrind reported nothing."""
        return self.returncode == 0 and not self.reports and not self.timed_out

    def kinds(self) -> Counter[str]:
        return Counter(r.kind for r in self.reports)

    def of_kind(self, kind: str) -> list[OclgrindReport]:
        return [r for r in self.reports if r.kind == kind]

    def distinct(self) -> list[OclgrindReport]:
        """One report per (kind, kernel, source line, message shape)."""
        seen: dict[tuple, OclgrindReport] = {}
        for r in self.reports:
            seen.setdefault(r.key(), r)
        return list(seen.values())

    def summary(self, limit: int = 5) -> str:
        head = (
            f"oclgrind: rc={self.returncode} timed_out={self.timed_out} "
            f"{len(self.reports)} report(s) {dict(self.kinds())} in {self.elapsed:.1f}s"
        )
        parts = [head]
        for r in self.distinct()[:limit]:
            parts.append(r.text)
        if self.returncode != 0 and self.stderr:
            parts.append("stderr (tail):\n" + self.stderr[-3000:])
        return "\n\n".join(parts)


def _classify(first_line: str) -> str:
    for kind, pat in _KINDS:
        if pat.search(first_line):
            return kind
    return "other"


def parse_oclgrind_output(
    text: str, *, only_known: bool = False
) -> tuple[list[OclgrindReport], bool]:
    """Parse Oclgrind diagnostics out of ``text``.

    A diagnostic is a block that starts with an unindented line after an empty
    line and runs until the next empty line (lines inside a block that look
    blank are a single tab).  With ``only_known`` (used for stderr, which also
    holds the script's own output) only blocks whose first line looks like an
    Oclgrind message are taken.  Returns ``(reports, truncated)``.
    """
    reports: list[OclgrindReport] = []
    truncated = False
    block: list[str] = []
    prev_empty = True

    def flush() -> None:
        nonlocal truncated
        if not block:
            return
        first = block[0].strip()
        body = "\n".join(block).rstrip()
        block.clear()
        if _SUPPRESSED.match(first):
            truncated = True
            return
        if only_known and not _STDERR_HEADS.match(first):
            return
        if first.startswith("Oclgrind: ") and not first.startswith("Oclgrind - "):
            # tool chatter ("Oclgrind: Unable to open log file ...") is not a finding
            if only_known:
                return
        kernel = None
        m = re.search(r"^\s*Kernel:\s*(\S+)", body, re.M)
        if m:
            kernel = m.group(1)
        line = None
        m = re.search(r"At line (\d+)", body)
        if m:
            line = int(m.group(1))
        reports.append(OclgrindReport(_classify(first), first, body, kernel, line))

    for raw in text.splitlines():
        if raw == "":
            flush()
            prev_empty = True
            continue
        if block and only_known and (raw.startswith("Traceback ") or _STDERR_HEADS.match(raw)):
            flush()  # the script's own stderr follows without a blank line
        if block:
            block.append(raw)
        elif (prev_empty or only_known) and not raw[0].isspace():
            block.append(raw)
        prev_empty = False
    flush()
    return reports, truncated


def _runtime_library() -> str | None:
    for cand in _RUNTIME_CANDIDATES:
        if os.path.exists(cand):
            return cand
    return None


def _wrapper() -> str | None:
    explicit = os.environ.get("CLTUNE_OCLGRIND")
    if explicit:
        return explicit if os.access(explicit, os.X_OK) else None
    return shutil.which("oclgrind")


@functools.lru_cache(maxsize=1)
def oclgrind_available() -> bool:
    """True when Oclgrind is usable: the wrapper answers ``--version`` or its runtime exists."""
    wrapper = _wrapper()
    if wrapper:
        try:
            out = subprocess.run(
                [wrapper, "--version"],
                capture_output=True,
                text=True,
                timeout=30,
                stdin=subprocess.DEVNULL,
            )
            if out.returncode == 0 and "Oclgrind" in out.stdout + out.stderr:
                return True
        except (OSError, subprocess.SubprocessError):
            pass
    return _runtime_library() is not None


def oclgrind_command(
    argv: Sequence[str],
    *,
    log_file: str,
    data_races: bool = True,
    uninitialized: bool = True,
    check_api: bool = False,
    max_errors: int | None = None,
    extra_args: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
) -> tuple[list[str], dict[str, str]]:
    """Command line and environment that run ``argv`` under Oclgrind."""
    child_env = dict(os.environ if env is None else env)
    child_env["PYOPENCL_NO_CACHE"] = "1"
    child_env["PYOPENCL_CTX"] = "0"
    child_env.pop("PYOPENCL_TEST", None)
    wrapper = _wrapper()
    if wrapper:
        cmd = [wrapper]
        if data_races:
            cmd.append("--data-races")
        if uninitialized:
            cmd.append("--uninitialized")
        if check_api:
            cmd.append("--check-api")
        if max_errors is not None:
            cmd += ["--max-errors", str(max_errors)]
        cmd += ["--log", log_file, *extra_args, *argv]
        return cmd, child_env
    lib = _runtime_library()
    if lib is None:
        raise FileNotFoundError("Oclgrind not found (apt-get install oclgrind)")
    if extra_args:
        raise ValueError("extra_args needs the oclgrind wrapper")
    # what the wrapper does
    if data_races:
        child_env["OCLGRIND_DATA_RACES"] = "1"
    if uninitialized:
        child_env["OCLGRIND_UNINITIALIZED"] = "1"
    if check_api:
        child_env["OCLGRIND_CHECK_API"] = "1"
    if max_errors is not None:
        child_env["OCLGRIND_MAX_ERRORS"] = str(max_errors)
    child_env["OCLGRIND_LOG"] = log_file
    pre = child_env.get("LD_PRELOAD")
    child_env["LD_PRELOAD"] = lib + (":" + pre if pre else "")
    return list(argv), child_env


def run_under_oclgrind(
    script: str,
    timeout: float = 600,
    *,
    data_races: bool = True,
    uninitialized: bool = True,
    check_api: bool = False,
    max_errors: int | None = None,
    extra_args: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
) -> OclgrindResult:
    """Run ``sys.executable -c script`` under Oclgrind and collect its diagnostics.

    ``env`` replaces ``os.environ`` for the child (PYOPENCL_NO_CACHE=1 and
    PYOPENCL_CTX=0 are always set).  On timeout the whole process group is
    killed and ``timed_out`` is set (``returncode`` -9).
    """
    fd, log_file = tempfile.mkstemp(prefix="oclgrind-", suffix=".log")
    os.close(fd)
    try:
        cmd, child_env = oclgrind_command(
            [sys.executable, "-c", script],
            log_file=log_file,
            data_races=data_races,
            uninitialized=uninitialized,
            check_api=check_api,
            max_errors=max_errors,
            extra_args=extra_args,
            env=env,
        )
        t0 = time.monotonic()
        proc = subprocess.Popen(
            cmd,
            env=child_env,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            errors="replace",
            start_new_session=True,
        )
        timed_out = False
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            out, err = proc.communicate()
        elapsed = time.monotonic() - t0
        with open(log_file, encoding="utf-8", errors="replace") as fh:
            log = fh.read()
    finally:
        try:
            os.unlink(log_file)
        except OSError:
            pass
    reports, truncated = parse_oclgrind_output(log)
    err_reports, err_truncated = parse_oclgrind_output(err, only_known=True)
    return OclgrindResult(
        returncode=-9 if timed_out else proc.returncode,
        stdout=out,
        stderr=err,
        log=log,
        reports=reports + err_reports,
        command=cmd,
        elapsed=elapsed,
        timed_out=timed_out,
        truncated=truncated or err_truncated,
    )


if __name__ == "__main__":  # python tests/support/oclgrind.py SCRIPT.py
    if len(sys.argv) != 2:
        sys.exit("usage: python tests/support/oclgrind.py SCRIPT.py")
    with open(sys.argv[1], encoding="utf-8") as fh:
        result = run_under_oclgrind(fh.read())
    sys.stdout.write(result.stdout)
    print(result.summary(limit=10))
    sys.exit(0 if result.ok else 1)


#: the opening of a child script run by `run_marked`: it refuses to run anywhere but under
#: Oclgrind and opens its one device (`info`, `dev`, `ctx`, `q`)
CHILD_PRELUDE = r'''
import json, sys
import pyopencl as cl
from cltune.device.select import list_devices, select

devs = list_devices()
if len(devs) != 1 or devs[0].platform != "Oclgrind":
    sys.exit(f"not under Oclgrind: {[(d.platform, d.name) for d in devs]}")
info, dev = select("0")
ctx = cl.Context([dev])
q = cl.CommandQueue(ctx, dev)
'''


def run_marked(script: str, mark: str, *, negative: bool = False,
               timeout: int = 600) -> tuple[OclgrindResult, object]:
    """Run `script` (after CHILD_PRELUDE, with MARK and NEGATIVE defined) under Oclgrind with
    the data-race checker (the uninitialised-value one stays off: see tests/test_oclgrind.py
    for its Oclgrind 21.10 defects); the result and the JSON the child printed last after
    MARK (None if it printed none). Skips when Oclgrind is not installed."""
    import json

    from support.require import need

    need(oclgrind_available(), "Oclgrind is not installed (apt-get install oclgrind)")
    res = run_under_oclgrind(f"MARK = {mark!r}\nNEGATIVE = {negative}\n" + CHILD_PRELUDE
                             + script, timeout, data_races=True, uninitialized=False,
                             max_errors=1_000_000)
    lines = [ln for ln in res.stdout.splitlines() if ln.startswith(mark)]
    return res, json.loads(lines[-1][len(mark):]) if lines else None
