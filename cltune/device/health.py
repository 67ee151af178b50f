"""Is a device usable, and with which restrictions? Health that tests what runs.

The verdict comes from a worker process (`worker.Worker`), so that a driver that crashes or
hangs there is named instead of taking the caller down. In order:

1. `tree` (health_probes): a local-memory tree with barriers over a prime number of integers
   must build and return the exact sum, else the device is unusable (pyopencl's bundled PoCL
   3.0-rc2 on a CPU its LLVM 14 does not know: "unknown target CPU 'generic'").
2. `vec512`: 512-bit vectors handed to builtins, per lane type; where they crash, hang or
   answer wrong (the bundled PoCL on AMD Zen 4 links an AVX-512 builtin library into code
   compiled without AVX-512), vectors are capped at 256 bits: the spaces and the builtin
   configs step down (`DeviceInfo.max_vector_bytes`). It may take ten times what `tree` took
   (between the deadline floor and a probe's deadline): a hang is named in ~20 s, not 60.
3. What cltune serves untuned: the builtin configs of the 1-D and axis families for every
   dtype class (4- and 8-byte, float and integer, rows and columns) are vetted (`vetting`:
   built, launched, answers checked), their verdicts cached for the runtime; one that still
   fails is named, and the runtime serves the next level of its fallback chain there. If even
   the safest 1-D float32 sum fails, the device is unusable. An expression kernel's untuned
   configs (`expressions`) are run whole and along both axes for the same dtype classes.

A crash or hang is named with the signal and the driver's last words. The verdict is cached
per (device fingerprint, driver, probe version) in a JSON file in the user cache directory
(`driver_cache.cache_dir()`), never in the tuning database; `cltune devices --recheck` probes
again. An unwritable cache only costs a probe per process.
"""

from __future__ import annotations

import hashlib
import re
import threading
import time
from dataclasses import asdict, dataclass, replace
from datetime import datetime, timezone
from importlib.util import find_spec
from pathlib import Path

import pyopencl as cl

from cltune.core import family
from cltune.core.ops import OpSpec
from cltune.device.driver_cache import (
    add_verdicts,
    cache_dir,
    exclusive,
    lock_path,
    read_verdicts,
)
from cltune.device.info import DeviceInfo
from cltune.isolation.vetting import verdict
from cltune.isolation.worker import Worker, WorkerFailure, deadline_floor, unstarted

PROBE_VERSION = 2
_FILE = "device-health.json"
#: the widest vectors where 512-bit ones fail (`vec512`): 256 bits
CAPPED_VECTOR_BYTES = 32
#: how long a process waits for another one's probe of the same device before probing itself
_PROBE_WAIT_S = 900.0

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
#: the dtype classes whose builtin configs are vetted: 4- and 8-byte, float and integer
VETTED_DTYPES = ("float32", "int32", "float64", "int64")


@dataclass(frozen=True)
class Health:
    """The verdict on one device. `message` is the compiler's or driver's own words on why it
    is unusable, `fix` what a user can do about it (both '' when ok); `max_vector_bytes` the
    vector restriction (0: none), `notes` what is restricted or passed over, and why."""

    ok: bool
    message: str = ""
    fix: str = ""
    checked_at: str = ""
    max_vector_bytes: int = 0
    notes: str = ""

    @property
    def restricted(self) -> bool:
        return self.ok and bool(self.max_vector_bytes or self.notes)

    @property
    def status(self) -> str:
        if not self.ok:
            return f"unusable: {self.message}"
        return f"restricted: {self.notes}" if self.restricted else "ok"

    @property
    def rank(self) -> int:
        """0 fully working, 1 usable with restrictions, 2 unusable (the device order)."""
        return 2 if not self.ok else 1 if self.restricted else 0


