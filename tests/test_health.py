"""Device health: the probe, its cache, the order of the listing and the refusals.

Unusable devices are made the way users meet them: a verdict in the health cache (what the probe
wrote on a host whose compiler fails), read by a fresh process; the probe's own failure paths
run a real broken build and a real wrong kernel on the test device.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from cltune.device import health as H
from cltune.device.select import device_health, list_devices


def _key(info) -> str:
    return f"{info.fingerprint}:{info.cl_device().driver_version.strip()}"


def _write_cache(path, verdicts: dict[str, H.Health]) -> None:
    """A cache holding `verdicts`, and for every other device the session's own verdict (so
    that a fresh process probes none of them again: a health check costs seconds)."""
    path.mkdir(parents=True, exist_ok=True)
    session = Path(os.environ["CLTUNE_CACHE_DIR"])
    try:
        known = json.loads((session / "device-health.json").read_text())["verdicts"]
    except (OSError, ValueError, KeyError):
        known = {}
    known.update({k: {"ok": h.ok, "message": h.message, "fix": h.fix,
                      "checked_at": h.checked_at} for k, h in verdicts.items()})
    doc = {"probe_version": H.PROBE_VERSION, "verdicts": known}
    (path / "device-health.json").write_text(json.dumps(doc))
    if (session / "vetted.json").exists():
        shutil.copy(session / "vetted.json", path / "vetted.json")


def _run(code: str, cache, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "CLTUNE_CACHE_DIR": str(cache), "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code), *args],
                          capture_output=True, text=True, timeout=300, env=env)


def _cli(cache, *args: str) -> subprocess.CompletedProcess:
    return _run("from cltune.cli.app import main; main()", cache, *args)


BROKEN = H.Health(False, "error: unknown target CPU 'generic'",
                  H.advice("error: unknown target CPU 'generic'",
                           "OpenCL 3.0 PoCL 3.0-rc2  Linux, Release, RELOC, LLVM 14.0.6"),
                  "2026-01-01T00:00:00+00:00")


def test_probe_passes_on_the_test_device(device):
    h = H.probe(device[1], device[0])
    assert h.ok and h.status == "ok" and h.message == "" and h.checked_at


def test_broken_build_is_unusable_with_the_compilers_message(device, monkeypatch):
    monkeypatch.setattr(H, "PROBE_SRC", "__kernel void cltune_probe(__global int *o) { o[0] = ; }")
    h = H.probe(device[1], device[0])
    assert not h.ok
    assert "error" in h.message.lower() and "\n" not in h.message, h
    assert h.fix and h.status.startswith("unusable: ")


def test_wrong_answer_is_unusable(device, monkeypatch):
    wrong = H.PROBE_SRC.replace("if (lid == 0) out[0] = tile[0];", "if (lid == 0) out[0] = 7;")
    assert wrong != H.PROBE_SRC
    monkeypatch.setattr(H, "PROBE_SRC", wrong)
    h = H.probe(device[1], device[0])
    assert not h.ok and "wrong answer (7 instead of" in h.message and "miscompiles" in h.fix


def test_advice_for_an_llvm_that_does_not_know_the_cpu():
    fix = BROKEN.fix
    assert "PoCL 3.0-rc2" in fix and "LLVM 14.0.6" in fix
    assert "apt install pocl-opencl-icd" in fix and "cltune[intel]" in fix
    assert "update or reinstall" in H.advice("CL_OUT_OF_HOST_MEMORY", "OpenCL 3.0 CUDA")


def test_verdict_is_cached_on_disk_and_rechecked(device, tmp_path, monkeypatch):
    info, dev = device
    monkeypatch.setenv("CLTUNE_CACHE_DIR", str(tmp_path))
    calls = []
    real = H.probe
    monkeypatch.setattr(H, "probe", lambda d, i: calls.append(d) or real(d, i))
    H.forget()
    try:
        assert H.health(dev, info).ok and len(calls) == 1
        stored = json.loads((tmp_path / "device-health.json").read_text())
        assert stored["verdicts"][_key(info)]["ok"] is True
        H.forget()  # a new process: the file answers, no probe
        assert H.health(dev, info).ok and len(calls) == 1
        assert H.health(dev, info, recheck=True).ok and len(calls) == 2
    finally:
        H.forget()


@pytest.mark.parametrize("garbage", ["not json", '{"probe_version": 1, "verdicts": [1]}',
                                     '{"probe_version": 1, "verdicts": {"x": {"ok": "yes"}}}',
                                     '{"probe_version": 999, "verdicts": {}}'])
def test_corrupt_or_foreign_cache_is_probed_again(device, tmp_path, monkeypatch, garbage):
    info, dev = device
    monkeypatch.setenv("CLTUNE_CACHE_DIR", str(tmp_path))
    (tmp_path / "device-health.json").write_text(garbage)
    H.forget()
    try:
        assert H.health(dev, info).ok
        doc = json.loads((tmp_path / "device-health.json").read_text())
        assert doc["probe_version"] == H.PROBE_VERSION and _key(info) in doc["verdicts"]
    finally:
        H.forget()


def test_unwritable_cache_costs_only_a_probe(device, tmp_path, monkeypatch):
    info, dev = device
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("CLTUNE_CACHE_DIR", str(blocker / "sub"))  # a dir below a file
    H.forget()
    try:
        assert H.health(dev, info).ok
    finally:
        H.forget()


@pytest.mark.multiprocess
def test_usable_devices_come_first_and_index_0_is_usable(tmp_path):
    infos = list_devices()
    first = infos[0]
    _write_cache(tmp_path, {_key(first): BROKEN})
    r = _run("""
        from cltune.device.select import device_health, list_devices
        for i in list_devices():
            print(i.index, i.fingerprint, device_health(i).ok)
        """, tmp_path)
    assert r.returncode == 0, r.stderr
    rows = [ln.split() for ln in r.stdout.splitlines()]
    oks = [ok == "True" for _, _, ok in rows]
    assert oks == sorted(oks, reverse=True), rows  # every usable one before every unusable one
    assert first.fingerprint in {fp for _, fp, ok in rows if ok == "False"}
    if any(oks):
        assert oks[0], rows


def test_unknown_devices_are_probed_side_by_side(monkeypatch):
    """A listing probes the devices it has no verdict on at once (each probe is a worker
    process of its own): a machine waits for its slowest probe, not for their sum. The fake
    probes meet at a barrier that breaks unless all of them run together; a device with a
    verdict is not probed; the verdicts come back in the devices' order."""
    import threading
    from dataclasses import replace

    from cltune.device import select as S
    one = list_devices()[0]  # four devices made of one: the probes are fakes
    found = [(replace(one, driver=f"fake-{k}"), one.cl_device()) for k in range(4)]
    known = found[0][0].fingerprint
    probed = [i for i, _ in found[1:]]
    meet = threading.Barrier(len(probed), timeout=60)
    calls = []

    def fake_probe(dev, info, *, recheck=False):
        calls.append(info.fingerprint)
        meet.wait()  # BrokenBarrierError unless every unknown device is probed at once
        return H.Health(True, info.fingerprint)

    monkeypatch.setattr(S, "health", fake_probe)
    monkeypatch.setattr(S, "cached", lambda info: H.Health(True, "kept")
                        if info.fingerprint == known else None)
    got = S._verdicts(found, recheck=False)
    assert [h.message for h in got] == ["kept"] + [i.fingerprint for i in probed]
    assert sorted(calls) == sorted(i.fingerprint for i in probed)


