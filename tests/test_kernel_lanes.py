"""Several evaluation workers judging an application's configs at once (`cltune/user/lanes.py`,
`session.py`): builds in parallel processes, checks and timings one at a time, every config's
verdict its own, the results in the strategy's order."""

from __future__ import annotations

import os
import types

import numpy as np
import pytest
from support.faults import injected

import cltune
from cltune.user import lanes

SCALE = """
__kernel void k(__global float *c, __global const float *a, int n) {
#if block_size_x == 64
    this does not compile;
#endif
    int i = get_global_id(0);
    if (i < n) c[i] = (block_size_x == 128 && i == 5) ? -1.0f : 2.0f * a[i];
}
"""


def _clock():
    """A benchmark observer noting, in the worker, when a config's timed launches began and
    ended and which process ran them (defined in a function: sent to the worker by value)."""

    class Clock:

        def __init__(self):
            self.t0 = self.t1 = None

        def before_start(self):
            import time
            if self.t0 is None:
                self.t0 = time.time()

        def after_finish(self):
            import time
            self.t1 = time.time()

        def get_results(self):
            out = {"t0": self.t0, "t1": self.t1, "pid": os.getpid()}
            self.t0 = self.t1 = None
            return out

    return Clock()


def _args(n=100003):
    a = np.arange(n, dtype=np.float32)
    return [np.zeros(n, np.float32), a, np.int32(n)], 2 * a


def test_several_workers_judge_configs_ahead_and_time_them_one_at_a_time(device, monkeypatch):
    """Three workers: the results are brute force's order and the same configs as with one;
    more than one process timed them, and no two configs' timed launches overlap."""
    args, want = _args()
    space = {"block_size_x": [16, 32, 128, 256, 512], "dummy": [1, 2]}
    monkeypatch.setenv("CLTUNE_KERNEL_WORKERS", "1")
    one, _ = cltune.tune_kernel("k", SCALE, args[0].size, args, space, answer=[want, None, None],
                                device=device[1], db=False, quiet=True)
    monkeypatch.setenv("CLTUNE_KERNEL_WORKERS", "3")
    res, env = cltune.tune_kernel("k", SCALE, args[0].size, args, space,
                                  answer=[want, None, None], observers=[_clock()],
                                  iterations=20, device=device[1], db=False, quiet=True)
    cfgs = [(r["block_size_x"], r["dummy"]) for r in res]
    assert cfgs == [(r["block_size_x"], r["dummy"]) for r in one]
    assert [b for b, _ in cfgs] == [16, 16, 32, 32, 256, 256, 512, 512]
    assert {f["block_size_x"] for f in env["failed"]} == {128}
    assert len({r["pid"] for r in res}) > 1
    spans = sorted((r["t0"], r["t1"]) for r in res)
    for (_, end), (start, _) in zip(spans, spans[1:], strict=False):
        assert start >= end, spans


@pytest.mark.parametrize("strategy", ["brute_force", "random_sample"])
def test_a_crash_or_hang_in_one_worker_fails_only_its_config(device, monkeypatch, tmp_path,
                                                             strategy):
    n = 1000
    args, want = _args(n)
    monkeypatch.setenv("CLTUNE_KERNEL_WORKERS", "3")
    with injected(monkeypatch, tmp_path, "abort:family=kernel,block_size_x=16;"
                                         "hang:family=kernel,block_size_x=8;"
                                         "segv:family=kernel,block_size_x=512"):
        from cltune.user import session
        monkeypatch.setattr(session.Session, "deadline", lambda self: 3.0)
        res, env = cltune.tune_kernel("k", SCALE, n, args,
                                      {"block_size_x": [8, 16, 32, 64, 128, 256, 512, 1024]},
                                      answer=[want, None, None], strategy=strategy,
                                      strategy_options={"max_fevals": 8}, seed=3,
                                      device=device[1], db=False, quiet=True)
    assert sorted(r["block_size_x"] for r in res) == [32, 256, 1024]
    why = {f["block_size_x"]: f["step"] for f in env["failed"]}
    assert why == {8: "hung", 16: "crashed", 64: "build", 128: "validate", 512: "crashed"}


