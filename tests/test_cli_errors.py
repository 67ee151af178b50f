"""Never a traceback from the CLI: every failure a command meets is one line on stderr, exit 1.

Failures are injected where they happen in real use: the library function each command calls
raises each kind of error (pyopencl build failure, invalid work-group size, out of resources, an
unusable device, a bug of ours); and pyopencl itself fails under `tune` and `verify` (every build,
or every kernel launch, in the evaluation worker where they launch). The pyopencl errors are
real ones, caught from the test device or made as pyopencl makes them.
"""

from __future__ import annotations

import pyopencl as cl
import pytest
from support.tuned import store_bests
from typer.testing import CliRunner

import cltune.cli.service as service
from cltune.cli.app import COMMANDS, app
from cltune.device.select import DeviceError
from cltune.families.reduce.config import Config
from cltune.isolation.worker import shutdown_workers

runner = CliRunner()

#: the service function each command calls, and its arguments
CALLS = {
    "devices": ("devices_report", []),
    "tune": ("tune", ["--sizes", "2^10", "--trials", "2"]),
    "show": ("show", []),
    "verify": ("verify", []),
    "export": ("export", ["-o", "{tmp}/out.json"]),
    "import": ("import_file", ["{tmp}/in.json"]),
    "migrate": ("migrate", []),
    "bench": ("bench", ["--sizes", "2^10", "--repeats", "1"]),
}


@pytest.fixture(scope="module")
def real_errors(ctx, device):
    """Real pyopencl errors from the test device: a failed build and a bad launch; plus the
    out-of-resources error a driver gives (pyopencl's own class, built as pyopencl builds it)."""
    errs = {}
    try:
        cl.Program(ctx, "__kernel void k(__global int *o) { o[0] = undefined_name; }").build()
    except cl.Error as e:
        errs["build"] = e
    q = cl.CommandQueue(ctx, device[1])
    k = cl.Program(ctx, "__kernel void k(__global int *o) { o[0] = 1; }").build().k
    buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 4)
    try:
        k(q, (10,), (3,), buf)  # 3 does not divide 10
    except cl.Error as e:
        errs["work-group"] = e
    errs["resources"] = cl.MemoryError(cl._cl._ErrorRecord(
        "clEnqueueNDRangeKernel", cl.status_code.OUT_OF_RESOURCES, ""))
    assert set(errs) == {"build", "work-group", "resources"}, errs
    return errs


def _one_line(r, *must: str) -> None:
    assert r.exit_code == 1, (r.exit_code, r.output)
    assert "Traceback" not in r.output, r.output
    err = r.stderr
    assert err.count("\n") == 1 and err.startswith("error: "), repr(err)
    for m in must:
        assert m in err, (m, err)


def test_every_command_is_covered():
    assert set(CALLS) == set(COMMANDS)


@pytest.mark.parametrize("kind", ["build", "work-group", "resources", "device", "bug"])
@pytest.mark.parametrize("command", sorted(CALLS))
def test_each_command_turns_each_failure_into_one_line(command, kind, real_errors, tmp_path,
                                                       monkeypatch, db_url):
    exc = {"device": DeviceError("device 3 is unusable: error: x; fix: y"),
           "bug": RuntimeError("boom\nsecond line")}.get(kind) or real_errors[kind]

    def fail(*a, **kw):
        raise exc

    fn, args = CALLS[command]
    monkeypatch.setattr(service, fn, fail)
    (tmp_path / "in.json").write_text("{}")
    argv = [command, *(a.format(tmp=tmp_path) for a in args), "--db", db_url]
    r = runner.invoke(app, argv)
    want = {"build": ["BUILD_PROGRAM_FAILURE", "error"],
            "work-group": ["INVALID_WORK_GROUP_SIZE"], "resources": ["OUT_OF_RESOURCES"],
            "device": ["unusable", "fix: y"], "bug": ["internal error", "boom second line"]}
    _one_line(r, *want[kind])


def test_bug_shows_its_traceback_when_asked(monkeypatch, db_url):
    monkeypatch.setattr(service, "migrate", lambda *a, **k: 1 / 0)
    monkeypatch.setenv("CLTUNE_DEBUG", "1")
    r = runner.invoke(app, ["migrate", "--db", db_url])
    assert r.exit_code == 1 and isinstance(r.exception, ZeroDivisionError)


def test_tune_when_every_build_fails(info, every_build_fails, db_url, storage_url):
    r = runner.invoke(app, ["tune", "--device", str(info.index), "--sizes", "2^10", "--trials",
                            "2", "--db", db_url, "--storage", storage_url])
    assert r.exit_code == 1 and "Traceback" not in r.output, r.output
    if "no config validated" in r.output:
        # the space needed no build here (e.g. NVIDIA: warp width known): every trial failed
        # its build and was recorded as failed; no best was stored
        from cltune.tuning_db import Store

        s = Store.open(db_url, readonly=True)
        assert s.bests(None) == [] and s.counts()["failed"] >= 1
        s.close()
    else:  # the space's own probe build failed (e.g. PoCL: preferred work-group multiple)
        _one_line(r, "BUILD_PROGRAM_FAILURE", "undefined_name")


@pytest.fixture
def every_build_fails(monkeypatch):
    """Every program build in the evaluation worker (where tune builds) fails as a compiler
    error does (cltune/isolation/faults.py)."""
    monkeypatch.setenv("CLTUNE_TEST_FAULT", "build_error:")
    shutdown_workers()
    yield
    shutdown_workers()


@pytest.fixture
def every_launch_fails(monkeypatch):
    """fail(kind): every kernel launch in the evaluation worker (where tune and verify launch)
    raises the error pyopencl raises for it (cltune/isolation/faults.py)."""
    def fail(kind: str) -> None:
        status = {"work-group": "INVALID_WORK_GROUP_SIZE", "resources": "OUT_OF_RESOURCES"}[kind]
        monkeypatch.setenv("CLTUNE_TEST_FAULT", f"launch_error:status={status}")
        shutdown_workers()

    yield fail
    shutdown_workers()


@pytest.mark.parametrize("kind", ["work-group", "resources"])
def test_verify_when_every_launch_fails(info, kind, every_launch_fails, db_url):
    store_bests(db_url, info, {10: Config("serial", 8, 0, 2, 4, 2, 2, "native")})
    every_launch_fails(kind)
    r = runner.invoke(app, ["verify", "--device", str(info.index), "--db", db_url])
    assert r.exit_code == 1 and "Traceback" not in r.output, r.output
    assert "launch failed" in r.output and "none passes" in r.output, r.output
    assert ("INVALID_WORK" if kind == "work-group" else "OUT_OF_RES") in r.output, r.output


@pytest.mark.parametrize("kind", ["work-group", "resources"])
def test_tune_when_every_launch_fails(info, kind, every_launch_fails, db_url, storage_url):
    every_launch_fails(kind)
    r = runner.invoke(app, ["tune", "--device", str(info.index), "--sizes", "2^10", "--trials",
                            "3", "--no-seeds", "--db", db_url, "--storage", storage_url])
    assert r.exit_code == 1 and "Traceback" not in r.output, r.output
    assert "no config validated" in r.output, r.output

