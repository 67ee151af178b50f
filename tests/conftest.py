"""Shared fixtures: a real OpenCL device (PoCL by default), temporary databases.

`CLTUNE_TEST_DEVICE` picks the device (index, P:D or name substring); by default the first PoCL
device whose health verdict is fully working, else the first such device, else the first usable one
(devices are chosen by cltune's own verdict of what they can do, never by name). Tests that need a
system component skip with a reason, unless `CLTUNE_REQUIRE_ALL=1` (set by .ci/run) turns the skip
into a failure so CI always runs everything.

One cache folder serves the whole test session (`CLTUNE_TEST_SESSION_DIR`, made by the first
pytest process and inherited by its xdist workers and every process they start): cltune's own
cache (`CLTUNE_CACHE_DIR`: device-health, vetting and work-group-limit verdicts, ICD folders)
and the drivers' compiled programs (`POCL_CACHE_DIR` for PoCL, `XDG_CACHE_HOME` for pyopencl's
binary cache of the other drivers). So a device is probed and a config vetted or built once per
session, not once per worker, through the same on-disk formats and locks the product uses; a
run neither reads nor writes cltune's or the drivers' caches of the user's applications
(only CI's own folder of compiled programs, below), and the session's folder is removed at
the end. Point
`CLTUNE_TEST_SESSION_DIR` at a folder of your own to keep it between runs. The drivers'
compiled programs (keyed by the drivers themselves on the source, the options and the device)
are kept between runs by default, in the folder .ci/run keeps per machine and OpenCL stack
(.ci/driver_cache.py, docs/ci.md), so most of a later run's compiles are read back:
`CLTUNE_TEST_DRIVER_CACHE=<folder>` names another, `CLTUNE_TEST_DRIVER_CACHE=` (empty) keeps
them in the session's folder only (a cold run). Verdicts are still made afresh and every
kernel still runs. Tests
that need a fresh cache, worker or fault make their own (`support.faults.injected`).

The tests run against the *installed* cltune (`pip install .` or `pip install -e .`), never against
the checkout's cltune/ directory by accident: `python -m pytest` from the repository root puts the
root first on sys.path, and there cltune/ lacks cltune.kernels and cltune.tuning_db (they live in
kernels/ and tuning_db/ and are mapped in by the install). The root is dropped from sys.path here,
before anything imports cltune, and PYTHONSAFEPATH=1 keeps the Pythons that tests start
(subprocess, multiprocessing) from putting their working directory first (Python >= 3.11).
tests/test_install.py checks the result. Helpers shared by tests live in tests/support/ (`from
support.require import need`); no test imports this file.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

_ROOT = Path(__file__).resolve().parent.parent
sys.path[:] = [p for p in sys.path if Path(p or os.curdir).resolve() != _ROOT]
os.environ["PYTHONSAFEPATH"] = "1"


def _kept_driver_cache() -> str:
    """The drivers' folder of .ci/driver_cache.py for this OpenCL stack (its own process: the
    drivers must not start in this one before POCL_CACHE_DIR is set), or '' where it is off
    (CLTUNE_CI_DRIVER_CACHE=) or cannot tell."""
    script = _ROOT / ".ci" / "driver_cache.py"
    if not script.is_file():
        return ""
    try:
        out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                             timeout=120, check=False)
    except (OSError, subprocess.SubprocessError):
        return ""
    lines = out.stdout.strip().splitlines()
    return lines[-1] if out.returncode == 0 and lines else ""


def _session_caches() -> str | None:
    """Set the session's cache folders; returns the folder when this process made it (then it
    removes it when the session ends), None when it was inherited or given."""
    made = None
    root = os.environ.get("CLTUNE_TEST_SESSION_DIR", "").strip()
    if not root:
        root = made = tempfile.mkdtemp(prefix="cltune-test-session-")
        os.environ["CLTUNE_TEST_SESSION_DIR"] = root
    os.environ.setdefault("CLTUNE_CACHE_DIR", os.path.join(root, "cltune"))
    # the drivers' compiled programs: by default the folder .ci/run keeps for this machine's
    # OpenCL stack (found once, by the first pytest process; its workers inherit it), else
    # the one given, else (CLTUNE_TEST_DRIVER_CACHE= empty) the session's own
    if "CLTUNE_TEST_DRIVER_CACHE" not in os.environ:
        os.environ["CLTUNE_TEST_DRIVER_CACHE"] = _kept_driver_cache()
    drivers = os.environ.get("CLTUNE_TEST_DRIVER_CACHE", "").strip() or root
    os.environ["POCL_CACHE_DIR"] = os.path.join(drivers, "pocl")
    os.environ["XDG_CACHE_HOME"] = os.path.join(drivers, "xdg")
    return made


_MADE_SESSION_DIR = _session_caches()

import pyopencl as cl  # noqa: E402
import pytest  # noqa: E402
from support.require import need  # noqa: E402

from cltune.device.select import device_health, list_devices, select  # noqa: E402


def _default_selector() -> str:
    """By cltune's own verdicts: the first fully working PoCL device (every machine has one
    once Debian's is installed), else the first fully working device, else the first usable
    one (index 0: working devices come first, then restricted ones)."""
    sel = os.environ.get("CLTUNE_TEST_DEVICE")
    if sel:
        return sel
    working = [i for i in list_devices() if device_health(i).rank == 0]
    for info in working:
        # PoCL by its platform: its devices' vendor is the CPU's ("intel" on Intel hosts), so
        # a test of `vendor == "pocl"` ran the suite on Intel's CPU runtime there
        if info.vendor == "pocl" or "portable computing language" in info.platform.lower():
            return str(info.index)
    return str(working[0].index) if working else "0"


@pytest.fixture(scope="session")
def device():
    devs = list_devices()
    need(bool(devs), "no OpenCL device")
    return select(_default_selector())


@pytest.fixture(scope="session")
def info(device):
    return device[0]


@pytest.fixture(scope="session")
def ctx(device):
    return cl.Context([device[1]])


@pytest.fixture(scope="session")
def queue(ctx, device):
    return cl.CommandQueue(ctx, device[1])


@pytest.fixture
def db_url(tmp_path):
    return f"sqlite:///{tmp_path / 'tuning.db'}"


@pytest.fixture
def storage_url(tmp_path):
    return f"sqlite:///{tmp_path / 'studies.db'}"


#: a test that took longer than this on a 2-core machine (tests/durations.json) is `slow`
SLOW_S = 1.0
#: what a test missing from tests/durations.json (a new one) is taken to take
NEW_TEST_S = 1.0


def _durations() -> dict[str, float]:
    try:
        got = json.loads((Path(__file__).parent / "durations.json").read_text())
    except (OSError, ValueError):
        return {}
    return {k: float(v) for k, v in got.items() if isinstance(v, (int, float))}


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by marker
def pytest_collection_modifyitems(config, items):
    """Every test that took more than SLOW_S seconds in the measured run
    (tests/durations.json, written by scripts/test_durations.py) is marked `slow`, so the
    README's quick set stays quick; and the longest tests run first (a stable sort by the
    same figures, `slow` ones unknown there first): with several xdist workers the long ones
    start early instead of leaving one worker busy at the end while the others idle."""
    took = _durations()
    for item in items:
        if took.get(item.nodeid, 0.0) > SLOW_S and item.get_closest_marker("slow") is None:
            item.add_marker(pytest.mark.slow)

    def longest_first(item) -> float:
        known = took.get(item.nodeid)
        if known is None:
            known = 60.0 if item.get_closest_marker("slow") is not None else NEW_TEST_S
        return -known

    items.sort(key=longest_first)


def pytest_unconfigure(config):
    if _MADE_SESSION_DIR and not hasattr(config, "workerinput"):
        shutil.rmtree(_MADE_SESSION_DIR, ignore_errors=True)
