"""The driver cache shared by processes (cltune/device/driver_cache.py): verdict files that
two processes add to at once keep every entry and are never read torn, the lock that guards
them waits for its holder and gives up after its wait, and a device's health probe runs once
when two callers ask for it at once.

The test session itself shares one cache folder between its xdist workers (tests/conftest.py);
these tests make the same concurrency happen on purpose, with the product's functions."""

from __future__ import annotations

import json
import multiprocessing as mp
import threading
import time
from pathlib import Path

import pytest

from cltune.device import health
from cltune.device.driver_cache import add_verdicts, exclusive, lock_path, read_verdicts
from cltune.isolation import vetting

N_EACH = 150


def _parse(v: dict) -> dict | None:
    return v if isinstance(v.get("n"), int) else None


def _writer(folder: str, tag: str, n: int, go) -> None:  # noqa: ANN001 - an mp.Event
    """Runs in a spawned process: `n` verdicts through vetting's own writer, `n` through the
    generic one, interleaved, into the shared folder."""
    import os

    os.environ["CLTUNE_CACHE_DIR"] = folder
    from cltune.isolation import vetting as v

    go.wait()
    h = v.host_hash()  # a key of this code (vetting drops other versions' verdicts)
    for i in range(n):
        v._save(f"{tag}:{i}:{h}", v.Verdict(True, "timed", "", "2026-12-05T00:00:00+00:00"))
        add_verdicts(Path(folder) / "other.json", "k", 1, _parse, dict, {f"{tag}:{i}": {"n": i}})


@pytest.mark.multiprocess
def test_two_processes_adding_verdicts_keep_every_entry_and_never_tear(tmp_path):
    """Two processes add 150 verdicts each to two files at once while this one reads them
    raw: every read parses (a torn file would not), and at the end both files hold all 300
    entries (a read-merge-write without the lock loses the other process's entries)."""
    ctx = mp.get_context("spawn")
    go = ctx.Event()
    procs = [ctx.Process(target=_writer, args=(str(tmp_path), tag, N_EACH, go))
             for tag in ("a", "b")]
    for p in procs:
        p.start()
    go.set()
    reads = 0
    while any(p.is_alive() for p in procs):
        for name in ("vetted.json", "other.json"):
            try:
                text = (tmp_path / name).read_text()
            except FileNotFoundError:
                continue
            json.loads(text)  # raises on a torn file
            reads += 1
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    assert reads > 0
    vetted = json.loads((tmp_path / "vetted.json").read_text())["verdicts"]
    other = read_verdicts(tmp_path / "other.json", "k", 1, _parse)
    want = {f"{t}:{i}" for t in ("a", "b") for i in range(N_EACH)}
    assert {k.rsplit(":", 1)[0] for k in vetted if k.count(":") == 2} == want
    assert set(other) == want
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temp left


def _hold(lock: str, seconds: float, held) -> None:  # noqa: ANN001 - an mp.Event
    with exclusive(Path(lock)) as ok:
        assert ok
        held.set()
        time.sleep(seconds)


@pytest.mark.multiprocess
def test_the_lock_waits_for_its_holder_and_gives_up_after_its_wait(tmp_path):
    lock = tmp_path / "x.lock"
    ctx = mp.get_context("spawn")
    held = ctx.Event()
    p = ctx.Process(target=_hold, args=(str(lock), 1.5, held))
    p.start()
    assert held.wait(30)
    t0 = time.monotonic()
    with exclusive(lock, wait_s=0.2) as ok:  # the holder keeps it past the wait: go on
        assert not ok
    assert time.monotonic() - t0 < 1.0
    with exclusive(lock, wait_s=30) as ok:  # waits until the holder lets go
        assert ok
    p.join(30)
    assert p.exitcode == 0


def test_a_folder_that_cannot_hold_a_lock_costs_only_the_lock(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    with exclusive(blocker / "sub" / "x.lock") as ok:  # a file where the folder should be
        assert not ok
    stored = add_verdicts(blocker / "v.json", "k", 1, _parse, dict, {"a": {"n": 1}})
    assert stored == {"a": {"n": 1}}  # merged in memory, the write failed quietly
    assert lock_path(tmp_path / "v.json").name == "v.json.lock"


def test_one_health_probe_when_two_callers_ask_at_once(device, tmp_path, monkeypatch):
    """Two threads ask for the health of a device nobody probed (a fresh cache): one probes
    it, the other waits on the probe's lock and reads that verdict; both get the same one."""
    info, dev = device
    monkeypatch.setenv("CLTUNE_CACHE_DIR", str(tmp_path))
    health.forget()
    vetting.forget()
    probes: list[float] = []
    real = health.probe

    def counted(*a, **k):  # noqa: ANN002, ANN003
        probes.append(time.monotonic())
        return real(*a, **k)

    monkeypatch.setattr(health, "probe", counted)
    got: list[health.Health] = []
    ts = [threading.Thread(target=lambda: got.append(health.health(dev, info)))
          for _ in range(2)]
    try:
        for t in ts:
            t.start()
        for t in ts:
            t.join(600)
    finally:
        health.forget()
        vetting.forget()
    assert len(got) == 2 and got[0] == got[1] and got[0].ok
    assert len(probes) == 1
    assert health.cached(info) == got[0]