def test_a_whole_device_name_selects_it_among_names_that_hold_it(monkeypatch):
    """On Intel hosts PoCL names its device "pthread-Intel(R) Xeon(R) Processor", which holds
    Intel's runtime's "Intel(R) Xeon(R) Processor": that whole name selects Intel's device; a
    part of both stays ambiguous, and a part of one selects that one."""
    from dataclasses import replace

    from cltune.device import select as S
    one = list_devices()[0]
    fakes = [(replace(one, index=0, name="Intel(R) Xeon(R) Processor", platform="Intel(R) "
                      "OpenCL"), one.cl_device(), H.Health(True, "")),
             (replace(one, index=1, name="pthread-Intel(R) Xeon(R) Processor",
                      platform="Portable Computing Language"), one.cl_device(),
              H.Health(True, ""))]
    monkeypatch.setattr(S, "_enumerate", lambda recheck=False: fakes)
    assert S.select("Intel(R) Xeon(R) Processor")[0].index == 0
    assert S.select("intel(r) xeon(r) processor")[0].index == 0
    assert S.select("pthread-Intel")[0].index == 1
    with pytest.raises(S.DeviceError, match="ambiguous"):
        S.select("Xeon")


@pytest.mark.multiprocess
def test_get_reducer_on_an_unusable_device_raises_at_once(device, tmp_path):
    info, _ = device
    _write_cache(tmp_path, {_key(info): BROKEN})
    r = _run("""
        import sys
        from cltune import DeviceError, get_reducer
        from cltune.device.select import list_devices
        dev = next(i for i in list_devices() if i.fingerprint == sys.argv[1]).cl_device()
        try:
            get_reducer(dev)
        except DeviceError as e:
            print("DeviceError:", e)
        """, tmp_path, info.fingerprint)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("DeviceError:") and "unknown target CPU" in r.stdout
    assert "apt install pocl-opencl-icd" in r.stdout


