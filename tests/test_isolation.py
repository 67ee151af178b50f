"""Drivers that crash or hang never take cltune down (house rule 17).

The crashes and hangs are real: `CLTUNE_TEST_FAULT` (cltune/isolation/faults.py) makes the
evaluation
worker process `os.abort()`, read address 0 or sleep on chosen configs or probes, exactly
where a driver's compiler or first launch would. Checked: the worker names the death and
recovers; a tune completes, records each failure with its reason and serves none of them;
the runtime (get_reducer, axis calls, ReductionKernel) steps down its fallback chain and
explains why; the health check restricts vectors or refuses the device; the device order;
the worker dies with a parent killed by SIGKILL.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
import warnings
from dataclasses import replace
from pathlib import Path

import numpy as np
import pyopencl.array as cla
import pytest

from cltune import get_reducer
from cltune.core.ops import OpSpec
from cltune.device import health
from cltune.device.select import order_key
from cltune.families.expr.api import ReductionKernel
from cltune.families.expr.defaults import builtin as expr_builtin
from cltune.families.reduce.config import Config
from cltune.families.reduce.defaults import builtin_config
from cltune.families.reduce.space import make_space
from cltune.isolation import vetting
from cltune.isolation.worker import Worker, WorkerFailure, last_words, shutdown_workers
from cltune.opencl.caches import clear_caches
from cltune.tuning.tuner import TuneOptions, Tuner
from cltune.tuning_db import Store


def _fresh() -> None:
    shutdown_workers()
    vetting.forget()
    health.forget()
    clear_caches()


def _seed_health(tmp_path) -> None:
    """The session's device-health verdicts copied into the fresh cache `faults` sets (the
    health check vets every family's untuned configs: under a rule that slows every reduce
    vet past its deadline it alone took most of a minute)."""
    src = Path(os.environ.get("CLTUNE_CACHE_DIR", "")) / "device-health.json"
    if src.is_file():
        (tmp_path / "cache").mkdir(parents=True, exist_ok=True)
        shutil.copy(src, tmp_path / "cache" / "device-health.json")


@pytest.fixture
def faults(monkeypatch, tmp_path):
    """set(rules, deadline_s=None): workers started from now on fail as the rules say; the
    vetting and health verdicts go to a fresh cache."""
    def set_rules(rules: str, deadline_s: float | None = None) -> None:
        monkeypatch.setenv("CLTUNE_TEST_FAULT", rules)
        monkeypatch.setenv("CLTUNE_CACHE_DIR", str(tmp_path / "cache"))
        if deadline_s is not None:
            monkeypatch.setenv("CLTUNE_DEADLINE_S", str(deadline_s))
        _fresh()

    yield set_rules
    _fresh()


def test_the_worker_names_a_crash_and_a_hang_and_starts_again(device, faults):
    info, _ = device
    faults("abort:probe=tree;segv:probe=vec512", deadline_s=2)
    w = Worker(info)
    try:
        with pytest.raises(WorkerFailure) as e:
            w.call("probe", "tree", health.PROBE_SRC, deadline_s=30)
        assert e.value.kind == "crashed" and "SIGABRT" in e.value.reason
        assert "cltune test fault: abort on probe tree" in e.value.reason
        gen = w.generation
        with pytest.raises(WorkerFailure) as e:
            w.call("probe", "vec512", deadline_s=30)
        assert e.value.kind == "crashed" and "SIGSEGV" in e.value.reason
        assert w.generation == gen + 1 and not w.alive  # each request after a death restarts
        assert w.call("ping", deadline_s=30) != os.getpid() and w.generation == gen + 2
    finally:
        w.close()
    faults("hang:probe=tree", deadline_s=1)
    w = Worker(info)
    try:
        t0 = time.monotonic()
        with pytest.raises(WorkerFailure) as e:
            w.call("probe", "tree", health.PROBE_SRC, deadline_s=1.5)
        assert e.value.kind == "hung" and "no answer within 2 s" in e.value.reason
        assert time.monotonic() - t0 < 10
        assert not w.alive
        assert w.call("probe", "vec512", deadline_s=60) == ""
    finally:
        w.close()


def test_last_words_pick_the_drivers_message():
    text = ("some progress\nLLVM ERROR: Do not know how to split this operator's operand!\n"
            "Fatal Python error: Aborted\n\nCurrent thread 0x1 (most recent call first):\n"
            '  File "x.py", line 3 in f\n')
    assert last_words(text) == "LLVM ERROR: Do not know how to split this operator's operand!"
    assert last_words("just a line\n") == "just a line" and last_words("") == ""


def _tuner(ctx, device, db_url, storage_url, **opts) -> Tuner:
    info, dev = device
    return Tuner(ctx, dev, info, Store.open(db_url), storage_url, TuneOptions(**opts))


@pytest.mark.slow
def test_a_tune_survives_crashes_and_hangs_and_serves_none_of_them(ctx, device, db_url,
                                                                   storage_url, faults):
    info, _ = device
    # a deadline that a healthy first build on a loaded 2-core machine still meets
    faults("abort:vec=4;segv:vec=2;hang:vec=1,items=3", deadline_s=8)
    wg = make_space(ctx, device[1], info, OpSpec("sum", "float32")).values["wg"][0]
    tuner = _tuner(ctx, device, db_url, storage_url, buckets=(12,), trials=14,
                   timeout_s=120, sampler="random", seeds=False,
                   restrict={"strategy": ("local_tree",), "wg": (wg,), "vec": (1, 2, 4),
                             "items": (1, 3), "passes": (2,)})
    base = dict(strategy="local_tree", wg=wg, tile=wg, groups_per_cu=2, passes=2)
    for vec, items, step, words in ((4, 1, "crashed", "SIGABRT"), (2, 1, "crashed", "SIGSEGV"),
                                    (1, 3, "hung", "no answer within")):
        out = tuner.evaluate(Config(items=items, vec=vec, **base), 12)
        assert out.step == step and words in out.reason, out
    ok = tuner.evaluate(Config(items=1, vec=1, **base), 12)
    assert ok.ok, ok
    res = tuner.run()[0]
    assert res.config is not None and (res.config.vec, res.config.items) == (1, 1), res
    reasons = _failed_reasons(db_url)
    for words in ("driver crashed (SIGABRT)", "driver crashed (SIGSEGV)", "hung: no answer"):
        assert any(words in x for x in reasons), (words, reasons)
    r = get_reducer(ctx.devices[0], db=db_url)
    assert (r.explain(1 << 12).config.vec, r.explain(1 << 12).config.items) == (1, 1)
    assert r.explain(1 << 12).level == "exact"


def _failed_reasons(db_url: str) -> list[str]:
    import sqlite3

    con = sqlite3.connect(db_url.removeprefix("sqlite:///"))
    try:
        return [r[0] for r in con.execute(
            "SELECT reason FROM cltune_results WHERE status = 'failed'")]
    finally:
        con.close()


@pytest.mark.slow
def test_crashes_are_recorded_as_failed_with_their_reason(ctx, device, db_url, storage_url,
                                                          faults):
    faults("abort:vec=16;abort:vec=8")
    tuner = _tuner(ctx, device, db_url, storage_url, buckets=(10,), trials=8,
                   timeout_s=90, sampler="random", seeds=False,
                   restrict={"vec": (4, 8, 16), "passes": (2,)})
    res = tuner.run()[0]
    assert res.config is None or res.config.vec == 4
    reasons = _failed_reasons(db_url)
    crashed = [x for x in reasons if "driver crashed (SIGABRT)" in x]
    # the trials that crashed, plus the builtin config (vec 16 on CPUs) judged at the end
    assert crashed and len(crashed) in (res.crashed, res.crashed + 1), (res, reasons)


def test_get_reducer_steps_down_when_its_configs_crash_the_driver(queue, device, faults,
                                                                  tmp_path):
    faults("abort:family=reduce,vec=2;abort:family=reduce,vec=4;abort:family=reduce,vec=8;"
           "abort:family=reduce,vec=16")
    db = f"sqlite:///{tmp_path / 'none.db'}"
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        r = get_reducer(queue, db=db)
        x = np.random.default_rng(1).random(100003).astype(np.float32)
        got = float(r(cla.to_device(queue, x)).get())
    assert abs(got - x.astype(np.float64).sum()) <= 1e-4 * x.sum()
    e = r.explain(100003)
    assert e.config.vec == 1 and e.level in ("builtin", "safest"), e
    if e.level == "safest":
        assert "driver crashed (SIGABRT)" in e.why and "passed over" in e.why
        assert any("passed over" in str(i.message) for i in w)
    # the verdict is on disk: a new process would not vet again
    assert (tmp_path / "cache" / "vetted.json").exists()


@pytest.mark.slow
def test_a_vet_past_its_deadline_runs_once_more_before_its_verdict_is_kept(queue, device,
                                                                          faults, tmp_path):
    """A build slower than the deadline (a loaded host) is not taken for a hang: the vet runs
    once more with HUNG_RETRY_FACTOR times the time and the builtin config serves; a config
    that hangs both times is passed over, both tries named."""
    info, _ = device
    db = f"sqlite:///{tmp_path / 'none.db'}"
    x = np.random.default_rng(3).random(100003).astype(np.float32)
    xd = cla.to_device(queue, x)
    _seed_health(tmp_path)  # the device's own health check is not what this test is about
    faults("slow:family=reduce", deadline_s=3)  # every reduce vet sleeps 4.5 s, then runs
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        r = get_reducer(queue, db=db)
        got = float(r(xd).get())
    assert abs(got - x.astype(np.float64).sum()) <= 1e-4 * x.sum()
    e = r.explain(100003)
    assert e.level == "builtin" and "passed over" not in e.why, e
    assert not [i for i in w if "passed over" in str(i.message)]
    # another op (its own served choice): its builtin config hangs, twice
    vec = builtin_config(info, OpSpec("max", "float32")).vec
    faults(f"hang:family=reduce,vec={vec}", deadline_s=1)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        r = get_reducer(queue, "max", np.float32, db=db)
        got = float(r(xd).get())
    assert got == x.max()
    e = r.explain(100003)
    assert e.config.vec != vec and "hung: no answer within 1 s" in e.why, e
    assert "again with 4 s" in e.why, e
    assert any("again with 4 s" in str(i.message) for i in w)


def test_axis_calls_step_down_when_their_configs_crash(queue, faults):
    faults(";".join(f"abort:family=axis,vec={v}" for v in (2, 4, 8, 16)))
    x = np.random.default_rng(2).random((301, 77)).astype(np.float32)
    xd = cla.to_device(queue, x)
    r = get_reducer(queue)
    for axis in (0, 1):
        got = r(xd, axis=axis).get()
        np.testing.assert_allclose(got, x.astype(np.float64).sum(axis=axis), rtol=1e-5)
        e = r.explain(x.shape, axis=axis)
        assert e.config.vec == 1, e


def test_reduction_kernel_steps_down_when_its_configs_crash(ctx, queue, device, faults):
    info, _ = device
    if expr_builtin(info, 4).items == 1:
        pytest.skip("the builtin expression config is the safest one on this device")
    faults(";".join(f"abort:family=expr,items={i}" for i in (2, 4, 8, 16)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        knl = ReductionKernel(ctx, np.float32, neutral="0", reduce_expr="a+b",
                              map_expr="2*x[i]", arguments="__global const float *x")
    x = np.random.default_rng(3).random(70001).astype(np.float32)
    got = float(knl(cla.to_device(queue, x)).get())
    assert abs(got - 2 * x.astype(np.float64).sum()) <= 1e-4 * 2 * x.sum()
    e = knl.explain(70001)
    assert e.config.items == 1, e  # derived (a tuned sum's shape) or builtin: passed over
    assert e.level == "safest" and "SIGABRT" in e.why and "passed over" in e.why, e


def test_health_caps_vectors_where_512_bit_vectors_crash(device, faults):
    info, dev = device
    faults("abort:probe=vec512")
    h = health.probe(dev, info)
    assert h.ok and h.max_vector_bytes == 32 and h.status.startswith("restricted: ")
    assert "512-bit vectors fail" in h.notes and "SIGABRT" in h.notes
    capped = health.restricted(info, h)
    assert capped.fingerprint == info.fingerprint
    f32, i32 = OpSpec("sum", "float32"), OpSpec("sum", "int32")  # int sums: 8-byte lanes
    assert builtin_config(capped, f32).vec * 4 <= 32 and builtin_config(capped, i32).vec * 8 <= 32
    vecs = make_space(cl_ctx(dev), dev, capped, f32).values["vec"]
    assert max(vecs) * 4 <= 32 and 1 in vecs


def cl_ctx(dev):
    import pyopencl as cl

    return cl.Context([dev])


@pytest.mark.parametrize("rule, words", [("segv:probe=tree", "SIGSEGV"),
                                         ("hang:probe=tree", "hung")])
def test_health_names_a_probe_that_crashes_or_hangs(device, faults, rule, words):
    info, dev = device
    faults(rule, deadline_s=1)
    h = health.probe(dev, info)
    assert not h.ok and words in h.message and h.fix and h.status.startswith("unusable: ")


def test_health_passes_over_a_builtin_config_that_crashes(device, faults):
    info, dev = device
    cfg = builtin_config(info, OpSpec("sum", "int64"))
    if cfg == builtin_config(info, OpSpec("sum", "float32")):
        rule = f"abort:variant=sum/int64,items={cfg.items}"
    else:
        rule = f"abort:variant=sum/int64,vec={cfg.vec}"
    faults(rule)
    h = health.probe(dev, info)
    assert h.ok and h.restricted and "reduce sum/int64: builtin config" in h.notes, h
    assert "the next level serves" in h.notes


def test_device_order_working_restricted_unusable_and_newer_first(device):
    info, _ = device
    pocl = replace(info, platform="Portable Computing Language")
    old = replace(pocl, platform_version="OpenCL 3.0 PoCL 3.0-rc2  Linux", platform_index=0)
    new = replace(pocl, platform_version="OpenCL 3.0 PoCL 3.1+debian Linux", platform_index=1)
    new5 = replace(pocl, platform_version="OpenCL 3.0 PoCL 5.0 Linux", platform_index=2)
    ok, lim = health.Health(True), health.Health(True, max_vector_bytes=32, notes="capped")
    bad = health.Health(False, "broken")
    rows = [(old, ok), (new, ok), (new5, lim), (new, bad)]
    order = sorted(rows, key=lambda r: order_key(*r))
    assert order == [(new, ok), (old, ok), (new5, lim), (new, bad)]


@pytest.mark.multiprocess
def test_the_worker_dies_with_a_parent_killed_by_sigkill(device, tmp_path):
    info, _ = device
    mark = uuid.uuid4().hex
    env = {**os.environ, "CLTUNE_TEST_MARK": mark, "CLTUNE_CACHE_DIR": str(tmp_path)}
    code = ("import sys, time\n"
            "from cltune.device.select import select\n"
            "from cltune.isolation.worker import worker_for\n"
            "info, _ = select(sys.argv[1])\n"
            "print(worker_for(info).call('ping', deadline_s=120), flush=True)\n"
            "time.sleep(600)\n")
    p = subprocess.Popen([sys.executable, "-c", code, f"{info.platform_index}:"
                          f"{info.device_index}"], stdout=subprocess.PIPE, text=True, env=env)
    try:
        worker_pid = int(p.stdout.readline())
        assert _has_mark(worker_pid, mark)
    finally:
        p.send_signal(signal.SIGKILL)
        p.wait()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and _has_mark(worker_pid, mark):
        time.sleep(0.2)
    assert not _has_mark(worker_pid, mark), "the worker outlived its killed parent"


def _has_mark(pid: int, mark: str) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            alive = f"CLTUNE_TEST_MARK={mark}".encode() in f.read()
        with open(f"/proc/{pid}/stat") as f:
            return alive and f.read().split()[2] != "Z"
    except OSError:
        return False


@pytest.mark.slow
@pytest.mark.multiprocess
def test_the_real_thing_where_a_driver_breaks_on_512_bit_vectors(tmp_path):
    """On a host whose driver really breaks on 512-bit vectors (pyopencl's bundled PoCL 3.0 on
    AMD Zen 4): the runtime gives numpy's answers on every dtype class and `cltune tune`
    completes there. Skipped where no device breaks so (an Intel host, say)."""
    import pyopencl as cl

    from cltune.device.select import device_health, list_devices

    broken = [i for i in list_devices()
              if "512-bit vectors fail" in device_health(i).notes
              and "cltune test fault" not in device_health(i).notes]
    if not broken:
        pytest.skip("no device here breaks on 512-bit vectors (pyopencl's bundled PoCL does "
                    "on AMD Zen 4 hosts)")
    db = f"sqlite:///{tmp_path / 'none.db'}"
    rng = np.random.default_rng(4)
    for info in broken:
        qctx = cl.Context([info.cl_device()])  # kept: Intel frees unheld contexts
        q = cl.CommandQueue(qctx)
        for dt in ("float32", "int32", "int64") + (("float64",) if info.fp64 else ()):
            x = (rng.random(100003) * 100).astype(dt)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                r = get_reducer(q, dtype=dt, db=db)
                got = r(cla.to_device(q, x)).get()
                cols = r(cla.to_device(q, x[:100000].reshape(1000, 100)), axis=0).get()
            want = x.astype(np.float64 if dt.startswith("float") else np.int64).sum()
            assert abs(float(got) - float(want)) <= 1e-5 * abs(float(want)), (info.name, dt)
            np.testing.assert_allclose(cols, x[:100000].reshape(1000, 100).sum(
                axis=0, dtype=np.float64), rtol=1e-5)
        r = subprocess.run([sys.executable, "-m", "cltune", "tune", "--device",
                            f"{info.platform_index}:{info.device_index}", "--sizes", "2^12",
                            "--trials", "8", "--db", str(tmp_path / "t.db"), "--storage",
                            f"sqlite:///{tmp_path / 's.db'}"], capture_output=True, text=True,
                           timeout=600)
        assert r.returncode == 0, r.stderr[-2000:]


def test_a_worker_that_cannot_start_leaves_no_verdict(device, faults, tmp_path, monkeypatch):
    """A worker whose Python cannot run cltune (here an interpreter that fails as one does
    importing a source checkout that was never installed) says so; the device and its configs
    get no verdict from it, on disk or in the process, and once the environment is right the
    probe and vetting run as usual."""
    info, dev = device
    faults("")  # a fresh verdict cache under tmp_path/cache
    cache = tmp_path / "cache"
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\necho 'Traceback (most recent call last):' >&2\n"
                    "echo 'ImportError: cltune was imported from the source checkout /src "
                    "without being installed' >&2\nexit 1\n")
    fake.chmod(0o755)
    real = sys.executable
    monkeypatch.setattr(sys, "executable", str(fake))
    w = Worker(info)
    try:
        with pytest.raises(WorkerFailure) as e:
            w.call("ping", deadline_s=60)
        assert e.value.kind == "unstarted" and "did not start" in e.value.reason
        assert "exit status 1" in e.value.reason and "ImportError" in e.value.reason
    finally:
        w.close()
    h = health.health(dev, info, recheck=True)
    assert not h.ok and "did not start" in h.message
    assert "Python environment" in h.fix and "driver" not in h.fix.split("(")[0], h.fix
    family, variant, chain, size, src_hash, lane = health._builtins(info)[0]
    v = vetting.verdict(info, family, variant, chain[0], size, source_hash=src_hash,
                        element_bytes=lane, worker=Worker(info))
    assert not v.ok and v.step == "unstarted" and not v.buildable
    for name in ("device-health.json", "vetted.json"):
        path = cache / name
        assert not path.exists() or "did not start" not in path.read_text(), name
    monkeypatch.setattr(sys, "executable", real)  # the environment put right: nothing stands
    assert health.health(dev, info).ok             # in the way of the usual verdicts
    assert vetting.verdict(info, family, variant, chain[0], size, source_hash=src_hash,
                           element_bytes=lane).ok


def test_the_worker_runs_the_applications_cltune_from_any_directory(device, faults, tmp_path,
                                                                     monkeypatch):
    """An application started in a folder that holds another `cltune` (a source checkout
    never installed) runs the installed package; its worker must run the same one, not the
    folder's (`python -m` would put the working directory first on the worker's path)."""
    info, dev = device
    faults("")
    shadow = tmp_path / "checkout"
    (shadow / "cltune" / "isolation").mkdir(parents=True)
    (shadow / "cltune" / "__init__.py").write_text('raise ImportError("the shadow")\n')
    (shadow / "cltune" / "isolation" / "__init__.py").write_text("")
    monkeypatch.chdir(shadow)
    w = Worker(info)
    try:
        assert w.call("ping", deadline_s=60) != os.getpid()
    finally:
        w.close()
    assert health.health(dev, info, recheck=True).ok


def test_vetted_json_keeps_only_this_codes_verdicts(tmp_path, monkeypatch):
    """Verdicts are keyed by cltune's own code (`vetting.host_hash`): a verdict of another
    version is never asked for again, and is dropped when the file is next written (it would
    otherwise grow by a full set of verdicts a version); this code's are kept."""
    import json

    monkeypatch.setenv("CLTUNE_CACHE_DIR", str(tmp_path))
    vetting.forget()
    mine = f"fp:drv:reduce:sum/float32:cfg:src:12:{vetting.host_hash()}"
    old = "fp:drv:reduce:sum/float32:cfg:src:12:0123456789ab"
    vetting._save(old, vetting.Verdict(False, "crashed", "driver crashed (SIGABRT)"))
    vetting._save(mine, vetting.Verdict(True))
    kept = json.loads((tmp_path / "vetted.json").read_text())
    keys = set(kept.get("verdicts", kept))
    assert mine in keys and old not in keys, keys
    vetting.forget()
