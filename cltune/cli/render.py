"""How the CLI draws things (rich): the tuner's progress bar, the tables of `cltune devices`,
`tune`, `show`, `verify` and `bench`. Display only; `app.py` parses and calls the library."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

from cltune.core.buckets import count_label
from cltune.core.family import get as get_family

if TYPE_CHECKING:  # annotations only: importing these loads the tuner and OpenCL
    from cltune.cli.bench import Report
    from cltune.cli.bench_cases import ModeReport
    from cltune.cli.service import DeviceRow
    from cltune.cli.tune_modes import Runs
    from cltune.device.info import DeviceInfo
    from cltune.tuning.tuner import BucketResult


class RichProgress:
    """The tuner's progress (tuner.Progress) as a rich progress bar on `console`."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.bar = Progress(TextColumn("{task.description}"), BarColumn(),
                            TextColumn("{task.completed}/{task.total} trials"),
                            TextColumn("best {task.fields[best]}"), TimeRemainingColumn(),
                            console=console, transient=False)
        self.task: Any = None
        self.started = False

    def start(self, space: Any, classes: tuple[str, ...]) -> None:
        if hasattr(space, "describe") or "strategy" not in space.values:  # other families
            desc = space.describe() if hasattr(space, "describe") else ", ".join(
                f"{k} {'/'.join(map(str, v))}" for k, v in space.values.items())
            self.console.print(f"space: {space.size():,} points: {desc}; classes "
                               + ", ".join(classes), highlight=False)
        else:
            strategies = ", ".join(space.values["strategy"])
            self.console.print(f"space: {space.size():,} feasible configs over {strategies}"
                               f" (subgroup multiple {space.base_multiple}); buckets "
                               + ", ".join(classes), highlight=False)
        for s, why in space.excluded.items():
            self.console.print(f"  not offered: {s}: {why}", highlight=False)
        self.bar.start()
        self.started = True

    def start_bucket(self, size_class: str, trials: int) -> None:
        self.task = self.bar.add_task(size_class, total=trials, best="-")

    def trial(self, size_class: str, done: int, best: float | None, left_s: float) -> None:
        self.bar.update(self.task, completed=done,
                        best=f"{best:.1f} GB/s" if best else "-")

    def end_bucket(self, r: BucketResult) -> None:
        self.bar.update(self.task, completed=self.bar.tasks[-1].total)

    def note(self, text: str) -> None:
        """A line for the user about the run (not a trial)."""
        self.console.print(text, highlight=False)

    def stop(self) -> None:
        if self.started:
            self.bar.stop()


@contextmanager
def progress_bar(console: Console) -> Iterator[RichProgress]:
    """A RichProgress on `console`, stopped however the run ends (before an error is shown)."""
    prog = RichProgress(console)
    try:
        yield prog
    finally:
        prog.stop()


def results_table(title: str, first: str, results: list[BucketResult],
                  vs_builtin: bool = True) -> Table:
    """The tuner's results, a row per size class (its column named `first`)."""
    t = Table(title=title)
    for c in (first, "GB/s", "device time", "per call", *(["vs builtin"] if vs_builtin else []),
              "config", "trials", "rejected"):
        t.add_column(c)
    for r in results:
        ratio = [f"{r.vs_builtin:.2f}x" if r.vs_builtin else "-"] if vs_builtin else []
        t.add_row(r.size_class, f"{r.gbps:.1f}" if r.gbps else "-",
                  f"{r.median_s * 1e6:.1f} µs" if r.median_s else "-",
                  f"{r.per_call_s * 1e6:.1f} µs" if r.per_call_s else "-", *ratio,
                  r.config.short() if r.config else "no config validated",
                  str(r.trials), str(r.failed + r.pruned))
    return t


def driver_failures(results: list[BucketResult]) -> str:
    """One line on the candidates that crashed or hung the driver ('' when none did)."""
    crashed = sum(getattr(r, "crashed", 0) for r in results)
    hung = sum(getattr(r, "hung", 0) for r in results)
    if not crashed and not hung:
        return ""
    parts = [f"crashed on {crashed}" if crashed else "", f"hung on {hung}" if hung else ""]
    return (f"the driver {' and '.join(p for p in parts if p)} candidate configs: each ran in "
            "the evaluation worker, is recorded as failed with its reason and is never served "
            "(`cltune show --json` lists them)")


def _say_driver_failures(console: Console, results: list[BucketResult]) -> None:
    if driver_failures(results):
        console.print(driver_failures(results), highlight=False)