@pytest.mark.multiprocess
def test_no_usable_device_is_one_line_and_recheck_restores(tmp_path):
    _write_cache(tmp_path, {_key(i): BROKEN for i in list_devices()})
    for args in (["tune", "--device", "0"], ["verify"], ["show", "--device", "0"],
                 ["export", "--device", "0", "-o", str(tmp_path / "x.json")]):
        r = _cli(tmp_path, *args, "--db", str(tmp_path / "t.db"))
        assert r.returncode == 1, (args, r.stdout, r.stderr)
        assert r.stderr.startswith("error: no usable OpenCL device") and "fix:" in r.stderr
        assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr, r.stderr
    r = _cli(tmp_path, "devices", "--json", "--db", str(tmp_path / "t.db"))
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)
    assert rows and all(d["status"].startswith("unusable: ") and d["fix"] for d in rows)
    r = _cli(tmp_path, "devices", "--recheck", "--json", "--db", str(tmp_path / "t.db"))
    assert r.returncode == 0, r.stderr
    # the verdict's kind, not its reason: a driver that fails a probe may fail it another way
    # each time (pyopencl's bundled PoCL on Zen 4: a hang, SIGABRT or a missing kernel)
    statuses = {d["fingerprint"]: _kind(d["status"]) for d in json.loads(r.stdout)}
    assert {i.fingerprint: _kind(device_health(i).status) for i in list_devices()} == statuses


def _kind(status: str) -> str:
    return status.split(" (", 1)[0]


@pytest.mark.multiprocess
def test_devices_table_names_the_problem_and_the_fix(device, tmp_path):
    info, _ = device
    _write_cache(tmp_path, {_key(info): BROKEN})
    r = _cli(tmp_path, "devices", "--db", str(tmp_path / "t.db"))
    assert r.returncode == 0, r.stderr
    assert "status" in r.stdout and "unusable" in r.stdout
    assert "unknown target CPU 'generic'; fix: PoCL 3.0-rc2" in " ".join(r.stderr.split())


def test_a_kept_verdict_from_a_worker_that_never_started_is_probed_again(device, tmp_path,
                                                                         monkeypatch):
    """Versions before 2026-12-03 kept 'unusable' when the worker could not even start (an
    import error: the environment, not the driver); such a verdict reads as unknown."""
    info, dev = device
    monkeypatch.setenv("CLTUNE_CACHE_DIR", str(tmp_path))
    why = ("the evaluation worker did not start: the evaluation worker exited (exit status 1): "
           "ImportError: cltune was imported from the source checkout /src")
    _write_cache(tmp_path, {_key(info): H.Health(False, why, "update or reinstall",
                                                 "2026-12-03T19:42:50+00:00")})
    H.forget()
    try:
        h = H.health(dev, info)
        assert h.ok, h
        doc = json.loads((tmp_path / "device-health.json").read_text())
        assert doc["verdicts"][_key(info)]["ok"] is True
    finally:
        H.forget()


def test_vec512_waits_ten_times_what_the_tree_probe_took(device, monkeypatch):
    """The `vec512` probe's deadline scales with the `tree` probe before it (which started and
    warmed the worker): 10x, at least the deadline floor, at most a probe's deadline; a probe
    that hangs is named after it (pyopencl's bundled PoCL on Zen 4: ~20 s instead of 60)."""
    info, dev = device
    monkeypatch.setenv("CLTUNE_DEADLINE_S", "20")
    assert [H._vec512_deadline(t) for t in (0.0, 0.5, 3.0, 100.0)] == [20, 20, 30, 60]
    asked = {}

    def fake_ask(w, name, src="", deadline_s=None):
        asked[name] = deadline_s
        if name == "vec512":
            return f"hung: no answer within {deadline_s:.0f} s (the worker was killed)"
        return ""

    monkeypatch.setattr(H, "_ask", fake_ask)
    monkeypatch.setattr(H, "_builtins", lambda info: [])
    h = H.probe(dev, info)
    assert asked == {"tree": None, "vec512": 20.0, "expressions": None}
    assert h.ok and h.max_vector_bytes == H.CAPPED_VECTOR_BYTES
    assert "512-bit vectors fail: hung: no answer within 20 s" in h.notes
