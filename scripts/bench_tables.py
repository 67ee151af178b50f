"""docs/benchmarks.md and the guides' figure blocks, generated from docs/results/**.json (#43).

    python scripts/bench_tables.py --write    # regenerate docs/benchmarks.md, fill the blocks
    python scripts/bench_tables.py --check    # exit 1 when a generated file or block is stale
    python scripts/bench_tables.py            # print docs/benchmarks.md as it would be

The results are what scripts/bench_suite.py writes: one file per command and device,
`docs/results/<device-slug>/<family>-<case>.json`. benchmarks.md holds, per family and device,
the latest table of each command with the command, date, commit and host. A block
`<!-- bench-table: FAMILY -->` ... `<!-- /bench-table -->` in docs/*.md gets a few rows of
that family per device and a link to benchmarks.md. Every table leads with cltune's figure a
call (LEAD: the call and its result read back where that is a scalar or a value per row, calls
back to back where it is an array), says under it what it measures (MEASURES) and names the
contenders the benchmark found wrong. The output depends on the JSON alone (sorted; no
clock). A malformed or unknown results file is an error naming the file.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
LOG = "docs/logs/benchmarks-2026-11-30-to-2026-12-06.md"
MAX_PAGE_LINES = 600
SMALL_ROWS = 4  # rows per device in a guide's block
#: family -> its section title in benchmarks.md
FAMILIES = {
    "reduce": "Reductions: `r(x)`",
    "axis": "Along an axis: `r(x, axis=k)`",
    "segments": "Segments: `r.segments(x, offsets)`",
    "statistics": "Statistics: `cltune.var`, `argmax`, `norm`, `mean`, ...",
    "many": "Many arrays in one launch: `r.many`, `cltune.norm_many`",
    "scan": "Scans: `cltune.cumsum`",
    "compaction": "Compaction: `cltune.copy_if`, `cltune.nonzero`",
    "histogram": "Histograms: `cltune.bincount`, `cltune.histogram`",
    "topk": "Top-k: `cltune.topk`",
    "sort": "Sort: `cltune.sort`",
    "call-floor": "The call floor: the host part of warm calls",
    "own-kernels": "Your own kernels: `cltune.tune_kernel` beside Kernel Tuner",
}
#: a sentence under a family's title where its table is not `cltune bench`'s
ABOUT = {
    "call-floor": "µs per warm call (`scripts/call_floor.py`), medians of blocks of calls: "
    "`wall` what an application waits, `host` the calling thread's CPU time, `stubbed` "
    "cltune's Python alone (the enqueue stubbed); `bare enqueue` is the floor of any call "
    "from Python.",
    "own-kernels": "`scripts/bench_tuner.py`: each tool's brute force over Kernel Tuner's "
    "example spaces in a fresh process (valid configs, best kernel time, wall time), then "
    "searches with a fifth of the space as budget, simulated on cltune's exhaustive table.",
}
#: family -> the row its tables lead with: `cltune` (the call and its result read back) where
#: the answer is a scalar or a row's worth of values, `cltune-batch` (calls back to back, one
#: wait per block) where `cltune` reads a whole array back (cltune/cli/bench_*.py); compaction's
#: and many's `cltune` rows are themselves timed back to back (bench_compact.py, bench_modes.py)
LEAD = {"scan": "cltune-batch", "sort": "cltune-batch", "topk": "cltune-batch",
        "histogram": "cltune-batch"}
BACK_TO_BACK = ("compaction", "many", *LEAD)
HEAD_READ = "µs a call (result read back)"
HEAD_B2B = "µs a call (back to back)"
HEAD_SINGLE = "µs a call + read back"
_B2B = "calls back to back, one wait per block of calls"
ELSEWHERE = " (on the benchmarks page)"  # dropped on that page
_READ = "one call at a time, each answer read back"
_GBS = "GB/s: the input's bytes / the first column"


def _array(call: str, kept: str, gbs: str = _GBS) -> str:
    """The sentence of a family whose tables lead with `cltune-batch`."""
    return (f"{HEAD_B2B}: `{call}` {_B2B}, {kept} left on the device; {HEAD_SINGLE}{ELSEWHERE}: "
            f"{_READ} to the host; {gbs}; a ratio named by a contender alone is against the "
            "first column, `cltune/X` against the call and its read back.")


#: family -> one sentence under its tables: what the numbers measure (cltune/cli/bench*.py)
MEASURES = {
    "reduce": f"{HEAD_READ}: `r(x).get()`, {_READ} (a scalar); `cltune-batch`: {_B2B}; "
    f"{_GBS}.",
    "axis": f"{HEAD_READ}: `r(x, axis=k).get()`, {_READ} (a value per row or column); "
    f"`cltune-batch`: {_B2B}; {_GBS}.",
    "segments": f"{HEAD_READ}: `r.segments(x, offsets).get()`, {_READ} (a value per "
    f"segment); `cltune-batch`: {_B2B}; {_GBS}.",
    "statistics": f"{HEAD_READ}: the statistic's call and `.get()`, {_READ} (a scalar, or a "
    f"value per row or column); `cltune-batch`: {_B2B}; {_GBS}.",
    "many": f"{HEAD_B2B}: one `r.many(xs)` (`cltune.norm_many`) for all K arrays, {_B2B}, "
    f"the K results left on the device; `cltune-k-calls`: K calls of `r(x)` timed the same "
    f"way; GB/s: the K arrays' bytes / the first column.",
    "scan": _array("cltune.cumsum(x, out=y)", "the result", "GB/s: the bytes read and "
                   "written (twice the input's) / the first column"),
    "compaction": f"{HEAD_B2B}: `cltune.copy_if` / `cltune.nonzero` {_B2B}, the kept "
    "elements left on the device; copy_if keeps its count there too, `nonzero(mask)` reads "
    "its count back in every call (numpy's semantics need it) and `cltune-sized` "
    "(`nonzero(mask, size=k)`) does not; GB/s: the data's bytes (nonzero's: those of the "
    "array its mask was made from, not the mask's) / the first column.",
    "histogram": _array("cltune.bincount` / `cltune.histogram", "the counts"),
    "topk": _array("cltune.topk(x, k)", "the k values (per row)"),
    "sort": _array("cltune.sort(x)", "the sorted array"),
}
#: how a contender's answer is checked (cltune/cli/bench.py `_close`, bench_cases.close_to as
#: bench_modes.py and bench_scan.py call it): ops compared exactly in the modes
EXACT_OPS = ("min", "max", "argmin", "argmax", "count_nonzero", "any", "all", "cummax",
             "cummin")
WHY_BOUND = "outside the accuracy bound the benchmark checks (a float64 reference)"
WHY_EXACT = "not equal to the reference answer, which the benchmark checks exactly"
META = ("family", "case", "command", "date", "commit", "host_cpu", "cltune_version",
        "device_slug")
DATE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
BLOCK = re.compile(r"(<!-- bench-table: ([\w-]+) -->\n)(.*?)(<!-- /bench-table -->)", re.S)
OPEN = re.compile(r"<!-- bench-table: ([^>]*?) -->")


class ResultError(ValueError):
    """A results file that cannot be read as a suite's result; the message names it."""


