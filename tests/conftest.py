"""Shared fixtures: a real OpenCL device (PoCL by default), temporary databases.

`CLTUNE_TEST_DEVICE` picks the device (index, P:D or name substring). Tests that need a system
component skip with a reason, unless `CLTUNE_REQUIRE_ALL=1` (set by .ci/run) turns the skip into
a failure so CI always runs everything.
"""

from __future__ import annotations

import os

import pyopencl as cl
import pytest

from cltune.devices import list_devices, select


def need(ok: bool, reason: str) -> None:
    """Skip (or fail under CLTUNE_REQUIRE_ALL=1) when a system component is missing."""
    if ok:
        return
    if os.environ.get("CLTUNE_REQUIRE_ALL") == "1":
        pytest.fail(f"required component missing: {reason}")
    pytest.skip(reason)


def _default_selector() -> str:
    sel = os.environ.get("CLTUNE_TEST_DEVICE")
    if sel:
        return sel
    for info in list_devices():  # prefer PoCL: every machine has it
        if info.platform.startswith("Portable Computing Language"):
            return str(info.index)
    return "0"


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
