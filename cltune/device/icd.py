"""Make Intel's CPU OpenCL runtime from PyPI (`pip install 'cltune[intel]'`) visible to
pyopencl's ICD loader without environment variables.

`intel-opencl-rt` puts `libintelocl.so` in the environment's `lib/`, but the `.icd` file it
ships points to a path that does not exist, so the loader never finds it. When that library is
there and the user has not set `OCL_ICD_VENDORS`, `register()` writes a folder in the user cache
directory holding an `.icd` file with the library's real path plus copies of the system's
`/etc/OpenCL/vendors/*.icd`, and points `OCL_ICD_VENDORS` at it. The library's RUNPATH is
`$ORIGIN`, so its own dependencies (`libimf.so`, TBB, ...) are found without
`LD_LIBRARY_PATH`.

It must run before the process first asks for platforms: `import cltune` does it. An
application that lists platforms before importing cltune sees only what its environment
registers. `CLTUNE_NO_ICD_SETUP=1` turns it off.
"""

from __future__ import annotations

import hashlib
import os
import site
import sys
import tempfile
from pathlib import Path

SYSTEM_VENDORS = Path("/etc/OpenCL/vendors")


def intel_cpu_library() -> Path | None:
    """The real path of `libintelocl.so` installed by pip in this environment (or the user
    site), if any."""
    for base in (sys.prefix, site.getuserbase()):
        lib = Path(base) / "lib" / "libintelocl.so"
        if lib.exists():
            return lib.resolve()
    return None


def _folder_contents(lib: Path) -> dict[str, str]:
    files = {"cltune-intel-cpu.icd": f"{lib}\n"}
    try:
        for f in sorted(SYSTEM_VENDORS.glob("*.icd")):
            text = f.read_text()
            if "libintelocl" not in text:  # the system's own Intel entry would load it twice
                files[f.name] = text
    except OSError:
        pass
    return files


def _write_folder(root: Path, files: dict[str, str]) -> Path:
    """A folder named by its content hash, created atomically (temp dir + rename)."""
    tag = hashlib.sha256(repr(sorted(files.items())).encode()).hexdigest()[:16]
    target = root / f"icd-{tag}"
    if target.is_dir():
        return target
    root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=root, prefix=".icd-"))
    for name, text in files.items():
        (tmp / name).write_text(text)
    try:
        tmp.rename(target)
    except OSError:  # another process won the race: its folder has the same contents
        for f in tmp.iterdir():
            f.unlink()
        tmp.rmdir()
    return target


def register() -> Path | None:
    """Point `OCL_ICD_VENDORS` at a folder that adds the pip-installed Intel CPU runtime to
    the system's ICDs; returns the folder, or None when there was nothing to do."""
    if os.environ.get("OCL_ICD_VENDORS") or os.environ.get("CLTUNE_NO_ICD_SETUP") == "1":
        return None
    lib = intel_cpu_library()
    if lib is None:
        return None
    from cltune.device.driver_cache import (
        cache_dir,  # lazy: platformdirs, only when Intel's runtime is installed
    )

    try:
        folder = _write_folder(cache_dir(), _folder_contents(lib))
    except OSError:
        return None
    os.environ["OCL_ICD_VENDORS"] = str(folder)
    return folder
