"""Is a device usable? A tiny probe kernel must build *and* return the right answer.

pyopencl's bundled PoCL 3.0-rc2 (LLVM 14) lists a CPU device it cannot compile for on CPUs newer
than LLVM 14 knows ("unknown target CPU 'generic'", pocl/pocl#1049); other drivers may build and
miscompute. Such a device is named with the compiler's own message and a fix, and skipped.

The verdict is cached per (device fingerprint, driver, probe version) in a JSON file in the user
cache directory (`$CLTUNE_CACHE_DIR`, else `platformdirs.user_cache_dir("cltune")`), never in
the tuning database; `cltune devices --recheck` probes again. An unwritable cache only costs a
probe per process.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import threading
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from importlib.util import find_spec
from pathlib import Path

import numpy as np
import pyopencl as cl

from .clerrors import compiler_message, one_line

PROBE_VERSION = 1
_FILE = "device-health.json"

#: A local-memory tree with barriers and an exact integer answer: what every strategy relies on.
PROBE_SRC = r"""
__kernel void cltune_probe(__global const int *x, __global int *out, __local int *tile,
                           const int n) {
    int lid = get_local_id(0);
    int acc = 0;
    for (int i = lid; i < n; i += get_local_size(0)) acc += x[i];
    tile[lid] = acc;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = get_local_size(0) / 2; s > 0; s >>= 1) {
        if (lid < s) tile[lid] += tile[lid + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0) out[0] = tile[0];
}
"""
PROBE_N = 1031  # prime: no multiple of any work-group size


@dataclass(frozen=True)
class Health:
    """The probe's verdict on one device. `message` is the compiler's or driver's own words,
    `fix` what a user can do about it (both '' when ok)."""

    ok: bool
    message: str = ""
    fix: str = ""
    checked_at: str = ""

    @property
    def status(self) -> str:
        return "ok" if self.ok else f"unusable: {self.message}"


#: What to tell a user, as data: (pattern on the message, pattern on the platform version, fix).
#: `{impl}` and `{llvm}` are filled from the platform version. First match wins.
ADVICE: tuple[tuple[str, str, str], ...] = (
    (r"unknown target CPU", r"PoCL",
     "{impl} uses LLVM {llvm}, which does not know this CPU: install your distribution's PoCL "
     "(`apt install pocl-opencl-icd`) or Intel's CPU runtime (`pip install 'cltune[intel]'`)"),
    (r"wrong answer", r"",
     "the driver miscompiles a basic reduction: update or reinstall it, or use another device"),
    (r"", r"",
     "update or reinstall this device's OpenCL driver, or use another device (`cltune devices`)"),
)


def advice(message: str, platform_version: str) -> str:
    """The fix for a probe failure, in words a user can act on."""
    m = re.search(r"PoCL\s+(\S+)", platform_version)
    impl = f"PoCL {m.group(1)}" if m else "this OpenCL runtime"
    if m and "debian" not in m.group(1).lower() and find_spec("pocl_binary_distribution"):
        impl += " (bundled with pyopencl through pocl-binary-distribution)"
    llvm = re.search(r"LLVM\s+([\d.]+)", platform_version)
    for msg_pat, plat_pat, fix in ADVICE:
        if re.search(msg_pat, message) and re.search(plat_pat, platform_version):
            return fix.format(impl=impl, llvm=llvm.group(1) if llvm else "of its build")
    return ""  # pragma: no cover - the last rule matches everything


def probe(dev: cl.Device) -> Health:
    """Build and run the probe kernel on `dev` (no cache)."""
    now = datetime.now(timezone.utc).isoformat(timespec="seconds")
    pv = ""
    try:
        pv = dev.platform.version
        ctx = cl.Context([dev])
        q = cl.CommandQueue(ctx, dev)
        wg = 1 << (min(64, int(dev.max_work_group_size)).bit_length() - 1)
        x = (np.arange(PROBE_N, dtype=np.int32) * 7919) % 1009 - 500
        mf = cl.mem_flags
        xb = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=x)
        ob = cl.Buffer(ctx, mf.READ_WRITE, 4)
        knl = cl.Program(ctx, PROBE_SRC).build().cltune_probe
        knl(q, (wg,), (wg,), xb, ob, cl.LocalMemory(4 * wg), np.int32(PROBE_N))
        got = np.full(1, -1, np.int32)
        cl.enqueue_copy(q, got, ob)
        q.finish()
    except cl.Error as e:
        if e.code == cl.status_code.BUILD_PROGRAM_FAILURE:
            msg = compiler_message(str(e)) or one_line(e)
        else:
            msg = one_line(e)
        return Health(False, msg, advice(msg, pv), now)
    except Exception as e:  # noqa: BLE001 - whatever a broken driver raises, the device is out
        msg = f"{type(e).__name__}: {one_line(e)}"
        return Health(False, msg, advice(msg, pv), now)
    want = int(x.sum())
    if int(got[0]) != want:
        msg = f"probe kernel gave a wrong answer ({int(got[0])} instead of {want})"
        return Health(False, msg, advice(msg, pv), now)
    return Health(True, checked_at=now)


def cache_dir() -> Path:
    env = os.environ.get("CLTUNE_CACHE_DIR", "").strip()
    if env:
        return Path(env).expanduser()
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("cltune", appauthor=False))


_lock = threading.Lock()
_memo: dict[str, Health] = {}


def _load(path: Path) -> dict[str, Health]:
    """The verdicts stored in `path`; entries that do not parse are ignored (re-probed)."""
    try:
        doc = json.loads(path.read_text())
        entries = doc["verdicts"] if doc.get("probe_version") == PROBE_VERSION else {}
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return {}
    out = {}
    for key, v in entries.items() if isinstance(entries, dict) else ():
        if (isinstance(v, dict) and isinstance(v.get("ok"), bool)
                and all(isinstance(v.get(f, ""), str) for f in ("message", "fix", "checked_at"))):
            out[key] = Health(v["ok"], v.get("message", ""), v.get("fix", ""),
                              v.get("checked_at", ""))
    return out


def _save(path: Path, verdicts: dict[str, Health]) -> None:
    """Write all verdicts atomically (temp file + rename); a failure is not an error."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        doc = {"probe_version": PROBE_VERSION,
               "verdicts": {k: asdict(h) for k, h in sorted(verdicts.items())}}
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".device-health-")
        with os.fdopen(fd, "w") as f:
            json.dump(doc, f, indent=1)
        os.replace(tmp, path)
    except OSError:
        pass


def health(dev: cl.Device, fingerprint: str, *, recheck: bool = False) -> Health:
    """The cached verdict on `dev` (fingerprint includes the driver), probing when unknown or
    when `recheck` is set."""
    key = f"{fingerprint}:{dev.driver_version.strip()}"
    path = cache_dir() / _FILE
    with _lock:
        if not recheck:
            hit = _memo.get(key) or _load(path).get(key)
            if hit is not None:
                _memo[key] = hit
                return hit
    verdict = probe(dev)
    with _lock:
        _memo[key] = verdict
        stored = _load(path)
        if stored.get(key) != verdict:
            stored[key] = verdict
            _save(path, stored)
    return verdict


def forget() -> None:
    """Drop the verdicts remembered in this process (the file stays)."""
    with _lock:
        _memo.clear()