#: What to tell a user, as data: (pattern on the message, pattern on the platform version, fix).
#: `{impl}` and `{llvm}` are filled from the platform version. First match wins.
ADVICE: tuple[tuple[str, str, str], ...] = (
    (r"evaluation worker did not start: the evaluation worker exited \(exit status", r"",
     "cltune's worker process could not run in this Python environment (nothing of the "
     "driver's): reinstall cltune (`pip install .` or `pip install -e .` in its "
     "checkout) or run from another directory than the checkout; no verdict was kept"),
    (r"unknown target CPU", r"PoCL",
     "{impl} uses LLVM {llvm}, which does not know this CPU: install your distribution's PoCL "
     "(`apt install pocl-opencl-icd`) or Intel's CPU runtime (cltune[intel]: `pip install "
     "intel-opencl-rt intel-cmplr-lib-rt`)"),
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


def _ask(w: Worker, name: str, src: str = "", deadline_s: float | None = None) -> str:
    """A probe's answer: '' when it passed, else why not (a crash or hang included).
    WorkerFailure `unstarted` when the worker cannot run at all (no verdict on the device)."""
    try:
        return w.call("probe", name, src, deadline_s=deadline_s or _probe_deadline())
    except WorkerFailure as e:
        if e.kind == "unstarted":
            raise
        return e.reason


def _probe_deadline() -> float:
    return 3 * deadline_floor()  # building and running a probe: 60 s by default


#: the `vec512` probe (a few small kernels, in the worker the `tree` probe started and warmed)
#: may take this many times what `tree` took (worker start and cold compiler included)
VEC512_FACTOR = 10.0


def _vec512_deadline(tree_s: float) -> float:
    """`vec512`'s deadline after a `tree` probe of `tree_s` seconds: ten times that, at least
    the deadline floor (20 s) and at most a probe's (60 s). A driver that hangs on 512-bit
    vectors (pyopencl's bundled PoCL on Zen 4) is named after ~20 s instead of 60."""
    return min(_probe_deadline(), max(deadline_floor(), VEC512_FACTOR * tree_s))


def _builtins(info: DeviceInfo) -> list[tuple]:
    """(family, variant, config chain, size class, source hash, lane bytes) of what the
    runtime serves untuned, per vetted dtype class: the builtin config, then the safest; each
    family that serves untuned configs says which (its descriptor's `untuned`)."""
    out = []
    for dt in VETTED_DTYPES:
        spec = OpSpec("sum", dt)
        if spec.needs_fp64 and not info.fp64:
            continue
        for name in family.names():
            if family.get(name).untuned:
                out += [(name, *row) for row in family.entry(name, "untuned")(info, spec)]
    return out


def probe(dev: cl.Device, info: DeviceInfo) -> Health:
    """Probe `dev` in a worker process of its own (no cache): see the module's steps."""
    now = datetime.now(timezone.utc).isoformat(timespec="seconds")
    pv = info.platform_version
    w = Worker(replace(info, max_vector_bytes=0))
    try:
        t0 = time.monotonic()
        why = _ask(w, "tree", PROBE_SRC)
        if why:
            return Health(False, why, advice(why, pv), now)
        cap, notes = 0, []
        why = _ask(w, "vec512", deadline_s=_vec512_deadline(time.monotonic() - t0))
        if why:
            cap = CAPPED_VECTOR_BYTES
            notes.append(f"vectors capped at {cap * 8} bits (512-bit vectors fail: {why})")
            w.close()
            w = Worker(replace(info, max_vector_bytes=cap))
        why = _ask(w, "expressions")
        if why:
            notes.append(f"expressions: {why[:300]} (each config is vetted before it serves)")
        rinfo = replace(info, max_vector_bytes=cap)
        for family, variant, chain, size, src_hash, lane in _builtins(rinfo):
            for i, cfg in enumerate(chain):
                v = verdict(rinfo, family, variant, cfg, size, source_hash=src_hash,
                            element_bytes=lane, worker=w)
                if v.ok:
                    break
                last = i == len(chain) - 1
                notes.append(f"{family} {variant}: {'safest' if i else 'builtin'} config "
                             f"{cfg.short()} fails ({v.reason[:200]})"
                             + ("" if last else "; the next level serves"))
                if last and (family, variant) == ("reduce", "sum/float32"):
                    msg = f"no config of the 1-D float32 sum runs: {v.reason}"
                    return Health(False, msg, advice(msg, pv), now)
        return Health(True, checked_at=now, max_vector_bytes=cap, notes="; ".join(notes))
    finally:
        w.close()


_lock = threading.Lock()
_memo: dict[str, Health] = {}


def _parse(v: dict) -> Health | None:
    if (isinstance(v.get("ok"), bool)
            and all(isinstance(v.get(f, ""), str)
                    for f in ("message", "fix", "checked_at", "notes"))
            and type(v.get("max_vector_bytes", 0)) is int
            and not unstarted(v.get("message", ""))):
        return Health(v["ok"], v.get("message", ""), v.get("fix", ""),
                      v.get("checked_at", ""), max(0, v.get("max_vector_bytes", 0)),
                      v.get("notes", ""))
    return None


def _load(path: Path) -> dict[str, Health]:
    """The verdicts stored in `path`; entries that do not parse are ignored (re-probed)."""
    return read_verdicts(path, "probe_version", PROBE_VERSION, _parse)


def _save(path: Path, key: str, found: Health) -> None:
    """Add one verdict, keeping the other processes' (a failure is not an error: the next
    process probes again)."""
    add_verdicts(path, "probe_version", PROBE_VERSION, _parse, asdict, {key: found})


def _key(info: DeviceInfo) -> str:
    return f"{info.fingerprint}:{info.driver}"


def cached(info: DeviceInfo) -> Health | None:
    """The verdict on the device of `info` if one is known (this process or the file); never
    probes."""
    key = _key(info)
    with _lock:
        hit = _memo.get(key) or _load(cache_dir() / _FILE).get(key)
        if hit is not None:
            _memo[key] = hit
        return hit


def health(dev: cl.Device, info: DeviceInfo, *, recheck: bool = False) -> Health:
    """The cached verdict on `dev` (described by `info`; its fingerprint includes the
    driver), probing when unknown or when `recheck` is set."""
    if not recheck:
        hit = cached(info)
        if hit is not None:
            return hit
    key, path = _key(info), cache_dir() / _FILE
    # one probe of a device at a time on this machine: a process that finds another probing
    # it waits for that verdict instead of probing again (two applications starting at once,
    # pytest-xdist workers); a recheck probes anyway
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    with exclusive(lock_path(path.with_name(f"probe-{digest}")), wait_s=_PROBE_WAIT_S):
        if not recheck:
            hit = _load(path).get(key)
            if hit is not None:
                with _lock:
                    _memo[key] = hit
                return hit
        try:
            found = probe(dev, info)
        except WorkerFailure as e:  # `unstarted`: this environment, not the device: not kept
            now = datetime.now(timezone.utc).isoformat(timespec="seconds")
            return Health(False, e.reason, advice(e.reason, info.platform_version), now)
        with _lock:
            _memo[key] = found
        _save(path, key, found)
    return found


def restricted(info: DeviceInfo, h: Health | None) -> DeviceInfo:
    """`info` with the verdict's restrictions applied (what spaces and defaults read)."""
    if h is None or h.max_vector_bytes == info.max_vector_bytes:
        return info
    return replace(info, max_vector_bytes=h.max_vector_bytes)


def forget() -> None:
    """Drop the verdicts remembered in this process (the file stays)."""
    with _lock:
        _memo.clear()