@dataclass(frozen=True)
class Result:
    path: str  # relative to the repo
    data: dict[str, Any]

    @property
    def family(self) -> str:
        return str(self.data["family"])

    @property
    def slug(self) -> str:
        return str(self.data["device_slug"])

    def get(self, key: str, default: Any = None) -> Any:
        return self.data.get(key, default)


# ---------------------------------------------------------------- reading and checking

def _need(cond: bool, path: str, what: str) -> None:
    if not cond:
        raise ResultError(f"{path}: {what}")


def _num(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _check_bench(path: str, d: dict[str, Any]) -> None:
    for k in ("device", "platform", "op", "dtype"):
        _need(isinstance(d.get(k), str), path, f"no string {k!r}")
    entries = d.get("sizes", d.get("cases"))
    _need(isinstance(entries, list) and ("sizes" in d) != ("cases" in d), path,
          "needs a list 'sizes' or a list 'cases' (one of them)")
    for i, e in enumerate(entries):
        where = f"{'sizes' if 'sizes' in d else 'cases'}[{i}]"
        _need(isinstance(e, dict), path, f"{where} is not an object")
        _need(isinstance(e.get("n"), int) if "sizes" in d else isinstance(e.get("label"), str),
              path, f"{where} has no {'n' if 'sizes' in d else 'label'}")
        rows, ratios, wrong = e.get("rows"), e.get("ratios", {}), e.get("wrong", {})
        _need(isinstance(rows, dict) and isinstance(ratios, dict) and isinstance(wrong, dict),
              path, f"{where}: rows, ratios and wrong must be objects")
        for name, r in rows.items():
            _need(isinstance(r, dict) and _num(r.get("median_s")) and _num(r.get("gbps")),
                  path, f"{where}.rows[{name!r}] needs numbers median_s and gbps")
        _need(all(_num(v) for v in ratios.values()), path, f"{where}: a ratio is no number")
        for k in ("host_us", "launches"):
            _need(e.get(k) is None or _num(e[k]), path, f"{where}.{k} is no number")


def _check_floor(path: str, d: dict[str, Any]) -> None:
    res = d.get("results")
    _need(isinstance(res, dict) and bool(res), path, "needs an object 'results'")
    for name, r in res.items():
        _need(isinstance(r, dict) and all(_num(r.get(k)) for k in (
            "wall_us", "host_us", "stubbed_us", "launches", "stubbed_per_launch_us")),
            path, f"results[{name!r}] needs wall_us, host_us, stubbed_us, launches and "
            "stubbed_per_launch_us")


def _check_tuner(path: str, d: dict[str, Any]) -> None:
    rows = d.get("rows")
    _need(isinstance(rows, list) and all(isinstance(r, dict) and isinstance(r.get("tool"), str)
                                         for r in rows), path,
          "needs a list 'rows' of objects with a 'tool'")


CHECKS: dict[str, Callable[[str, dict[str, Any]], None]] = {
    **{f: _check_bench for f in FAMILIES}, "call-floor": _check_floor,
    "own-kernels": _check_tuner}


def check(path: str, d: Any) -> None:
    """Raise ResultError naming `path` unless `d` is a suite's result filed where it says."""
    _need(isinstance(d, dict), path, "not a JSON object")
    for k in META:
        _need(isinstance(d.get(k), str) and d[k] != "", path, f"no string {k!r} (written by "
              "scripts/bench_suite.py?)")
    _need(d["family"] in FAMILIES, path, f"unknown family {d['family']!r:.40}; known: "
          f"{', '.join(FAMILIES)}")
    _need(bool(DATE.match(d["date"])), path, f"date {d['date']!r:.40} is not YYYY-MM-DDTHH:MM:SSZ")
    p = Path(path)
    _need(p.name == f"{d['family']}-{d['case']}.json" and p.parent.name == d["device_slug"],
          path, f"filed wrong: {d['device_slug']}/{d['family']}-{d['case']}.json expected")
    if "error" in d:
        _need(isinstance(d["error"], str), path, "'error' is not a string")
        return
    CHECKS[d["family"]](path, d)


def load(root: Path) -> list[Result]:
    """Every docs/results/<slug>/*.json under `root`, checked, in path order."""
    out = []
    base = root / "docs" / "results"
    for f in sorted(base.rglob("*")):
        if f.is_dir():
            continue
        rel = f.relative_to(root).as_posix()
        _need(f.suffix == ".json" and f.parent.parent == base, rel,
              "not a results file (docs/results/<device-slug>/<family>-<case>.json)")
        try:
            data = json.loads(f.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, ValueError) as e:
            raise ResultError(f"{rel}: not valid JSON: {e}") from None
        check(rel, data)
        out.append(Result(rel, data))
    return out


# ---------------------------------------------------------------- formatting

def us(seconds: float) -> str:
    v = seconds * 1e6
    return f"{v:,.0f}" if v >= 1000 else f"{v:.1f}" if v >= 10 else f"{v:.2f}"


def num(v: float | None, digits: int = 2) -> str:
    return "–" if v is None else f"{v:.{digits}f}"


def size(n: int) -> str:
    return f"2^{n.bit_length() - 1}" if n > 0 and n & (n - 1) == 0 else f"{n:,}"


def cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def table(head: list[str], rows: list[list[str]]) -> list[str]:
    return ["| " + " | ".join(head) + " |", "|" + "---|" * len(head),
            *["| " + " | ".join(cell(c) for c in r) + " |" for r in rows]]


Line = tuple[str, dict[str, Any], dict[str, Any]]  # (label, entry, its file's data)


def case_rows(r: Result) -> list[Line]:
    """(label, entry, data) per size or case; the label names the op where the family mixes
    them."""
    d = r.data
    op = d["op"] + ("" if d["dtype"] == "float32" else f" {d['dtype']}")
    if "sizes" in d:
        return [(f"{op}, n = {size(e['n'])}", e, d) for e in d["sizes"]]
    return [(f"{op}, {e['label']}", e, d) for e in d["cases"]]


def ratio_text(ratios: dict[str, float], lead: str = "cltune", small: bool = False) -> str:
    """`numpy 1.80×, ...`: the other row alone where the table's first column (`lead`) is timed
    against it, `a/b` otherwise; small: only the ratios of cltune's call and batch (not the
    device time's, nor tuned/builtin)."""
    parts = []
    for k, v in ratios.items():
        a, _, b = k.partition("/")
        if small and a not in ("cltune", "cltune-batch"):
            continue
        parts.append(f"{b if a == lead else k} {v:.2f}×")
    return ", ".join(parts) or "–"


def checked_exactly(d: dict[str, Any]) -> bool:
    """Whether `cltune bench` compares answers exactly in this file's mode (else: within a
    relative bound of numpy's answer in float64): bench.py's `_close`, bench_modes.py's and
    bench_scan.py's `close_to(rtol, exact)`, and sort, top-k, histograms and compaction, which
    pass `close_to(0.0, True)`."""
    family, op, is_float = d["family"], d["op"], str(d["dtype"]).startswith("float")
    if family in ("sort", "topk", "histogram", "compaction"):
        return True
    if family == "scan":
        return op in ("cummax", "cummin") or not is_float
    if family == "reduce":
        return op in ("min", "max") or not is_float
    return op in EXACT_OPS


def wrong_note(lines: list[Line]) -> list[str]:
    """A line under a table naming every contender whose answer the benchmark rejected (and
    so did not time), where, and why; [] when none was."""
    found: dict[tuple[str, str], list[str]] = {}
    for lbl, e, d in lines:
        for name, answer in e["wrong"].items():
            why = WHY_EXACT if checked_exactly(d) else WHY_BOUND
            shown = "" if "..." in str(answer) else f": it answered {answer}"
            found.setdefault((name, why), []).append(f"{lbl}{shown}")
    parts = [f"{name} at {' and '.join(where)}, {why}" for (name, why), where in found.items()]
    return [f"Not timed, a wrong answer: {'; '.join(parts)}."] if parts else []


def short_platform(p: str) -> str:
    return " ".join(p.split(",")[0].split())


def when(r: Result) -> str:
    return r.data["date"].replace("T", " ")[:16] + " UTC"


# ---------------------------------------------------------------- the tables

def bench_table(family: str, results: list[Result], small: bool = False) -> list[str]:
    """One table for a family on one device: a line per size or case, the per-call figure
    (µs, GB/s; LEAD says which row), every other contender's median (µs), the ratios,
    launches and host µs (small: the per-call figure and cltune's ratios); under it, the
    contenders that answered wrong."""
    lead = LEAD.get(family, "cltune")
    per_file = [case_rows(r) for r in results]
    lines = [x for rows in per_file for x in rows]
    if small:  # SMALL_ROWS of them, taken from each command in turn, shown in order
        turns = sorted((i, f, x[0]) for f, rows in enumerate(per_file)
                       for i, x in enumerate(rows))
        keep = {(f, lbl) for _, f, lbl in turns[:SMALL_ROWS]}
        lines = [x for f, rows in enumerate(per_file) for x in rows if (f, x[0]) in keep]
    second = ["cltune"] if lead != "cltune" else []
    names: list[str] = []
    for _, e, _ in lines:
        for k in [*e["rows"], *e["wrong"]]:
            if k not in names and k not in (lead, *second):
                names.append(k)

    def med(name: str, e: dict[str, Any]) -> str:
        return "wrong" if name in e["wrong"] else us(e["rows"][name]["median_s"]) \
            if name in e["rows"] else "–"

    def gbps(e: dict[str, Any]) -> str:
        return num(e["rows"].get(lead, {}).get("gbps"), 1)

    first = HEAD_B2B if family in BACK_TO_BACK else HEAD_READ
    if small:
        head = ["case", first, "GB/s", "ratios (> 1: cltune faster)"]
        body = [[lbl, med(lead, e), gbps(e), ratio_text(e["ratios"], lead, small=True)]
                for lbl, e, _ in lines]
    else:
        head = ["case", first, "GB/s", *([HEAD_SINGLE] if second else []),
                *[f"{n} µs" for n in names], "ratios (> 1: cltune faster)", "launches",
                "host µs"]
        body = [[lbl, med(lead, e), gbps(e), *[med(n, e) for n in [*second, *names]],
                 ratio_text(e["ratios"], lead), num(e.get("launches"), 0),
                 num(e.get("host_us"))] for lbl, e, _ in lines]
    note = wrong_note(lines)
    return table(head, body) + (["", *note] if note else [])


def floor_table(r: Result, small: bool = False) -> list[str]:
    res: dict[str, dict[str, float]] = r.data["results"]
    extra = [k for k in ("device_us", "torch_us") if any(k in v for v in res.values())]
    if small:
        calls = [k for k in res if k != "bare enqueue"][:SMALL_ROWS]
        return table(["call", "wall µs", "stubbed µs", "launches"],
                     [[k, num(res[k]["wall_us"]), num(res[k]["stubbed_us"]),
                       num(res[k]["launches"], 0)] for k in ["bare enqueue", *calls]
                      if k in res])
    head = ["call", "wall µs", "host µs", "stubbed µs", "launches", "stubbed / launch µs",
            *[k.replace("_us", " µs") for k in extra]]
    return table(head, [[k, num(v["wall_us"]), num(v["host_us"]), num(v["stubbed_us"]),
                         num(v["launches"], 0), num(v["stubbed_per_launch_us"]),
                         *[num(v.get(x)) for x in extra]] for k, v in res.items()])


def tuner_table(r: Result, small: bool = False) -> list[str]:
    """Brute force by each tool (valid configs, best time, wall), then each budgeted search's
    median quality over its seeds (the table's best time / the time of its pick, on cltune's
    exhaustive table, as bench_tuner.py scores them)."""
    rows: list[dict[str, Any]] = r.data["rows"]
    brute = {(x.get("case"), x["tool"]): x for x in rows
             if x.get("strategy", "brute_force") == "brute_force" and "round" not in x}

    def brief(x: dict[str, Any] | None) -> str:
        if not x:
            return "–"
        if "error" in x or x.get("best_ms") is None or not isinstance(x.get("valid"), list):
            return "failed"
        return f"{len(x['valid'])} valid, best {x['best_ms']:.3f} ms, {x['wall_s']:.1f} s"

    body = []
    for case in dict.fromkeys(str(x.get("case", "?")) for x in rows):
        c = brute.get((case, "cltune"))
        # the table the searches were scored on: the median of --table-rounds runs where
        # bench_tuner.py took more than one (older results: the first run's)
        times: dict[str, float] = (c or {}).get("scored_times") or (c or {}).get("times") or {}
        searches = []
        for x in rows:
            if x.get("case") != case or x.get("strategy", "brute_force") == "brute_force":
                continue
            picks = x.get("picks")
            if not times or not isinstance(picks, list) or not picks:
                searches.append(f"{x['tool']} {x.get('strategy')} failed")
                continue
            best = min(times.values())
            q = statistics.median(best / times[p] if times.get(p) else 0.0 for p in picks)
            searches.append(f"{x['tool']} {x.get('strategy')} {q:.2f}")
        budget = next((x["budget"] for x in rows if x.get("case") == case and "budget" in x),
                      None)
        label = f"budget {budget} of {len(times)}: " if budget and times else ""
        body.append([case, brief(c), brief(brute.get((case, "kernel_tuner"))),
                     label + (", ".join(searches) or "–")])
    head = ["case", "cltune brute force", "Kernel Tuner brute force",
            "searches: median quality over the seeds (1 = the best)"]
    if small:
        return table(head[:3], [b[:3] for b in body[:SMALL_ROWS]])
    return table(head, body)


def family_table(family: str, results: list[Result], small: bool = False) -> list[str]:
    ok = [r for r in results if "error" not in r.data]
    if not ok:
        return []
    if family == "call-floor":
        return [ln for r in ok for ln in floor_table(r, small)]
    if family == "own-kernels":
        return [ln for r in ok for ln in tuner_table(r, small)]
    return bench_table(family, ok, small)


def _order(results: list[Result]) -> list[Result]:
    return sorted(results, key=lambda r: (r.get("order", 0), r.data["case"]))


def device_name(results: list[Result]) -> str:
    """The device's name as the commands reported it (bench_tuner's: in its rows)."""
    for r in results:
        rows = r.get("rows") if isinstance(r.get("rows"), list) else []
        for name in [r.get("device"), *[x.get("device") for x in rows]]:
            if isinstance(name, str) and name:
                return name
    return results[0].slug


def device_heading(results: list[Result]) -> str:
    first = next((r for r in results if "platform" in r.data), results[0])
    plat = short_platform(first.get("platform", "")) or first.get("platform_vendor", "?")
    return f"### {first.slug}: {device_name(results)} ({plat})"


def provenance(results: list[Result]) -> list[str]:
    """A line per command: the command, its date, commit, host and cltune's version, and
    whether it failed (a wrong answer is noted under the table); then the commands' notes."""
    out = []
    for r in results:
        d = r.data
        status = f": **failed** ({d['error'].splitlines()[0][:160]})" if "error" in d else ""
        out.append(f"- `{d['command']}`: {when(r)}, {d['commit']}, host {d['host_cpu']}, "
                   f"cltune {d['cltune_version']}{status}")
    notes = sorted({n for r in results for n in r.get("notes", []) or []})
    return out + [f"- note: {n}" for n in notes]


def by_family(results: list[Result]) -> dict[str, dict[str, list[Result]]]:
    out: dict[str, dict[str, list[Result]]] = {f: {} for f in FAMILIES}
    for r in results:
        out[r.family].setdefault(r.slug, []).append(r)
    return {f: {s: _order(rs) for s, rs in sorted(d.items())} for f, d in out.items()}


INTRO = """\
# Benchmarks

<!-- Generated by scripts/bench_tables.py from docs/results/**.json: do not edit by hand. -->

The current figures of every family, per device: the latest run of each command of
`scripts/bench_suite.py`, with the command, its date (UTC), the commit and the host. The
history of measurements, in the order they were made and with the reasoning around them, is
in docs/logs/ (until 2026-12-06: `{log}`).

How the figures are measured (`cltune bench`): every contender of a table line runs in ONE
process on the same data, its answer checked first against numpy's (in float64 where it is a
float computation; a wrong answer is noted under the table, never timed); the contenders are
sampled interleaved round-robin (the first one rotates), each sample a block of calls; a
figure is the median of the samples.

- The first column is cltune's figure a call; the sentence under each family's title says
  what it times. Where the answer is a scalar or a value per row or segment, the call and its
  result read back (`.get()`: the `cltune` row, what an application waiting for each answer
  sees); for scans, sorts, top-k and histograms, calls back to back with one wait per block,
  the result left on the device (the `cltune-batch` row: the rate torch's row compares with),
  the call with its result read back beside it; compaction's and many's `cltune` rows are
  timed back to back. `cltune-dev` is the kernels' device time; `tuned` / `builtin` the
  tuned and the builtin config launched alone; `read-ceiling` / `copy` a streaming read /
  copy of the same bytes: what the memory allows.
- A ratio is time(other) / time(cltune's row): named by the other row alone it is against the
  first column, else `row/other`; above 1, cltune is faster. GB/s = the bytes the benchmark
  counts (the input's; a scan's input and output) / the first column.
- `launches` is the kernel enqueues per call and `host µs` cltune's own Python per call with
  the enqueue stubbed (the host part; `scripts/call_floor.py` measures it for every warm call).
- The `config` of each line in the JSON says what served it (tuned results or the builtin
  config of an untuned device). The machines are shared: compare ratios within a table
  rather than absolute times across runs.

## Regenerating

```bash
python scripts/bench_suite.py --device 1 --preset cpu   # PoCL; --device 0: Intel's runtime
python scripts/bench_tables.py --write                  # this page and the guides' tables
```

On a GPU machine without network access, in a copy of the checkout (without `.git`):

```bash
source scripts/gpu_setup.sh
python3 scripts/bench_suite.py --device NVIDIA --preset gpu --out DIR --commit HASH
```

`scripts/gpu_setup.sh` installs the wheels placed in the copy's `.whl/` (cltune's
dependencies, pyopencl among them, for that machine's Python) and the project into
`/tmp/site`, puts that on `PYTHONPATH`, and registers NVIDIA's OpenCL library with the ICD
loader (`OCL_ICD_VENDORS`); torch on CUDA, where that Python has it, gives the torch rows.
`--commit HASH` records the commit that git cannot tell without `.git`; `--out DIR` writes
`DIR/<device-slug>/`, to be copied into `docs/results/` before `bench_tables.py --write`.
`--kt-python PATH` (a Python with Kernel Tuner) adds the own-kernels family; `--families`
runs some families only; `--list` prints the commands. Each command writes
`docs/results/<device-slug>/<family>-<case>.json`, the slug naming what the device is
(`pocl-cpu`, `intel-cpu`, `nvidia-h200`); `python scripts/bench_tables.py --check` fails
while this page or a guide's figures differ from what those files give.
"""


def render_page(results: list[Result]) -> str:
    out = INTRO.format(log=LOG).splitlines()
    fams = by_family(results)
    for family, title in FAMILIES.items():
        out += ["", f"## {title}", ""]
        about = ABOUT.get(family) or (MEASURES.get(family, "").replace(ELSEWHERE, "")
                                      if fams[family] else "")
        if about:
            out += [about, ""]
        if not fams[family]:
            out.append("No results yet.")
            continue
        for rs in fams[family].values():
            out.append(device_heading(rs))  # no blank line: a table may follow a heading
            tab = family_table(family, rs)
            if tab:
                out += [*tab, ""]
            out += provenance(rs)
            out.append("")
        if out[-1] == "":
            out.pop()
    text = "\n".join(out).rstrip() + "\n"
    n = text.count("\n")
    if n > MAX_PAGE_LINES:
        raise ResultError(f"docs/benchmarks.md would be {n} lines (at most {MAX_PAGE_LINES}): "
                          "fewer cases in the presets")
    return text


def render_block(family: str, results: list[Result]) -> str:
    """A guide's block: a few rows per device, what they measure and the link to
    benchmarks.md."""
    fams = by_family(results).get(family, {})
    out: list[str] = []
    for slug, rs in fams.items():
        tab = family_table(family, rs, small=True)
        latest = max(rs, key=lambda r: r.data["date"])
        out += [f"*{slug}* ({device_name(rs)}, {when(latest)}):", "",
                *(tab or ["no figures: the run failed"]), ""]
    if not out:
        out = ["No current figures yet.", ""]
    elif family in MEASURES:
        out += [MEASURES[family], ""]
    out.append("All figures, with the commands that made them: [benchmarks](benchmarks.md).")
    return "\n".join(out) + "\n"


def fill_blocks(text: str, results: list[Result], path: str) -> str:
    """`text` with every bench-table block filled; unknown families and unclosed blocks are
    errors naming `path`."""
    for m in OPEN.finditer(text):
        _need(m.group(1) in FAMILIES, path, f"bench-table block of unknown family "
              f"{m.group(1)!r:.40}; known: {', '.join(FAMILIES)}")
    filled = BLOCK.sub(lambda m: m.group(1) + render_block(m.group(2), results) + m.group(4),
                       text)
    _need(len(BLOCK.findall(text)) == len(OPEN.findall(text)), path,
          "a <!-- bench-table: FAMILY --> block without its <!-- /bench-table --> line")
    return filled


def generated(root: Path) -> dict[Path, str]:
    """Every generated file's path -> the text it should have."""
    results = load(root)
    out = {root / "docs" / "benchmarks.md": render_page(results)}
    for page in sorted((root / "docs").glob("*.md")):
        if page.name == "benchmarks.md":
            continue
        text = page.read_text(encoding="utf-8")
        if "<!-- bench-table:" in text:
            out[page] = fill_blocks(text, results, page.relative_to(root).as_posix())
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--write", action="store_true", help="write the generated files")
    ap.add_argument("--check", action="store_true", help="exit 1 when a file is stale")
    ap.add_argument("--root", type=Path, default=ROOT, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    try:
        files = generated(a.root)
    except ResultError as e:
        print(f"bench_tables: error: {e}", file=sys.stderr)
        return 2
    stale = [p for p, text in files.items()
             if not p.exists() or p.read_text(encoding="utf-8") != text]
    if a.check:
        for p in stale:
            print(f"bench_tables: stale: {p.relative_to(a.root).as_posix()} (run python "
                  "scripts/bench_tables.py --write)", file=sys.stderr)
        return 1 if stale else 0
    if a.write:
        for p in stale:
            p.write_text(files[p], encoding="utf-8")
            print(f"wrote {p.relative_to(a.root).as_posix()}")
        return 0
    sys.stdout.write(files[a.root / "docs" / "benchmarks.md"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
