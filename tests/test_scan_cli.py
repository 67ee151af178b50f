"""`cltune tune --scan` (whole arrays and both axes), `cltune verify` re-running stored scan
results, and the options that contradict each other as one line."""

from __future__ import annotations

import numpy as np
import pytest
from typer.testing import CliRunner

import cltune
from cltune.cli.app import app
from cltune.cli.tune_modes import TuneRequest, scan_keys

runner = CliRunner()


def test_cli_tunes_scans_and_the_runtime_serves_them(queue, info, db_url, storage_url):
    r = runner.invoke(app, ["tune", "--device", str(info.index), "--scan", "--sizes", "2^14",
                            "--axis", "0", "--shapes", "4096x64", "--trials", "3",
                            "--timeout", "90", "--db", db_url, "--storage", storage_url])
    assert r.exit_code == 0, r.output
    assert "sum/float32/rows" in r.output and "sum/float32/cols" in r.output
    assert "2^0x2^14" in r.output and "2^12x2^6" in r.output
    s = cltune.get_scanner(queue, "sum", np.float32, db=db_url)
    assert s.explain(1 << 14).level == "exact"
    assert s.explain((4096, 64), axis=0).level == "exact"
    assert s.explain((4096, 64), axis=0).config.layout == "cols"
    v = runner.invoke(app, ["verify", "--device", str(info.index), "--db", db_url])
    assert v.exit_code == 0, v.output
    assert "sum/float32/rows" in v.output and "sum/float32/cols" in v.output


def test_scan_keys_of_the_options():
    assert scan_keys(TuneRequest(scan=True, sizes="2^10")) == [("rows", ((0, 10),))]
    assert scan_keys(TuneRequest(scan=True, axis="1", shapes="64x32")) == [("rows", ((6, 5),))]
    assert scan_keys(TuneRequest(scan=True, axis="0", shapes="64x32")) == [("cols", ((6, 5),))]
    both = scan_keys(TuneRequest(scan=True))
    assert [k for k, _ in both] == ["rows", "cols"] and (0, 20) in both[0][1]


@pytest.mark.parametrize("args,msg", [(["--op", "mean"], "--scan tunes sum, prod, min or max"),
                                      (["--many", "4x4"], "--scan goes alone"),
                                      (["--segments"], "--scan goes alone")])
def test_contradicting_options_are_one_line(info, args, msg):
    r = runner.invoke(app, ["tune", "--device", str(info.index), "--scan", *args])
    assert r.exit_code != 0 and msg in r.output and "Traceback" not in r.output, r.output
