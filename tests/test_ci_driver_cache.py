""".ci/driver_cache.py, the folder of the drivers' compiled programs CI keeps between runs:
one folder per OpenCL stack (the same key twice on one machine, another where the stack
differs), the three most recently used stacks kept, a folder past its cap started empty, and
an empty setting a cold run that keeps nothing."""

from __future__ import annotations

import importlib.util
import os
import time
from pathlib import Path

import pytest

_PATH = Path(__file__).resolve().parent.parent / ".ci" / "driver_cache.py"


@pytest.fixture
def dc(monkeypatch, tmp_path):
    if not _PATH.is_file():
        pytest.skip("not a checkout: .ci/ is not here")
    spec = importlib.util.spec_from_file_location("driver_cache", _PATH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    monkeypatch.setenv("CLTUNE_CI_DRIVER_CACHE", str(tmp_path / "drivers"))
    return mod


def _run(dc, capsys, err: list[str] | None = None) -> str:
    assert dc.main() == 0
    got = capsys.readouterr()
    if err is not None:
        err.append(got.err)
    return got.out.strip()


def test_one_folder_per_stack_kept_between_runs(dc, capsys, monkeypatch, tmp_path):
    err: list[str] = []
    first = _run(dc, capsys, err)
    assert "cold: empty" in err[0]
    assert Path(first, "pocl").is_dir() and Path(first, "xdg").is_dir()
    Path(first, "pocl", "program.so").write_bytes(b"x" * 100)
    assert _run(dc, capsys, err) == first  # the same stack: the same folder, programs kept
    assert "warm: 1 files" in err[1]
    assert Path(first, "pocl", "program.so").is_file()
    stack = dc._stack()
    monkeypatch.setattr(dc, "_stack", lambda: [*stack, "another driver 1.0"])
    other = _run(dc, capsys)
    assert other != first and Path(first, "pocl", "program.so").is_file()


def test_three_stacks_kept_and_an_oversized_one_starts_empty(dc, capsys, monkeypatch):
    made = []
    for k in range(5):
        monkeypatch.setattr(dc, "_stack", lambda k=k: [f"stack {k}"])
        made.append(_run(dc, capsys))
        old = time.time() - 100 * (5 - k)
        os.utime(made[-1], (old, old))
    left = sorted(p.name for p in Path(made[0]).parent.iterdir())
    assert left == sorted(Path(m).name for m in made[-3:])
    Path(made[-1], "pocl", "big").write_bytes(b"x" * 2048)
    monkeypatch.setattr(dc, "MAX_BYTES", 1024)
    assert _run(dc, capsys) == made[-1] and not Path(made[-1], "pocl", "big").exists()


def test_empty_setting_is_a_cold_run(dc, capsys, monkeypatch):
    monkeypatch.setenv("CLTUNE_CI_DRIVER_CACHE", "")
    err: list[str] = []
    assert _run(dc, capsys, err) == "" and "off (a cold run)" in err[0]
