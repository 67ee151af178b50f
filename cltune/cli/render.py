"""How the CLI draws things: the tuner's progress bar and `cltune bench`'s tables (rich).
Display only; `cli.py` parses and calls the library."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table


class RichProgress:
    """The tuner's progress (tuner.Progress) as a rich progress bar on `console`."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.bar = Progress(TextColumn("{task.description}"), BarColumn(),
                            TextColumn("{task.completed}/{task.total} trials"),
                            TextColumn("best {task.fields[best]}"), TimeRemainingColumn(),
                            console=console, transient=False)
        self.task = None
        self.started = False

    def start(self, space, classes) -> None:  # noqa: ANN001
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

    def end_bucket(self, r) -> None:  # noqa: ANN001
        self.bar.update(self.task, completed=self.bar.tasks[-1].total)

    def stop(self) -> None:
        if self.started:
            self.bar.stop()


def render_bench(report, out: Console, err: Console) -> None:  # noqa: ANN001 - benchmark.Report
    """`cltune bench`'s tables: one per size, then the ratios and any wrong answers."""
    out.print(f"{report.op}/{report.dtype} on {report.device} ({report.platform}); "
              f"tuned answer: {report.level}; {report.repeats} interleaved samples per "
              "contender, medians", highlight=False)
    for s in report.sizes:
        t = Table(title=f"n = 2^{s.n.bit_length() - 1}: {s.config}", title_justify="left")
        for c in ("contender", "median µs", "GB/s", "IQR"):
            t.add_column(c, justify="left" if c == "contender" else "right")
        for name, row in s.rows.items():
            t.add_row(name, f"{row.median_s * 1e6:,.1f}", f"{row.gbps:.2f}",
                      f"{row.iqr_pct:.0f}%")
        out.print(t)
        if s.ratios:
            out.print("ratios (time of the other / time of cltune's; > 1: cltune faster): "
                      + ", ".join(f"{k} {v:.2f}x" for k, v in s.ratios.items()),
                      highlight=False)
        for name, what in s.wrong.items():
            err.print(f"[red]wrong result[/]: {name} = {escape(what)} (not timed)")


def driver_failures(results: list) -> str:  # noqa: ANN001 - tuner.BucketResult
    """One line on the candidates that crashed or hung the driver ('' when none did)."""
    crashed = sum(getattr(r, "crashed", 0) for r in results)
    hung = sum(getattr(r, "hung", 0) for r in results)
    if not crashed and not hung:
        return ""
    parts = [f"crashed on {crashed}" if crashed else "", f"hung on {hung}" if hung else ""]
    return (f"the driver {' and '.join(p for p in parts if p)} candidate configs: each ran in "
            "the evaluation worker, is recorded as failed with its reason and is never served "
            "(`cltune show --json` lists them)")
