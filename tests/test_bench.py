"""`cltune bench` as a command: the table, JSON, the plot file, a missing matplotlib, no torch."""

from __future__ import annotations

import importlib.util
import json

import pytest
from support.tuned import store_bests
from typer.testing import CliRunner

from cltune.cli.app import app
from cltune.families.reduce.config import Config

runner = CliRunner()
ARGS = ["--sizes", "2^10,2^13", "--repeats", "2"]


@pytest.fixture
def tuned_db(info, db_url):
    """A database whose 2^10 best differs from the builtin config (a `builtin` row appears)."""
    store_bests(db_url, info, {10: Config("local_tree", 8, 16, 1, 1, 1, 2, "native")})
    return db_url


def _bench(info, db, *extra):
    return runner.invoke(app, ["bench", "--device", str(info.index), *ARGS, "--db", db, *extra])


def test_table_names_every_contender_and_the_ratios(info, tuned_db):
    r = _bench(info, tuned_db)
    assert r.exit_code == 0, r.output
    for row in ("cltune", "cltune-dev", "tuned", "builtin", "numpy", "read-ceiling",
                "pyopencl"):
        assert row in r.output, (row, r.output)
    assert "tuned/builtin" in r.output and "cltune/numpy" in r.output
    assert "wrong result" not in r.output and "Traceback" not in r.output


def test_json_has_validated_medians_for_each_size(info, tuned_db):
    r = _bench(info, tuned_db, "--json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["op"] == "sum" and doc["dtype"] == "float32" and doc["level"] == "exact"
    assert [s["n"] for s in doc["sizes"]] == [1 << 10, 1 << 13]
    for s in doc["sizes"]:
        assert s["wrong"] == {}
        assert all(row["median_s"] > 0 and len(row["samples"]) == 2
                   for row in s["rows"].values())
        assert s["ratios"]["tuned/builtin"] > 0
    # the 2^13 answer is the nearest tuned bucket's config (2^10): not the builtin one either
    assert "builtin" in doc["sizes"][0]["rows"]


def test_no_torch_rows_off_cuda(info, tuned_db):
    doc = json.loads(_bench(info, tuned_db, "--json").stdout)
    torch_rows = any(k.startswith("torch") for s in doc["sizes"] for k in s["rows"])
    if info.is_nvidia and importlib.util.find_spec("torch") is not None:
        assert torch_rows  # a CUDA device with torch: its rows belong beside ours
        return
    assert not torch_rows
    assert doc["notes"] == [] or info.is_nvidia  # not a CUDA device: nothing to say about torch


def test_untuned_device_compares_the_builtin_with_itself(info, db_url):
    doc = json.loads(_bench(info, db_url, "--json").stdout)
    assert doc["level"] in ("builtin", "shipped")
    if doc["level"] == "builtin":
        assert all("builtin" not in s["rows"] and s["ratios"]["tuned/builtin"] == 1.0
                   for s in doc["sizes"])


def test_plot_file(info, tuned_db, tmp_path):
    if importlib.util.find_spec("matplotlib") is None:
        pytest.skip("matplotlib is not installed (pip install 'cltune[plot]')")
    png = tmp_path / "bench.png"
    r = _bench(info, tuned_db, "--plot", str(png))
    assert r.exit_code == 0, r.output
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5000


def test_missing_matplotlib_is_one_line_before_any_work(info, tuned_db, tmp_path,
                                                        monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "matplotlib" else real(name, *a))
    r = _bench(info, tuned_db, "--plot", str(tmp_path / "x.png"))
    assert r.exit_code == 1 and "Traceback" not in r.output
    assert r.stderr.count("\n") == 1 and "pip install 'cltune[plot]'" in r.stderr, r.stderr
    assert "contender" not in r.output  # refused before benchmarking


@pytest.mark.parametrize("args,msg", [(["--op", "dot"], "dot"), (["--sizes", "3000"],
                                                                  "power of two"),
                                      (["--op", "mean"], "unknown op")])
def test_bad_options_are_one_line(info, db_url, args, msg):
    r = runner.invoke(app, ["bench", "--device", str(info.index), "--db", db_url, *args])
    assert r.exit_code == 1 and msg in r.output and "Traceback" not in r.output, r.output
