"""`cltune bench` as a command: the table, JSON, the plot file, a missing matplotlib, no torch;
its other modes (statistics, --axis, --segments, --many) and their bad combinations."""

from __future__ import annotations

import importlib.util
import json

import numpy as np
import pytest
from support.tuned import store_bests
from typer.testing import CliRunner

from cltune.cli import bench_modes
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
        # cltune's call with the enqueue stubbed: one or two launches (one or two passes)
        assert s["host_us"] > 0 and s["launches"] in (1.0, 2.0), s
    assert doc["floor_us"] > 0
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
    assert r.stderr.count("\n") == 1 and "pip install matplotlib" in r.stderr, r.stderr
    assert "contender" not in r.output  # refused before benchmarking


@pytest.mark.parametrize("args,msg", [(["--op", "dot"], "dot"), (["--sizes", "3000x"],
                                                                  "not a size"),
                                      (["--sizes", "0"], "outside 1..2^40"),
                                      (["--sizes", "2.5e0"], "not a whole number"),
                                      (["--op", "median"], "unknown op")])
def test_bad_options_are_one_line(info, db_url, args, msg):
    r = runner.invoke(app, ["bench", "--device", str(info.index), "--db", db_url, *args])
    assert r.exit_code == 1 and msg in r.output and "Traceback" not in r.output, r.output