def test_the_worker_count_by_device_memory_and_setting(monkeypatch):
    gpu = types.SimpleNamespace(type="gpu", global_mem=8 << 30)
    cpu = types.SimpleNamespace(type="cpu", global_mem=8 << 30)
    monkeypatch.delenv("CLTUNE_KERNEL_WORKERS", raising=False)
    monkeypatch.setattr(lanes, "_cores", lambda: 16)
    small = [np.zeros(1000, np.float32)]
    assert lanes.lanes_for(cpu, small) == lanes.MAX_LANES
    assert lanes.lanes_for(gpu, small) == lanes.MAX_LANES
    monkeypatch.setattr(lanes, "_cores", lambda: 2)
    assert lanes.lanes_for(gpu, small) == 1
    assert lanes.lanes_for(cpu, small) == 2  # a build per core; the timings alone
    monkeypatch.setattr(lanes, "_cores", lambda: 1)
    assert lanes.lanes_for(cpu, small) == 1
    monkeypatch.setattr(lanes, "_cores", lambda: 16)  # a worker per 4 configs known ahead
    assert [lanes.lanes_for(gpu, small, p) for p in (0, 3, 4, 11, 12, 100)] == [1, 1, 1, 2, 3, 8]
    monkeypatch.setattr(lanes, "_cores", lambda: 16)
    big = [types.SimpleNamespace(nbytes=1 << 30)]  # 8 GiB device: half of it is 4 copies
    assert lanes.lanes_for(gpu, big) == min(4, lanes.MAX_LANES)
    assert lanes.lanes_for(gpu, [types.SimpleNamespace(nbytes=7 << 30)]) == 1
    monkeypatch.setenv("CLTUNE_KERNEL_WORKERS", "5")
    assert lanes.lanes_for(cpu, small) == 5
    assert lanes.lanes_for(cpu, small, 0) == 5  # the setting is obeyed
    for bad in ("0", "two"):
        monkeypatch.setenv("CLTUNE_KERNEL_WORKERS", bad)
        with pytest.raises(ValueError, match="CLTUNE_KERNEL_WORKERS"):
            lanes.lanes_for(gpu, small)


def test_the_timing_lock_is_held_by_one_process_at_a_time(tmp_path):
    import subprocess
    import sys
    import time
    path = str(tmp_path / "t.lock")
    code = ("import sys, time; from cltune.user.lanes import held\n"
            "with held(sys.argv[1]):\n    print('in', flush=True); time.sleep(1.5)\n")
    with lanes.held(path):
        p = subprocess.Popen([sys.executable, "-c", code, path], stdout=subprocess.PIPE,
                             text=True)
        time.sleep(1.0)
        assert p.poll() is None  # waiting on the lock, not yet in
    t = time.monotonic()
    assert p.stdout.readline().strip() == "in"
    assert time.monotonic() - t < 10
    p.wait(timeout=10)
    with lanes.held(""):  # no lock file: nothing held
        pass


_HOLDER = """import sys
from cltune.user.lanes import held
with held(sys.argv[1], shared=sys.argv[2] == "sh"):
    print("in", flush=True)
    sys.stdin.readline()  # held until the test says
"""


def _holder(path, mode):
    import subprocess
    import sys
    return subprocess.Popen([sys.executable, "-c", _HOLDER, path, mode], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)


def _in(p, wait):
    """Whether holder p said it is in within `wait` seconds."""
    import select
    ready, _, _ = select.select([p.stdout], [], [], wait)
    return bool(ready) and p.stdout.readline().strip() == "in"


def _release(p):
    p.stdin.write("\n")
    p.stdin.flush()
    assert p.wait(timeout=60) == 0


