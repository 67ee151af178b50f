"""scripts/bench_tables.py and scripts/bench_suite.py without OpenCL (#43 item 5): the page and
the guides' blocks rendered from small synthetic results (the per-call figure each family's
tables lead with, the sentence saying what it measures, the contenders found wrong), --check
finding stale output, a malformed file named in one error line, the suite's device slugs and
failure records; and the repo's own generated docs up to date with docs/results/."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _script(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod  # dataclasses resolve their module's annotations through it
    spec.loader.exec_module(mod)
    return mod


bt = _script("bench_tables")
bs = _script("bench_suite")


def _meta(family: str, case: str, slug: str, **kw: Any) -> dict[str, Any]:
    return {"family": family, "case": case, "device_slug": slug, "order": 0,
            "command": f"cltune bench --device 1 --op {case} --json",
            "date": "2026-12-07T10:00:00Z", "commit": "abc123", "host_cpu": "Test CPU",
            "cltune_version": "0.1.0", **kw}


def _row(s: float, nbytes: int = 4 << 20) -> dict[str, Any]:
    return {"median_s": s, "gbps": nbytes / s / 1e9, "iqr_pct": 1.0, "samples": [s]}


def _sizes(slug: str) -> dict[str, Any]:
    rows = {"cltune": _row(1e-3), "numpy": _row(2e-3)}
    if slug.startswith("nvidia"):
        rows["torch"] = _row(0.5e-3)
    return {**_meta("reduce", "sum", slug), "device": f"dev {slug}",
            "platform": "OpenCL 3.0 Test, extra", "op": "sum", "dtype": "float32",
            "repeats": 7, "level": "builtin", "notes": [], "floor_us": 1.5,
            "sizes": [{"n": 1 << 20, "config": "c", "rows": rows,
                       "ratios": {"cltune/numpy": 2.0}, "wrong": {}, "host_us": 2.5,
                       "launches": 2.0}]}


def _cases() -> dict[str, Any]:
    return {**_meta("statistics", "var", "pocl-cpu"), "device": "dev pocl-cpu",
            "platform": "OpenCL 3.0 Test", "mode": "whole", "op": "var", "dtype": "float32",
            "repeats": 7, "notes": ["a note"], "floor_us": 1.5,
            "cases": [{"label": "n = 2^24", "nbytes": 1 << 26, "config": "c",
                       "rows": {"cltune": _row(3e-3)}, "ratios": {},
                       "wrong": {"numpy": "1.0 (numpy: 2.0)"}, "host_us": None,
                       "launches": None}]}


def _write(root: Path, data: dict[str, Any], name: str | None = None) -> Path:
    p = root / "docs" / "results" / data["device_slug"] / (
        name or f"{data['family']}-{data['case']}.json")
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(data))
    return p


@pytest.fixture
def root(tmp_path: Path) -> Path:
    for slug in ("pocl-cpu", "nvidia-h100"):
        _write(tmp_path, _sizes(slug))
    _write(tmp_path, _cases())
    _write(tmp_path, {**_meta("sort", "sort", "pocl-cpu"), "error": "timed out after 300 s"})
    _write(tmp_path, {**_meta("call-floor", "warm-calls", "pocl-cpu"), "device": "dev",
                      "platform": "p", "calls": 10, "blocks": 3, "results": {
                          "bare enqueue": {"wall_us": 2.0, "host_us": 1.9, "stubbed_us": 0.1,
                                           "launches": 1.0, "stubbed_per_launch_us": 0.1},
                          "r(x) 4096": {"wall_us": 9.0, "host_us": 5.0, "stubbed_us": 2.0,
                                        "launches": 2.0, "stubbed_per_launch_us": 1.0}}})
    _write(tmp_path, {**_meta("own-kernels", "kernel-tuner", "pocl-cpu"), "rows": [
        {"tool": "cltune", "case": "vector_add", "strategy": "brute_force", "wall_s": 9.5,
         "valid": ["64", "128"], "times": {"64": 2.0, "128": 1.0}, "best": "128",
         "best_ms": 1.0},
        {"tool": "kernel_tuner", "case": "vector_add", "error": ["no kernel_tuner"]},
        {"tool": "cltune", "case": "vector_add", "strategy": "bayes_opt", "budget": 1,
         "picks": ["64", "128", "128"]}]})
    (tmp_path / "docs" / "guide.md").write_text(
        "# Guide\n\ntext\n\n<!-- bench-table: reduce -->\nold\n<!-- /bench-table -->\n\n"
        "<!-- bench-table: topk -->\n<!-- /bench-table -->\nend\n")
    return tmp_path


def test_page(root: Path) -> None:
    page = bt.render_page(bt.load(root))
    assert page == bt.render_page(bt.load(root))  # deterministic
    assert page.count("\n") <= bt.MAX_PAGE_LINES and "## Regenerating" in page
    assert "python scripts/bench_suite.py --device 1 --preset cpu" in page
    assert page.index("### nvidia-h100") < page.index("### pocl-cpu")  # devices sorted
    assert "| case | µs a call (result read back) | GB/s | numpy µs |" in page
    assert "| sum, n = 2^20 | 1,000 | 4.2 | 2,000 | numpy 2.00× | 2 | 2.50 |" in page
    assert "| sum, n = 2^20 | 1,000 | 4.2 | 2,000 | 500.0 | numpy 2.00× | 2 | 2.50 |" in page
    assert "| var, n = 2^24 | 3,000 | 1.4 | wrong | – | – | – |" in page
    assert "- note: a note" in page
    assert "\n\nNot timed, a wrong answer: numpy at var, n = 2^24: it answered 1.0 (numpy: " \
        "2.0), outside the accuracy bound the benchmark checks (a float64 reference).\n\n" \
        in page
    assert f"## Reductions: `r(x)`\n\n{bt.MEASURES['reduce']}\n" in page
    assert "../shared" not in page and "source scripts/gpu_setup.sh" in page
    assert "--device NVIDIA --preset gpu --out DIR --commit HASH" in page
    assert "- `cltune bench --device 1 --op sort --json`: 2026-12-07 10:00 UTC, abc123, " \
        "host Test CPU, cltune 0.1.0: **failed** (timed out after 300 s)" in page
    assert "| r(x) 4096 | 9.00 | 5.00 | 2.00 | 2 | 1.00 |" in page
    assert "| vector_add | 2 valid, best 1.000 ms, 9.5 s | failed | budget 1 of 2: cltune " \
        "bayes_opt 1.00 |" in page
    assert "## Top-k: `cltune.topk`\n\nNo results yet." in page


def test_blocks(root: Path) -> None:
    text = (root / "docs" / "guide.md").read_text()
    filled = bt.fill_blocks(text, bt.load(root), "docs/guide.md")
    assert filled == bt.fill_blocks(filled, bt.load(root), "docs/guide.md")  # idempotent
    assert "old" not in filled and filled.startswith("# Guide\n\ntext\n\n") and \
        filled.endswith("<!-- /bench-table -->\nend\n")
    reduce = filled.split("<!-- bench-table: reduce -->\n")[1].split("<!-- /bench-table")[0]
    assert "*nvidia-h100* (dev nvidia-h100, 2026-12-07 10:00 UTC):" in reduce
    assert "| sum, n = 2^20 | 1,000 | 4.2 | numpy 2.00× |" in reduce
    assert reduce.rstrip().endswith(f"|\n\n{bt.MEASURES['reduce']}\n\nAll figures, with the "
                                    "commands that made them: [benchmarks](benchmarks.md).")
    topk = filled.split("<!-- bench-table: topk -->\n")[1]
    assert topk.startswith("No current figures yet.")
    with pytest.raises(bt.ResultError, match="docs/x.md: .*unknown family 'nope'"):
        bt.fill_blocks("<!-- bench-table: nope -->\n<!-- /bench-table -->\n", [], "docs/x.md")
    with pytest.raises(bt.ResultError, match="docs/x.md: .*without its"):
        bt.fill_blocks("<!-- bench-table: sort -->\n", [], "docs/x.md")


def _array_result(family: str, case: str, op: str, slug: str = "nvidia-h200",
                  wrong: dict[str, str] | None = None, **extra: Any) -> dict[str, Any]:
    """A result of a family whose `cltune` row reads a whole array back (sort, scan) or
    whose `cltune` row is timed back to back (compaction), as cltune/cli/bench_*.py write
    them."""
    rows = {"cltune": _row(19773e-6, 1 << 26), "numpy": _row(110550e-6, 1 << 26),
            "copy": _row(36.6e-6, 1 << 26)}
    ratios = {"cltune/numpy": 5.59, "cltune-batch/copy": 0.02}
    if family != "compaction":
        rows["cltune-batch"] = _row(1770e-6, 1 << 26)
    for k in wrong or {}:
        rows.pop(k, None)
        ratios.pop(f"cltune/{k}", None)
    return {**_meta(family, case, slug), "device": "NVIDIA H200", "platform": "OpenCL 3.0",
            "mode": family, "op": op, "dtype": "float32", "repeats": 7, "notes": [],
            "cases": [{"label": "2^24", "nbytes": 1 << 26, "config": "c", "rows": rows,
                       "ratios": ratios, "wrong": wrong or {}, "host_us": 55.0,
                       "launches": 5.0}], **extra}


def test_array_families_lead_with_calls_back_to_back(root: Path) -> None:
    """Sorts, scans, top-k and histograms: the tables lead with `cltune-batch` (calls back to
    back, the result left on the device; its µs and GB/s), the call with its read back only
    beside it on the page; a sentence under the tables says what they measure (#43 review)."""
    _write(root, _array_result("sort", "sort", "sort"))
    _write(root, _array_result("compaction", "copy_if", "copy_if"))
    res = bt.load(root)
    block = bt.render_block("sort", res)
    assert "| case | µs a call (back to back) | GB/s | ratios (> 1: cltune faster) |" in block
    assert "| sort, 2^24 | 1,770 | 37.9 | cltune/numpy 5.59×, copy 0.02× |" in block
    assert "19,773" not in block  # the single call with its read back stays on the page
    assert block.endswith(f"\n\n{bt.MEASURES['sort']}\n\nAll figures, with the commands "
                          "that made them: [benchmarks](benchmarks.md).\n")
    assert "µs a call + read back (on the benchmarks page)" in bt.MEASURES["sort"]
    page = bt.render_page(res)
    assert "| case | µs a call (back to back) | GB/s | µs a call + read back | numpy µs | " \
        "copy µs | ratios (> 1: cltune faster) | launches | host µs |" in page
    assert "| sort, 2^24 | 1,770 | 37.9 | 19,773 | 110,550 | 36.6 | cltune/numpy 5.59×, " \
        "copy 0.02× | 5 | 55.00 |" in page
    sort = page.split("## Sort: `cltune.sort`\n\n")[1]
    assert sort.startswith(bt.MEASURES["sort"].replace(" (on the benchmarks page)", "") +
                           "\n\n### nvidia-h200: NVIDIA H200 (OpenCL 3.0)\n| case |")
    # compaction's `cltune` row is itself timed back to back: it leads, named so
    comp = bt.render_block("compaction", res)
    assert "| copy_if, 2^24 | 19,773 | 3.4 | numpy 5.59×, cltune-batch/copy 0.02× |" in comp
    assert "| case | µs a call (back to back) |" in comp
    # every family of `cltune bench` says what its numbers measure; the scalar ones read back
    assert set(bt.MEASURES) == set(bt.FAMILIES) - set(bt.ABOUT)
    assert set(bt.LEAD) <= set(bt.BACK_TO_BACK)
    assert bt.MEASURES["reduce"].startswith(bt.HEAD_READ + ": `r(x).get()`")
    assert "twice the input's" in bt.MEASURES["scan"]


@pytest.mark.parametrize(("family", "op", "why"), [
    ("scan", "cumsum", bt.WHY_BOUND), ("scan", "cummax", bt.WHY_EXACT),
    ("sort", "sort", bt.WHY_EXACT), ("topk", "topk", bt.WHY_EXACT),
    ("statistics", "argmax", bt.WHY_EXACT), ("statistics", "norm", bt.WHY_BOUND)])
def test_wrong_contender_noted_under_the_table(root: Path, family: str, op: str,
                                               why: str) -> None:
    """A contender the benchmark found wrong (and did not time) is named under the table,
    in the guide's block and on the page, with the check it failed (#43 review)."""
    answer = "[0.943787 1.757444 2.391304 3.258338]... (numpy float64: [0.943787 1.757444 " \
        "2.391304 3.258338]...)"
    _write(root, _array_result(family, op, op, wrong={"numpy": answer}))
    res = bt.load(root)
    note = f"Not timed, a wrong answer: numpy at {op}, 2^24, {why}."
    block = bt.render_block(family, res)
    assert f"|\n\n{note}\n\n" in block and "0.943787" not in block
    page = bt.render_page(res)
    assert f"|\n\n{note}\n\n- `cltune bench --device 1 --op {op} --json`: 2026-12-07 10:00 " \
        "UTC, abc123, host Test CPU, cltune 0.1.0\n" in page
    line = next(ln for ln in page.splitlines() if ln.startswith(f"| {op}, 2^24 | "))
    assert line.count("| wrong |") == 1 and "cltune/numpy" not in line
    data = _array_result(family, op, op)  # right answers: no note
    _write(root, data)
    assert f"numpy at {op}, 2^24" not in bt.render_page(bt.load(root))


def test_checked_exactly() -> None:
    """The footnote's reason follows how cltune/cli/bench*.py compare answers."""
    def exact(family: str, op: str, dtype: str = "float32") -> bool:
        return bool(bt.checked_exactly({"family": family, "op": op, "dtype": dtype}))
    assert not exact("reduce", "sum") and exact("reduce", "max") and exact("reduce", "sum",
                                                                             "int32")
    assert not exact("scan", "cumsum") and exact("scan", "cummin") and exact("scan", "cumsum",
                                                                              "int64")
    assert all(exact(f, "x") for f in ("sort", "topk", "histogram", "compaction"))
    assert not exact("axis", "sum") and exact("axis", "min") and exact("statistics", "argmax")
    assert not exact("statistics", "var") and not exact("many", "norm")


def test_check_finds_stale(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert bt.main(["--root", str(root), "--check"]) == 1  # nothing generated yet
    assert bt.main(["--root", str(root), "--write"]) == 0
    assert bt.main(["--root", str(root), "--check"]) == 0
    assert "<!-- bench-table: reduce -->\n*nvidia-h100*" in (root / "docs" / "guide.md") \
        .read_text()
    data = _sizes("pocl-cpu")
    data["sizes"][0]["rows"]["cltune"]["median_s"] = 2e-3  # a new result
    _write(root, data)
    capsys.readouterr()
    assert bt.main(["--root", str(root), "--check"]) == 1
    err = capsys.readouterr().err
    assert "stale: docs/benchmarks.md" in err and "stale: docs/guide.md" in err
    assert bt.main(["--root", str(root), "--write"]) == 0
    guide = root / "docs" / "guide.md"
    guide.write_text(guide.read_text().replace("2,000", "1,999"))  # a block edited by hand
    assert bt.main(["--root", str(root), "--check"]) == 1


@pytest.mark.parametrize(("content", "why"), [
    ("{not json", "not valid JSON"),
    (json.dumps(_meta("nope", "sum", "pocl-cpu")), "unknown family 'nope'"),
    (json.dumps({"family": "reduce"}), "no string 'case'"),
    (json.dumps({**_sizes("pocl-cpu"), "sizes": [{"n": 4, "rows": {"cltune": {}}}]}),
     r"sizes\[0\]: rows, ratios and wrong must be objects|needs numbers median_s"),
    (json.dumps({**_sizes("pocl-cpu"), "date": "yesterday"}), "is not YYYY"),
])
def test_malformed(root: Path, capsys: pytest.CaptureFixture[str], content: str,
                   why: str) -> None:
    bad = root / "docs" / "results" / "pocl-cpu" / "reduce-sum.json"
    bad.write_text(content)
    assert bt.main(["--root", str(root), "--check"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("bench_tables: error: docs/results/pocl-cpu/reduce-sum.json: ")
    assert "Traceback" not in err
    assert re.search(why, err), err


def test_misfiled(root: Path) -> None:
    _write(root, _sizes("pocl-cpu"), name="reduce-max.json")
    with pytest.raises(bt.ResultError, match="reduce-max.json: filed wrong"):
        bt.load(root)


def test_device_slug() -> None:
    slug = bs.device_slug
    assert slug("The pocl project", "Portable Computing Language", "cpu",
                "pthread-skylake-avx512-AMD EPYC") == "pocl-cpu"
    assert slug("Intel(R) Corporation", "Intel(R) OpenCL", "cpu", "AMD EPYC") == "intel-cpu"
    assert slug("NVIDIA Corporation", "NVIDIA CUDA", "gpu", "NVIDIA H100 80GB HBM3") == \
        "nvidia-h100"
    assert slug("NVIDIA Corporation", "NVIDIA CUDA", "gpu", "NVIDIA H200") == "nvidia-h200"
    assert slug("NVIDIA Corporation", "NVIDIA CUDA", "gpu", "NVIDIA GeForce RTX 4090") == \
        "nvidia-rtx-4090"


def test_suite_records_failures(monkeypatch: pytest.MonkeyPatch) -> None:
    cmd = bs.Command("reduce", "sum", "--op sum --sizes 2^10", timeout_s=5)
    dev = {"platform_device": "0:0"}

    def timeout(*a: Any, **kw: Any) -> Any:
        raise subprocess.TimeoutExpired("cltune", 5)
    monkeypatch.setattr(bs.subprocess, "run", timeout)
    rec = bs.run_one(cmd, "1", dev, {"commit": "x"}, None)
    assert rec["error"] == "timed out after 5 s" and rec["commit"] == "x"
    assert rec["command"] == "cltune bench --device 1 --op sum --sizes '2^10' --json"

    def answers(out: str, rc: int) -> Any:
        return lambda *a, **kw: subprocess.CompletedProcess(a[0], rc, out, "boom\n")
    monkeypatch.setattr(bs.subprocess, "run", answers("not json", 2))
    assert bs.run_one(cmd, "1", dev, {}, None)["error"] == "exit code 2, no JSON: boom"
    monkeypatch.setattr(bs.subprocess, "run", answers('{"sizes": []}', 1))  # a wrong answer
    rec = bs.run_one(cmd, "1", dev, {}, None)
    assert "error" not in rec and rec["sizes"] == [] and rec["returncode"] == 1


def test_repo_results_and_docs_current(capsys: pytest.CaptureFixture[str]) -> None:
    """The committed benchmarks.md and the guides' blocks are what docs/results/ gives
    (after new results: python scripts/bench_tables.py --write); every result names the
    command that made it."""
    assert bt.main(["--check"]) == 0, capsys.readouterr().err
    files = sorted((ROOT / "docs" / "results").rglob("*.json"))
    assert files, "no results in docs/results/"
    for f in files:
        cmd = json.loads(f.read_text())["command"]
        assert cmd.startswith(("cltune bench ", "python scripts/")), f