def render_sizes(info: DeviceInfo, runs: Runs, out: Console, err: Console) -> bool:
    """`cltune tune` of 1-D size buckets: the table, then what failed; True when a bucket has
    no validated config."""
    failed = False
    for label, results in runs:
        out.print(results_table(f"best on {info.name} ({label})", "bucket", results))
        _say_driver_failures(err, results)
        for r in results:
            if r.config is None:
                err.print(f"{r.size_class}: no config validated ({r.failed + r.pruned} "
                          "rejected; `cltune show --json` lists the reasons)", highlight=False)
        failed |= any(r.config is None for r in results)
    return failed


def render_shapes(info: DeviceInfo, runs: Runs, out: Console, err: Console) -> bool:
    """`cltune tune --axis/--segments`: one table per variant; True when some class has no
    validated config."""
    failed = False
    for variant, results in runs:
        out.print(results_table(f"best on {info.name} ({variant})", "shape class", results))
        _say_driver_failures(err, results)
        failed |= any(r.config is None for r in results)
    if failed:
        err.print("some classes have no validated config (`cltune show --json` lists the "
                  "reasons)", highlight=False)
    return failed


def render_kernel(info: DeviceInfo, runs: Runs, out: Console, err: Console) -> bool:
    """`cltune tune --kernel/--op <statistic>`: the kernel's table (no builtin to compare
    with); True when a size class has no validated config."""
    failed = False
    for label, results in runs:
        out.print(results_table(f"best on {info.name} ({label})", "size", results,
                                vs_builtin=False))
        _say_driver_failures(out, results)
        failed |= any(r.config is None for r in results)
    return failed


def render_devices(rows: list[DeviceRow], note: str, as_json: bool, out: Console,
                   err: Console) -> None:
    """`cltune devices`: the table (or JSON), then a line per unusable or restricted device."""
    if as_json:
        out.print_json(json.dumps([{**r.info.to_dict(), "status": r.health.status,
                                    "usable": r.health.ok, "problem": r.health.message,
                                    "fix": r.health.fix, "restricted": r.health.restricted,
                                    "restrictions": r.health.notes,
                                    "subgroup_size": r.subgroup_size,
                                    "tuned": r.tuned} for r in rows]))
        return
    t = Table(title="OpenCL devices")
    for c in ("#", "P:D", "platform", "device", "type", "status", "CUs", "local mem", "max WG",
              "subgroups", "fingerprint", "tuned"):
        t.add_column(c)
    for r in rows:
        i = r.info
        sg = f"yes ({r.subgroup_size})" if i.subgroups else (
            f"no (warp {i.warp_size})" if i.warp_size else "no")
        status = ("[red]unusable[/] (below)" if not r.health.ok else
                  "[yellow]restricted[/] (below)" if r.health.restricted else "ok")
        t.add_row(str(i.index), f"{i.platform_index}:{i.device_index}",
                  f"{i.platform} {i.release}", i.name, i.type, status, str(i.compute_units),
                  f"{i.local_mem // 1024} KiB", str(i.max_wg), sg, i.fingerprint,
                  "yes" if r.tuned else "no")
    out.print(t)
    for r in rows:
        if not r.health.ok:
            err.print(f"device {r.info.index} is unusable: {escape(r.health.message)}; fix: "
                      f"{escape(r.health.fix)}", highlight=False, soft_wrap=True)
        elif r.health.restricted:
            err.print(f"device {r.info.index} is usable with restrictions: "
                      f"{escape(r.health.notes)}", highlight=False, soft_wrap=True)
    if not any(r.health.ok for r in rows):
        err.print("no usable OpenCL device", highlight=False)
    if note:
        err.print(f"note: {escape(note)}", highlight=False, soft_wrap=True)


def render_show(rows: list[Any], answers: list[tuple[str, Any]], device: str | None,
                as_json: bool, out: Console) -> None:
    """`cltune show`: the stored bests (ResultRow) and, for one device, the fallback level
    that answers per variant (lookup.Answer)."""
    if as_json:
        out.print_json(json.dumps({"results": [r.__dict__ for r in rows],
                                   "answers": [{"variant": v, "level": a.level, "why": a.why}
                                               for v, a in answers]}
                                  if device is not None else [r.__dict__ for r in rows],
                                  default=str))
        return
    for v, a in answers:
        out.print(f"{v}: served at level [bold]{a.level}[/]: {escape(a.why)}", highlight=False)
    if not rows:
        out.print("no tuned results" + (f" for device {device}" if device else ""))
        return
    t = Table(title="best configs")
    for c in ("device", "family", "variant", "size", "GB/s", "median", "config", "tuned at"):
        t.add_column(c)
    for r in rows:
        t.add_row(f"{escape(r.device_name)} [{r.fingerprint}]", r.family, r.variant,
                  r.size_class, f"{r.gbps:.1f}" if r.gbps else "-",
                  f"{r.median_s * 1e6:.1f} µs" if r.median_s else "-",
                  _cfg_text(r.family, r.config), r.updated_at)
    out.print(t)