def test_sizes_that_are_not_powers_of_two(info, tuned_db):
    """The sizes applications have (primes, 2^k+7, decimal millions) are measured and checked
    like powers of two: the tail of every kernel counts."""
    r = runner.invoke(app, ["bench", "--device", str(info.index), "--sizes", "1021,2^12+7,1e4",
                            "--repeats", "2", "--db", tuned_db, "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert [s["n"] for s in doc["sizes"]] == [1021, 4103, 10000]
    for s in doc["sizes"]:
        assert s["wrong"] == {} and s["rows"]["cltune"]["median_s"] > 0
    table = runner.invoke(app, ["bench", "--device", str(info.index), "--sizes", "1021",
                                "--repeats", "2", "--db", tuned_db])
    assert table.exit_code == 0 and "n = 1021" in table.output, table.output


def _mode(info, db, *args):
    r = runner.invoke(app, ["bench", "--device", str(info.index), "--repeats", "2", "--db", db,
                            "--json", *args])
    assert r.exit_code == 0, r.output
    assert "wrong result" not in r.output and "Traceback" not in r.output
    return json.loads(r.stdout)


def _torch_rows_expected(doc) -> bool:
    """torch's rows belong beside ours on a CUDA device with torch installed, nowhere else."""
    return "NVIDIA" in doc["platform"].upper() + doc["device"].upper() and \
        importlib.util.find_spec("torch") is not None


def _check_rows(doc, rows, ratios):
    with_torch = _torch_rows_expected(doc)
    for case in doc["cases"]:
        assert case["wrong"] == {}, case
        torch_rows = {k for k in case["rows"] if k.startswith("torch")}
        assert set(case["rows"]) - torch_rows == set(rows), (case["label"], case["rows"].keys())
        assert bool(torch_rows) == with_torch, (case["label"], case["rows"].keys())
        assert all(row["median_s"] > 0 and len(row["samples"]) == 2
                   for row in case["rows"].values())
        theirs = {k for k in case["ratios"] if k.split("/")[1].startswith("torch")}
        assert set(case["ratios"]) - theirs == set(ratios), case["ratios"]
        assert {k.split("/")[1] for k in theirs} <= torch_rows, case["ratios"]
        assert case["host_us"] > 0 and case["launches"] >= 1, case
    assert doc["floor_us"] > 0


ROWS = ("cltune", "cltune-batch", "numpy")


@pytest.mark.parametrize("op", ["sum", "argmax", "var"])
def test_axis_mode_both_axes_of_every_shape(info, db_url, op):
    doc = _mode(info, db_url, "--op", op, "--axis", "both", "--shapes", "64x48,3x1000")
    assert doc["mode"] == "axis" and doc["op"] == op
    assert [c["label"] for c in doc["cases"]] == ["64x48, axis 0", "64x48, axis 1",
                                                  "3x1000, axis 0", "3x1000, axis 1"]
    _check_rows(doc, ROWS, ["cltune/numpy"])
    assert doc["cases"][0]["nbytes"] == 64 * 48 * 4


def test_axis_table(info, db_url):
    r = runner.invoke(app, ["bench", "--device", str(info.index), "--repeats", "2", "--db",
                            db_url, "--axis", "0", "--shapes", "30x50", "--op", "norm"])
    assert r.exit_code == 0, r.output
    assert "30x50, axis 0" in r.output and "cltune-batch" in r.output
    assert "host part (cltune's call, enqueue stubbed)" in r.output
    assert "a bare enqueue takes" in r.output
    assert "cltune/numpy" in r.output and "wrong result" not in r.output


@pytest.mark.parametrize("op", ["std", "norm", "argmin"])
def test_statistic_whole(info, db_url, op):
    """Every statistic the error message offers runs whole (norm: its kernel is L2's)."""
    doc = _mode(info, db_url, "--op", op, "--sizes", "2^10,4099")
    assert doc["mode"] == "whole" and [c["label"] for c in doc["cases"]] == ["n = 2^10",
                                                                             "n = 4099"]
    _check_rows(doc, ROWS, ["cltune/numpy"])


@pytest.mark.parametrize("op", ["sum", "max"])
def test_segments_mode(info, db_url, op):
    doc = _mode(info, db_url, "--op", op, "--segments", "--shapes", "16x100,3x1000")
    assert doc["mode"] == "segments"
    assert [c["label"] for c in doc["cases"]] == ["16 segments of ~100", "3 segments of ~1000"]
    _check_rows(doc, ROWS, ["cltune/numpy"])


@pytest.mark.parametrize("op,extra", [("sum", ("pyopencl-k-calls",)), ("norm", ())])
def test_many_mode(info, db_url, op, extra):
    doc = _mode(info, db_url, "--op", op, "--many", "5", "--sizes", "2^9,2001")
    assert doc["mode"] == "many"
    assert [c["label"] for c in doc["cases"]] == ["5 arrays of 2^9", "5 arrays of 2001"]
    assert doc["cases"][0]["nbytes"] == 5 * 512 * 4
    _check_rows(doc, ("cltune", "cltune-k-calls", "numpy", *extra),
                ["cltune/cltune-k-calls", "cltune/numpy"]
                + [f"cltune/{e}" for e in extra])


def test_a_wrong_answer_is_flagged_untimed_and_exits_1(info, db_url, monkeypatch):
    """The reference (numpy in float64) off by one: every contender disagrees with it."""
    monkeypatch.setitem(bench_modes.NUMPY, "sum",
                        lambda h, axis=None: np.sum(h, axis=axis) + 1)
    r = runner.invoke(app, ["bench", "--device", str(info.index), "--repeats", "2", "--db",
                            db_url, "--axis", "1", "--shapes", "8x64"])
    assert r.exit_code == 1 and "Traceback" not in r.output
    assert "wrong result" in r.stderr and "cltune = " in r.stderr, r.stderr


@pytest.mark.parametrize("args,msg", [
    (["--segments", "--axis", "0", "--shapes", "8x8"], "--axis and --segments are two modes"),
    (["--many", "4", "--axis", "1"], "--axis and --many are two modes"),
    (["--shapes", "8x8"], "--shapes goes with --axis or --segments"),
    (["--many", "4", "--shapes", "8x8"], "--shapes goes with --axis or --segments"),
    (["--axis", "1", "--sizes", "2^10"], "--axis takes --shapes"),
    (["--axis", "2", "--shapes", "8x8"], "--axis takes 0, 1 or both"),
    (["--axis", "1", "--shapes", "8by8"], "is not ROWSxCOLS"),
    (["--segments", "--op", "var"], "--segments measures sum, prod, min, max"),
    (["--many", "4", "--op", "argmax"], "--many measures"),
    (["--axis", "1", "--plot", "x.png"], "--plot draws the 1-D sizes"),
    (["--op", "var", "--dtype", "float8"], "unknown dtype"),
    (["--op", "bincount", "--axis", "1"], "measures whole arrays of --sizes in --bins"),
    (["--bins", "256"], "--bins goes with --op bincount or histogram"),
    (["--op", "bincount", "--dtype", "float32", "--sizes", "1000"], "counts integers"),
    (["--op", "histogram", "--dtype", "int32", "--sizes", "1000"], "float32 or float64"),
    (["--op", "histogram", "--bins", "0", "--sizes", "1000"], "is not in 1..2^24"),
])
def test_bad_combinations_are_one_line(info, db_url, args, msg):
    r = runner.invoke(app, ["bench", "--device", str(info.index), "--db", db_url, *args])
    assert r.exit_code == 1 and "Traceback" not in r.output, r.output
    assert r.stderr.count("\n") == 1 and msg in " ".join(r.stderr.split()), r.stderr


def test_a_baseline_that_disagrees_is_listed_not_cltunes_failure(info, db_url, monkeypatch):
    """numpy in float32 off by one (the float64 reference right): the numpy row is listed as
    wrong and left untimed, cltune's rows are timed and the command succeeds."""
    monkeypatch.setitem(bench_modes.NUMPY, "sum", lambda h, axis=None: np.sum(
        h, axis=axis) + (1 if h.dtype == np.float32 else 0))
    r = runner.invoke(app, ["bench", "--device", str(info.index), "--repeats", "2", "--db",
                            db_url, "--axis", "1", "--shapes", "8x64", "--json"])
    assert r.exit_code == 0, r.output
    case = json.loads(r.stdout)["cases"][0]
    assert set(case["wrong"]) == {"numpy"} and "cltune" in case["rows"], case
    assert "numpy" not in case["rows"]


@pytest.mark.parametrize("op,extra", [("cumsum", ["--sizes", "2^10,2^13-3"]),
                                      ("cummax", ["--axis", "both", "--shapes", "64x48"])])
def test_scan_mode(info, db_url, op, extra):
    doc = _mode(info, db_url, "--op", op, *extra)
    assert doc["mode"] == "scan"
    for case in doc["cases"]:
        assert case["wrong"] == {}, case
        assert {"cltune", "cltune-batch", "numpy", "copy"} <= set(case["rows"])
        assert ("pyopencl" in case["rows"]) == case["label"].startswith("n = ")
        assert "cltune/numpy" in case["ratios"] and "cltune-batch/copy" in case["ratios"]
        assert case["host_us"] > 0 and case["launches"] >= 1, case


@pytest.mark.parametrize("args,msg", [(["--op", "cumsum", "--segments"], "not --segments"),
                                      (["--op", "cumsum", "--shapes", "8x8"], "--shapes goes"),
                                      (["--op", "median"], "a scan: cumsum")])
def test_scan_mode_errors(info, db_url, args, msg):
    r = runner.invoke(app, ["bench", "--device", str(info.index), "--db", db_url, *args])
    assert r.exit_code == 1 and msg in r.output and "Traceback" not in r.output, r.output


@pytest.mark.parametrize("op,dtype", [("copy_if", "float32"), ("copy_if", "int16"),
                                      ("nonzero", "float64")])
def test_compaction_against_numpy_pyopencl_and_the_copy(info, db_url, op, dtype):
    """`cltune bench --op copy_if|nonzero`: every row validated exactly (the kept elements,
    the indices; nonzero's fixed-size call beside numpy's form) and timed beside numpy, the
    device's copy (pyopencl's copy_if for copy_if), with cltune's host part (two launches)."""
    doc = _mode(info, db_url, "--op", op, "--dtype", dtype, "--sizes", "1021,4099")
    assert doc["mode"] == "compact" and len(doc["cases"]) == 2
    for c in doc["cases"]:
        assert not c["wrong"], c["wrong"]
        want = {"cltune", "numpy", "copy"} | ({"pyopencl"} if op == "copy_if"
                                             else {"cltune-sized"})
        assert want <= set(c["rows"]), c["rows"].keys()
        assert "cltune/numpy" in c["ratios"] and "cltune/copy" in c["ratios"]
        assert c["host_us"] > 0 and round(c["launches"]) == 2, c


@pytest.mark.parametrize("args,msg", [(["--op", "copy_if", "--axis", "0"], "whole arrays"),
                                      (["--op", "nonzero", "--dtype", "float16"], "float16"),
                                      (["--op", "copy_if", "--shapes", "8x8"], "whole arrays")])
def test_compaction_mode_errors(info, db_url, args, msg):
    r = runner.invoke(app, ["bench", "--device", str(info.index), "--db", db_url, *args])
    assert r.exit_code == 1 and msg in r.output and "Traceback" not in r.output, r.output


@pytest.mark.parametrize("op,dtype", [("bincount", "int32"), ("histogram", "float32")])
def test_histograms_against_numpy_and_the_copy(info, db_url, op, dtype):
    """`cltune bench --op bincount|histogram`: every case's rows validated (counts exactly)
    and timed beside numpy and the device's copy of the same bytes (torch beside CUDA)."""
    doc = _mode(info, db_url, "--op", op, "--dtype", dtype, "--sizes", "4099",
                "--bins", "7,300")
    assert doc["mode"] == "hist" and len(doc["cases"]) == (4 if op == "bincount" else 2)
    for c in doc["cases"]:
        assert not c["wrong"], c["wrong"]
        assert {"cltune", "cltune-batch", "numpy", "copy"} <= set(c["rows"])
        assert c["ratios"] and c["host_us"] is not None
