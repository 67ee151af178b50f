"""The CLI through typer's runner and as the installed console script."""

import json
import shutil
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from cltune.cli.app import COMMANDS, app

runner = CliRunner()


def test_every_command_has_help():
    for name in COMMANDS:
        r = runner.invoke(app, [name, "--help"])
        assert r.exit_code == 0 and "Example:" in r.output, name


def test_devices_json(info, db_url):
    r = runner.invoke(app, ["devices", "--json", "--db", db_url])
    assert r.exit_code == 0, r.output
    rows = json.loads(r.stdout)
    assert any(d["fingerprint"] == info.fingerprint for d in rows)
    assert {"compute_units", "local_mem", "max_wg", "subgroups", "subgroup_size",
            "tuned"} <= set(rows[0])


def test_bad_device_is_one_clear_line(db_url):
    r = runner.invoke(app, ["tune", "--device", "no-such-device-xyz", "--db", db_url])
    assert r.exit_code == 1
    assert "no device matches" in r.output and "Traceback" not in r.output


@pytest.mark.parametrize("args,msg", [
    (["tune", "--sizes", "2^99"], "outside"),
    (["tune", "--sizes", "1000"], "power of two"),
    (["tune", "--sampler", "annealing"], "unknown sampler"),
    (["tune", "--op", "median"], "unknown op"),
    (["tune", "--dtype", "complex64"], "unknown dtype"),
])
def test_bad_options(args, msg, db_url, storage_url):
    r = runner.invoke(app, [*args, "--db", db_url, "--storage", storage_url])
    assert r.exit_code != 0 and msg in r.output, r.output


def test_unreadable_db(tmp_path):
    bad = tmp_path / "bad.db"
    bad.write_text("garbage" * 100)
    r = runner.invoke(app, ["show", "--db", f"sqlite:///{bad}"])
    assert r.exit_code == 1 and "error" in r.output and "Traceback" not in r.output
    r = runner.invoke(app, ["show", "--db", str(tmp_path / "missing.db")])
    assert r.exit_code == 1 and "does not exist" in r.output


def test_tune_then_show(info, db_url, storage_url):
    r = runner.invoke(app, ["tune", "--device", str(info.index), "--sizes", "2^10",
                            "--trials", "5", "--db", db_url, "--storage", storage_url])
    assert r.exit_code == 0, r.output
    assert "feasible configs" in r.output
    r = runner.invoke(app, ["show", "--json", "--db", db_url])
    rows = json.loads(r.stdout)
    assert len(rows) == 1 and rows[0]["size_class"] == "2^10" and rows[0]["status"] == "ok"
    r = runner.invoke(app, ["show", "--device", str(info.index), "--db", db_url])
    assert r.exit_code == 0 and "2^10" in r.output


@pytest.mark.multiprocess
def test_installed_console_script(db_url):
    exe = shutil.which("cltune") or str(__import__("pathlib").Path(sys.executable).with_name(
        "cltune"))
    r = subprocess.run([exe, "devices", "--json", "--db", db_url], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)
    r = subprocess.run([exe, "show", "--db", "/nonexistent/dir/x.db"], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 1 and "Traceback" not in r.stderr
