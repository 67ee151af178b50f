"""A probe build's work-group limit is kept per device, driver, source and options (the
expression families' spaces are capped by it; NVIDIA's compiler took 20-48 s a probe)."""

from __future__ import annotations

import json

import pytest

from cltune.device import wg_limits


@pytest.fixture
def fresh(monkeypatch, tmp_path):
    monkeypatch.setenv("CLTUNE_CACHE_DIR", str(tmp_path))
    wg_limits.forget()
    yield tmp_path
    wg_limits.forget()


def test_a_limit_is_probed_once_then_kept_on_disk(info, fresh):
    calls = []

    def probe():
        calls.append(1)
        return 256

    assert wg_limits.kept_limit(info, "src", ["-DA=1"], probe) == 256
    assert wg_limits.kept_limit(info, "src", ["-DA=1"], probe) == 256
    wg_limits.forget()  # another process: the file answers
    assert wg_limits.kept_limit(info, "src", ["-DA=1"], probe) == 256
    assert calls == [1]
    # another source or option is another kernel
    assert wg_limits.kept_limit(info, "src2", ["-DA=1"], lambda: 128) == 128
    assert wg_limits.kept_limit(info, "src", ["-DA=2"], lambda: 64) == 64
    doc = json.loads((fresh / "wg-limits.json").read_text())
    assert sorted(v["wg"] for v in doc["verdicts"].values()) == [64, 128, 256]


def test_a_failed_probe_keeps_nothing_and_a_bad_file_reads_as_empty(info, fresh):
    def broken():
        raise RuntimeError("build failed")

    with pytest.raises(RuntimeError):
        wg_limits.kept_limit(info, "s", [], broken)
    assert wg_limits.kept_limit(info, "s", [], lambda: 32) == 32
    wg_limits.forget()
    key = wg_limits.key_of(info, "t", [])
    (fresh / "wg-limits.json").write_text(json.dumps(
        {"wg_limits_version": 1, "verdicts": {key: {"wg": "1024; rm -rf"}}}))
    assert wg_limits.kept_limit(info, "t", [], lambda: 16) == 16  # the bad entry dropped
    (fresh / "wg-limits.json").write_text("not json")
    wg_limits.forget()
    assert wg_limits.kept_limit(info, "t", [], lambda: 8) == 8