def _cfg_text(family: str, cfg: dict) -> str:
    try:
        return get_family(family).parse_config(cfg).short()
    except (KeyError, ValueError):
        return escape(json.dumps(cfg, sort_keys=True))


def render_verify(info: DeviceInfo, rows: list[Any], skipped: dict[str, int],
                  out: Console) -> bool:
    """`cltune verify`: what now serves each stored variant and size (reverify rows); True
    when one has no config that passes."""
    for fam, n in skipped.items():
        what, how = ("a kernel's", "cltune.tune_kernel(..., resume=False)") if fam == "kernel" \
            else ("an expression's", "knl.tune(...)")
        out.print(f"[dim]{n} stored {fam} result(s) not re-run: {what} code and arguments are "
                  f"the application's and are not stored (its fingerprint is); re-validate "
                  f"them with {how}[/]")
    if not rows:
        out.print(f"nothing stored for {info.name} (nor its hardware or model)")
        return False
    t = Table(title=f"verified on {info.name} (driver {info.driver})")
    for c in ("variant", "size", "from", "now serving", "GB/s", "failed"):
        t.add_column(c)
    for r in rows:
        t.add_row(r.variant, r.size_class, r.source_level,
                  r.config.short() if r.config else "[red]none passes[/]",
                  f"{r.gbps:.1f}" if r.gbps else "-", "; ".join(r.failed) or "-")
    out.print(t)
    return any(r.config is None for r in rows)


def _say_host_part(out: Console, host_us: float | None, launches: float | None,
                   floor_us: float | None) -> None:
    """cltune's call with the enqueue stubbed (its own Python), beside the device's bare
    enqueue: what a warm call adds to the floor any call from Python pays."""
    if host_us is None or launches is None:
        return
    floor = f"; a bare enqueue takes {floor_us:.1f} µs here" if floor_us is not None else ""
    out.print(f"host part (cltune's call, enqueue stubbed): {host_us:.1f} µs per call, "
              f"{launches:g} launch{'es' if launches != 1 else ''}{floor}", highlight=False,
              soft_wrap=True)


def render_bench(report: Report, out: Console, err: Console) -> None:
    """`cltune bench`'s tables: one per size, then the ratios and any wrong answers."""
    out.print(f"{report.op}/{report.dtype} on {report.device} ({report.platform}); "
              f"tuned answer: {report.level}; {report.repeats} interleaved samples per "
              "contender, medians", highlight=False)
    for s in report.sizes:
        served = s.config.split(": ", 1)[1] if s.config.startswith(f"n={s.n}: ") else s.config
        t = Table(title=f"n = {count_label(s.n)}: {served}", title_justify="left")
        for c in ("contender", "median µs", "GB/s", "IQR"):
            t.add_column(c, justify="left" if c == "contender" else "right")
        for name, row in s.rows.items():
            t.add_row(name, f"{row.median_s * 1e6:,.1f}", f"{row.gbps:.2f}",
                      f"{row.iqr_pct:.0f}%")
        out.print(t)
        _say_host_part(out, s.host_us, s.launches, report.floor_us)
        if s.ratios:
            out.print("ratios (time of the other / time of cltune's; > 1: cltune faster): "
                      + ", ".join(f"{k} {v:.2f}x" for k, v in s.ratios.items()),
                      highlight=False)
        for name, what in s.wrong.items():
            err.print(f"[red]wrong result[/]: {name} = {escape(what)} (not timed)")


def render_bench_cases(report: ModeReport, out: Console, err: Console) -> None:
    """The tables of `cltune bench --axis/--segments/--many` and of a statistic: one per
    case, then its ratios and any wrong answers."""
    out.print(f"{report.op}/{report.dtype} ({report.mode}) on {report.device} "
              f"({report.platform}); {report.repeats} samples per contender, medians",
              highlight=False)
    for c in report.cases:
        t = Table(title=f"{c.label}: {c.config}", title_justify="left")
        for col in ("contender", "median µs", "GB/s", "IQR"):
            t.add_column(col, justify="left" if col == "contender" else "right")
        for name, row in c.rows.items():
            t.add_row(name, f"{row.median_s * 1e6:,.1f}", f"{row.gbps:.2f}",
                      f"{row.iqr_pct:.0f}%")
        out.print(t)
        _say_host_part(out, c.host_us, c.launches, report.floor_us)
        if c.ratios:
            out.print("ratios (time of the other / time of cltune's; > 1: cltune faster): "
                      + ", ".join(f"{k} {v:.2f}x" for k, v in c.ratios.items()),
                      highlight=False)
        for name, what in c.wrong.items():
            err.print(f"[red]wrong result[/]: {name} = {escape(what)} (not timed)")
