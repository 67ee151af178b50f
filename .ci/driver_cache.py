"""The folder of the OpenCL drivers' compiled programs that CI keeps between runs on a machine.

    python .ci/driver_cache.py        # prints the folder (made if missing), or nothing when off

Most of the test phase is the drivers compiling kernels (docs/ci.md); PoCL (POCL_CACHE_DIR)
and pyopencl's binary cache for the other drivers (XDG_CACHE_HOME) key what they keep on the
source, the build options and the device, so a program compiled by one run is the same
program in the next. CI keeps them in `$CLTUNE_CI_DRIVER_CACHE` (default
~/.cache/cltune-ci/drivers; set it empty for a cold run), in a subfolder per OpenCL stack:
the platforms' and devices' names and versions, the driver libraries' sizes, the
CPU and pyopencl's version. Only the drivers' programs are kept: cltune's own verdicts
(health, vetting) are made afresh by every run, and every kernel still runs. The three most
recently used stacks are kept (hosts vary), and a stack's folder past 4 GiB starts empty.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
from pathlib import Path

KEEP = 3
MAX_BYTES = 4 << 30


def _stack() -> list[str]:
    import pyopencl as cl

    parts = [cl.VERSION_TEXT, sys.version.split()[0]]
    with open("/proc/cpuinfo") as f:
        seen = set()
        for line in f:
            k = line.split(":", 1)[0].strip()
            if k in ("vendor_id", "cpu family", "model", "model name", "flags") and k not in seen:
                seen.add(k)
                parts.append(line.strip())
    vendors = os.environ.get("OCL_ICD_VENDORS", "/etc/OpenCL/vendors")
    for icd in sorted(Path(vendors).glob("*.icd")) if Path(vendors).is_dir() else []:
        lib = icd.read_text().strip()
        parts.append(lib)
        try:  # the size, not the date: CI installs the wheels' drivers afresh each run
            parts.append(str(os.stat(lib).st_size))
        except OSError:
            pass  # a bare name the loader finds on its path: its versions below tell
    for p in cl.get_platforms():
        parts += [p.name, p.version]
        try:
            devs = p.get_devices()
        except cl.Error:
            continue
        for d in devs:
            parts += [d.name, d.version, d.driver_version]
    return parts


def _usage(path: Path) -> tuple[int, int]:
    """(files, bytes) under path, in one walk."""
    files = size = 0
    for f in path.rglob("*"):
        if f.is_file():
            files, size = files + 1, size + f.stat().st_size
    return files, size


def main() -> int:
    root = os.environ.get("CLTUNE_CI_DRIVER_CACHE", str(Path.home() / ".cache/cltune-ci/drivers"))
    if not root.strip():
        print("driver cache: off (a cold run)", file=sys.stderr)
        return 0
    key = hashlib.sha256("\n".join(_stack()).encode()).hexdigest()[:16]
    base = Path(root)
    here = base / key
    files, size = _usage(here) if here.is_dir() else (0, 0)
    if size > MAX_BYTES:
        shutil.rmtree(here, ignore_errors=True)
        files = size = 0
    (here / "pocl").mkdir(parents=True, exist_ok=True)
    (here / "xdg").mkdir(parents=True, exist_ok=True)
    os.utime(here)
    others = sorted((p for p in base.iterdir() if p.is_dir() and p != here),
                    key=lambda p: p.stat().st_mtime, reverse=True)
    for old in others[KEEP - 1:]:
        shutil.rmtree(old, ignore_errors=True)
    state = f"warm: {files} files, {size >> 20} MiB" if files else "cold: empty"
    print(f"driver cache: {here} ({state})", file=sys.stderr)
    print(here)
    return 0


if __name__ == "__main__":
    sys.exit(main())