def _gate_taken(path):
    import fcntl
    fd = os.open(lanes.gate_of(path), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def test_the_cpu_lock_lets_builds_share_it_and_a_timing_hold_it_alone(tmp_path):
    """On a CPU device builds and checks hold the tune's lock shared and timed launches alone
    (`lanes.held`): two shared holders are in at once; one alone waits until the shared one is
    out; a shared holder that comes while it waits goes in after it (the gate: no timing
    starves behind a stream of builds)."""
    import time
    path = str(tmp_path / "t.lock")
    a = _holder(path, "sh")
    assert _in(a, 60)
    b = _holder(path, "sh")
    assert _in(b, 60)  # while a holds it: at once
    _release(a)
    alone = _holder(path, "ex")
    t = time.monotonic()
    while not _gate_taken(path):  # it waits on b, keeping the gate
        assert alone.poll() is None and time.monotonic() - t < 60
        time.sleep(0.05)
    assert not _in(alone, 0.5)
    late = _holder(path, "sh")
    assert not _in(late, 1.0)  # behind the gate
    _release(b)
    assert _in(alone, 60)  # alone, after the shared holder left
    assert not _in(late, 1.0)  # the later shared holder waits for the one alone
    _release(alone)
    assert _in(late, 60)
    _release(late)


def test_a_time_limit_or_an_error_drops_the_configs_judged_ahead(device, monkeypatch):
    """Configs judged ahead and never asked for are dropped when the search stops (its time
    limit) or fails (a kernel name the source lacks: one clear error); the next tune in the
    process starts its workers again and runs."""
    import time

    from cltune.user.source import KernelSourceError
    monkeypatch.setenv("CLTUNE_KERNEL_WORKERS", "3")
    args, want = _args()
    space = {"block_size_x": [16, 32, 256, 512], "dummy": list(range(8))}
    t0 = time.monotonic()
    res, env = cltune.tune_kernel("k", SCALE, args[0].size, args, space,
                                  answer=[want, None, None], iterations=400,
                                  strategy_options={"time_limit": 1.0},
                                  device=device[1], db=False, quiet=True)
    assert time.monotonic() - t0 < 60
    assert 1 <= len(res) + env["failed_count"] < 32  # the limit stopped it
    with pytest.raises(KernelSourceError, match="no kernel named 'nope'"):
        cltune.tune_kernel("nope", SCALE, args[0].size, args, space, device=device[1],
                           db=False, quiet=True)
    res, env = cltune.tune_kernel("k", SCALE, args[0].size, args, {"block_size_x": [32, 64]},
                                  answer=[want, None, None], device=device[1], db=False,
                                  quiet=True)
    assert [r["block_size_x"] for r in res] == [32] and env["failed_count"] == 1


def test_a_cpu_tune_builds_in_a_worker_per_core_when_the_order_is_known(device, monkeypatch):
    """Without the setting, on the CPU device of two cores: brute force over 10 configs judges
    them in two workers (builds and checks at once, timings alone, none overlapping) with the
    same verdicts as one worker; a model-based search, whose next config waits for the last
    one's cost, stays in one worker."""
    monkeypatch.delenv("CLTUNE_KERNEL_WORKERS", raising=False)
    if device[0].type != "cpu":
        pytest.skip("the CPU's lanes")
    monkeypatch.setattr(lanes, "_cores", lambda: 2)
    args, want = _args()
    space = {"block_size_x": [16, 32, 128, 256, 512], "dummy": [1, 2]}
    res, env = cltune.tune_kernel("k", SCALE, args[0].size, args, space,
                                  answer=[want, None, None], observers=[_clock()],
                                  iterations=20, device=device[1], db=False, quiet=True)
    assert [(r["block_size_x"], r["dummy"]) for r in res] == [
        (b, d) for b in (16, 32, 256, 512) for d in (1, 2)]
    assert {f["block_size_x"] for f in env["failed"]} == {128}
    assert len({r["pid"] for r in res}) == 2
    spans = sorted((r["t0"], r["t1"]) for r in res)
    for (_, end), (start, _) in zip(spans, spans[1:], strict=False):
        assert start >= end, spans
    res, _ = cltune.tune_kernel("k", SCALE, args[0].size, args, space,
                                answer=[want, None, None], observers=[_clock()],
                                strategy="bayes_opt", strategy_options={"max_fevals": 6},
                                seed=1, device=device[1], db=False, quiet=True)
    assert len(res) >= 4 and len({r["pid"] for r in res}) == 1
