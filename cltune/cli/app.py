"""The `cltune` command line: parse, call one library function, render with rich."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Annotated

import pyopencl as cl
import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from cltune.cli.render import RichProgress, driver_failures, render_bench
from cltune.opencl.errors import one_line

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="Autotune OpenCL reductions and keep the results in a database.")
out = Console()
err = Console(stderr=True)

DbOpt = Annotated[str | None, typer.Option(  # noqa: UP007 - typer needs Optional
    "--db", help="Results database: SQLAlchemy URL or file path (default: $CLTUNE_DB or the "
    "user data dir).", show_default=False)]


@contextmanager
def _errors() -> Iterator[None]:
    """Library errors become one line on stderr and exit code 1; never a traceback."""
    from cltune.core.ops import OpError
    from cltune.device.select import DeviceError
    from cltune.families.reduce.config import ConfigError
    from cltune.isolation.vetting import NoConfigRuns
    from cltune.isolation.worker import WorkerFailure
    from cltune.opencl.build import BuildError
    from cltune.tuning_db import DatabaseError
    from cltune.tuning_db.exchange import ImportError_

    try:
        yield
    except (typer.Exit, typer.Abort):
        raise
    except (DeviceError, DatabaseError, ConfigError, OpError, BuildError, ImportError_,
            ValueError, OSError, ImportError, cl.Error, WorkerFailure, NoConfigRuns) as e:
        _fail(one_line(e))
    except KeyboardInterrupt:
        err.print("interrupted")
        raise typer.Exit(code=130) from None
    except Exception as e:  # noqa: BLE001 - a bug of ours: still one line, traceback on request
        if os.environ.get("CLTUNE_DEBUG"):
            raise
        _fail(f"internal error ({type(e).__name__}: {one_line(e)}); please report it "
              "(CLTUNE_DEBUG=1 shows the traceback)")


def _fail(msg: str) -> None:
    err.print(f"[bold red]error:[/] {escape(' '.join(msg.split()))}", highlight=False,
              soft_wrap=True)
    raise typer.Exit(code=1) from None


@app.command()
def devices(as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
            recheck: Annotated[bool, typer.Option(
                help="Probe every device again instead of trusting the cached verdicts.")]
            = False,
            db: DbOpt = None) -> None:
    """List OpenCL devices: status (ok; restricted, with what is excluded and why; or unusable,
    with the driver's message and the fix), capabilities, fingerprints and whether they are
    tuned. Working devices come first, then restricted ones, then unusable ones.

    Example: cltune devices --recheck
    """
    from cltune.cli.service import devices_report

    with _errors():
        rows, note = devices_report(db, recheck)
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


@app.command()
def tune(
    device: Annotated[str, typer.Option(
        "--device", "-d", help="Index, P:D (as PYOPENCL_CTX) or name substring.")] = "0",
    op: Annotated[str, typer.Option(
        help="sum, prod, min, max or dot; or a statistic of cltune.stats.api (argmin, argmax, "
        "mean, var, std, norm1, norm2, norm_inf, count_nonzero, any, all), tuned as an "
        "expression (sizes from --sizes, default 2^20; along axes with --axis).")] = "sum",
    dtype: Annotated[str, typer.Option(help="float32, float64, float16, int32, int64, uint32, "
                                       "uint64.")] = "float32",
    sizes: Annotated[str | None, typer.Option(  # noqa: UP007
        help="Size buckets, e.g. 2^12,2^16,2^20,2^24 (the default).")] = None,
    trials: Annotated[int | None, typer.Option(  # noqa: UP007
        min=1, help="Trials per bucket or shape (default 40; 12 with --axis/--segments).")]
    = None,
    timeout: Annotated[float | None, typer.Option(  # noqa: UP007
        min=1, help="Seconds for the whole run (default 150; 300 with --axis/--segments).")]
    = None,
    axis: Annotated[str | None, typer.Option(  # noqa: UP007
        help="Tune reductions along an axis of 2-D arrays: 1 (rows, contiguous), 0 (columns, "
        "strided) or both (`--axis` alone).")] = None,
    segments: Annotated[bool, typer.Option(
        "--segments", help="Tune segmented (CSR) reductions.")] = False,
    kernel: Annotated[str | None, typer.Option(  # noqa: UP007
        help="Tune a cltune.ReductionKernel given as module:attribute (its sample_args make "
        "the inputs; sizes from --sizes, default 2^20; with --axis along axes of 2-D inputs "
        "of --shapes).")] = None,
    shapes: Annotated[str | None, typer.Option(  # noqa: UP007
        help="Shapes for --axis (ROWSxCOLS, powers of two: 65536x256,16x1048576) or, with "
        "--segments, COUNTxMEANLENGTH; default: a set of 2^24-element shapes.")] = None,
    sampler: Annotated[str, typer.Option(help="tpe, random or grid.")] = "tpe",
    seed: Annotated[int, typer.Option(help="Sampler seed.")] = 0,
    resume: Annotated[bool, typer.Option(help="Continue the stored studies.")] = False,
    max_rel_error: Annotated[float | None, typer.Option(  # noqa: UP007
        help="Error budget relative to sum|x|; also offers kahan/wide accumulators.")] = None,
    study: Annotated[str, typer.Option(help="Study name prefix (shared by workers).")] = "cltune",
    seeds: Annotated[bool, typer.Option(
        help="Start new studies from known configs (stored/shipped best, previous bucket's "
        "winner, builtin).")] = True,
    db: DbOpt = None,
    storage: Annotated[str | None, typer.Option(  # noqa: UP007
        help="Optuna storage URL (default: $CLTUNE_STORAGE or studies.db beside the results).")]
    = None,
) -> None:
    """Tune reductions on one device and store the best config per size bucket (or shape).

    Example: cltune tune --device 0 --sizes 2^20,2^24 --trials 30;
    cltune tune --device 0 --axis (both axes of the default shapes);
    cltune tune --device 0 --axis 1 --shapes 65536x256,16x1048576;
    cltune tune --device 0 --segments; cltune tune --device 0 --kernel mymodule:knl;
    cltune tune --device 0 --kernel mymodule:knl --axis 0 --shapes 65536x256;
    cltune tune --device 0 --op var --sizes 2^20,2^24; cltune tune --device 0 --op argmax --axis 1
    """
    from cltune.cli import tune as cli_tune
    from cltune.core.ops import OPS
    from cltune.stats.api import OPS as STATS

    label = kernel
    if op not in OPS and op not in STATS:
        _fail(f"unknown op {op!r:.30}; choose one of {', '.join(OPS)}, or a statistic: "
              f"{', '.join(STATS)}")
    if op in STATS:
        if kernel is not None:
            _fail(f"--op {op} and --kernel name two kernels: give one")
        if segments:
            _fail(f"--segments tunes the built-in ops (sum, prod, min, max); {op} is tuned "
                  "whole (--sizes) or along an --axis (--shapes)")
        with _errors():
            label, kernel = cli_tune.stats_kernel(device, op, dtype)
    if kernel is not None:
        if segments:
            _fail("--segments tunes the built-in ops (sum, prod, min, max); a --kernel is "
                  "tuned whole (--sizes) or along an --axis (--shapes)")
        with _errors():
            if axis is not None:
                info, res = cli_tune.run_kernel_axis(device, kernel, axis, shapes, trials or 20,
                                                     timeout or 120.0, seed, db, storage, err)
            else:
                info, res = cli_tune.run_kernel(device, kernel, sizes, trials or 30,
                                                timeout or 180.0, seed, db, storage, err)
        if cli_tune.render_kernel(info, label, res, out):
            raise typer.Exit(code=1)
        return
    if axis is not None or segments:
        with _errors():
            info, runs = cli_tune.run_axis(device, op, dtype, axis, segments, shapes,
                                           trials or 12, timeout or 300.0, sampler, seed,
                                           resume, study, seeds, db, storage, err)
        if cli_tune.render_axis(info, runs, out, err):
            raise typer.Exit(code=1)
        return
    if shapes is not None:
        _fail("--shapes goes with --axis or --segments (sizes of 1-D reductions: --sizes)")
    trials = trials or 40
    timeout = timeout or 150.0
    from cltune.cli.service import tune as run_tune
    from cltune.core.buckets import DEFAULT_BUCKETS, parse_sizes
    from cltune.tuning.tuner import SAMPLERS, TuneOptions

    with _errors():
        if sampler not in SAMPLERS:
            raise ValueError(f"unknown sampler {sampler!r}; choose one of {', '.join(SAMPLERS)}")
        opts = TuneOptions(op=op, dtype=dtype,
                           buckets=parse_sizes(sizes) if sizes else DEFAULT_BUCKETS,
                           trials=trials, timeout_s=timeout, sampler=sampler, seed=seed,
                           resume=resume, study_prefix=study, max_rel_error=max_rel_error,
                           seeds=seeds)
        prog = RichProgress(err)
        try:
            info, results = run_tune(device, opts, db, storage, prog)
        finally:
            prog.stop()
    t = Table(title=f"best on {info.name} ({op}/{dtype})")
    for c in ("bucket", "GB/s", "device time", "per call", "vs builtin", "config", "trials",
              "rejected"):
        t.add_column(c)
    for r in results:
        t.add_row(r.size_class, f"{r.gbps:.1f}" if r.gbps else "-",
                  f"{r.median_s * 1e6:.1f} µs" if r.median_s else "-",
                  f"{r.per_call_s * 1e6:.1f} µs" if r.per_call_s else "-",
                  f"{r.vs_builtin:.2f}x" if r.vs_builtin else "-",
                  r.config.short() if r.config else "no config validated",
                  str(r.trials), str(r.failed + r.pruned))
    out.print(t)
    if driver_failures(results):
        err.print(driver_failures(results), highlight=False)
    for r in results:
        if r.config is None:
            err.print(f"{r.size_class}: no config validated ({r.failed + r.pruned} rejected; "
                      "`cltune show --json` lists the reasons)", highlight=False)
    if any(r.config is None for r in results):
        raise typer.Exit(code=1)


@app.command()
def show(
    device: Annotated[str | None, typer.Option(  # noqa: UP007
        "--device", "-d", help="Only this device (index, P:D or name).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    db: DbOpt = None,
) -> None:
    """Show the best stored config per device, kernel family, variant (op/dtype) and size.

    Example: cltune show --device 0
    """
    from cltune.cli.service import explain_device
    from cltune.cli.service import show as run_show

    with _errors():
        rows = run_show(db, device)
        answers = []
        if device is not None:
            variants = sorted({r.variant for r in rows if r.family == "reduce"})
            answers = [(v, explain_device(db, device, v)[1]) for v in variants or ["sum/float32"]]
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


@app.command("export")
def export_cmd(
    output: Annotated[str, typer.Option("--output", "-o", help="JSON file to write.")],
    device: Annotated[str | None, typer.Option(  # noqa: UP007
        "--device", "-d", help="Only this device (index, P:D or name).")] = None,
    db: DbOpt = None,
) -> None:
    """Export the best configs as a versioned JSON file (to share or ship).

    Example: cltune export --device 0 -o results.json
    """
    from cltune.cli.service import export

    with _errors():
        n = export(db, device, output)
    out.print(f"exported {n} best result(s) to {output}")


@app.command("import")
def import_cmd(
    path: Annotated[str, typer.Argument(help="A file written by `cltune export`.")],
    db: DbOpt = None,
) -> None:
    """Import results: every field is validated first; one bad field rejects the whole file.

    Example: cltune import results.json
    """
    from cltune.cli.service import import_file

    with _errors():
        rep = import_file(db, path)
    out.print(f"imported {rep.records} record(s): {rep.devices_added} new device(s), "
              f"{rep.results_added} new result(s), {rep.bests_changed} best(s) changed")


@app.command()
def verify(
    device: Annotated[str, typer.Option("--device", "-d", help="Index, P:D or name.")] = "0",
    op: Annotated[str | None, typer.Option(help="Only this op.")] = None,  # noqa: UP007
    dtype: Annotated[str | None, typer.Option(help="Only this dtype.")] = None,  # noqa: UP007
    db: DbOpt = None,
) -> None:
    """Re-validate and re-time stored configs on the current driver; failing ones are marked
    and replaced by the next best that passes.

    Example: cltune verify --device 0
    """
    from cltune.cli.service import not_reverified
    from cltune.cli.service import verify as run_verify

    with _errors():
        info, rows = run_verify(db, device, op, dtype)
        skipped = not_reverified(db, device)
    for fam, n in skipped.items():
        out.print(f"[dim]{n} stored {fam} result(s) not re-run: an expression's code is the "
                  "application's and is not stored (its fingerprint is); re-validate them "
                  "with knl.tune(...)[/]")
    if not rows:
        out.print(f"nothing stored for {info.name} (nor its hardware or model)")
        return
    t = Table(title=f"verified on {info.name} (driver {info.driver})")
    for c in ("variant", "size", "from", "now serving", "GB/s", "failed"):
        t.add_column(c)
    for r in rows:
        t.add_row(r.variant, r.size_class, r.source_level,
                  r.config.short() if r.config else "[red]none passes[/]",
                  f"{r.gbps:.1f}" if r.gbps else "-", "; ".join(r.failed) or "-")
    out.print(t)
    if any(r.config is None for r in rows):
        raise typer.Exit(code=1)


@app.command()
def bench(
    device: Annotated[str, typer.Option("--device", "-d", help="Index, P:D or name.")] = "0",
    op: Annotated[str, typer.Option(help="sum, prod, min or max.")] = "sum",
    dtype: Annotated[str, typer.Option(help="float32, float64, float16, int32, int64, uint32, "
                                       "uint64.")] = "float32",
    sizes: Annotated[str, typer.Option(help="Sizes, e.g. 2^12,2^20 (powers of two).")]
    = "2^12,2^16,2^20,2^24",
    repeats: Annotated[int, typer.Option(min=1, help="Interleaved samples per contender.")]
    = 9,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON (with every sample).")]
    = False,
    plot: Annotated[str | None, typer.Option(  # noqa: UP007
        help="Write a PNG of GB/s against n here (needs matplotlib).")] = None,
    db: DbOpt = None,
) -> None:
    """Benchmark the tuned reduction against numpy, pyopencl, the builtin config, a streaming
    read ceiling (and torch on CUDA devices), interleaved in one process, results validated.

    Example: cltune bench --device 0 --sizes 2^20,2^24 --plot bench.png
    """
    import dataclasses

    from cltune.cli.bench import plot as write_plot
    from cltune.cli.bench import require_matplotlib
    from cltune.cli.service import bench as run_bench
    from cltune.core.buckets import parse_sizes

    with _errors():
        if plot:
            require_matplotlib()
        report = run_bench(device, op, dtype, [1 << b for b in parse_sizes(sizes)], repeats, db)
        if plot:
            write_plot(report, plot)
    if as_json:
        out.print_json(json.dumps(dataclasses.asdict(report)))
    else:
        render_bench(report, out, err)
    for note in report.notes:
        err.print(f"note: {note}", highlight=False)
    if plot:
        err.print(f"plot written to {plot}", highlight=False)
    if any(s.wrong for s in report.sizes):
        raise typer.Exit(code=1)


@app.command()
def migrate(db: DbOpt = None,
            rebuild_tally: Annotated[bool, typer.Option(
                help="Also recount the vendor tally from the stored results (a repair).")]
            = False) -> None:
    """Create the database or migrate it to this cltune's schema version.

    Example: cltune migrate --db ~/.local/share/cltune/tuning.db
    """
    from cltune.cli.service import migrate as run_migrate

    with _errors():
        v, tally = run_migrate(db, rebuild_tally)
    out.print(f"database schema is at version {v}")
    if tally is not None:
        out.print(f"vendor tally rebuilt: {tally[0]} rows, {tally[1]} differed from the stored "
                  "tally")


def _cfg_text(family: str, cfg: dict) -> str:
    from cltune.core.family import get

    try:
        return get(family).parse_config(cfg).short()
    except (KeyError, ValueError):
        return escape(json.dumps(cfg, sort_keys=True))


def _axis_alone(argv: list[str]) -> None:
    """`--axis` with no value means both axes (click options cannot take an optional value)."""
    for i, a in enumerate(argv):
        if a == "--axis" and (i + 1 == len(argv) or argv[i + 1].startswith("-")):
            argv.insert(i + 1, "both")
            return


def main() -> None:
    """The console script: process-wide logging and warning setup happens here, never on
    import of a library module."""
    import logging
    import warnings

    # compiler chatter ("Non-empty compiler output") and Optuna's per-trial log lines are not
    # for the command line's user (the progress bar shows the trials)
    warnings.filterwarnings("ignore", category=cl.CompilerWarning)
    _axis_alone(sys.argv)
    logging.getLogger("optuna").setLevel(logging.WARNING)
    logging.getLogger("optuna").propagate = False
    try:
        import optuna

        optuna.logging.set_verbosity(optuna.logging.WARNING)  # its import sets INFO
        warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    except ImportError:  # pragma: no cover - optuna is a dependency
        pass
    app()


COMMANDS: dict[str, Callable] = {"devices": devices, "tune": tune, "show": show,
                                 "verify": verify, "export": export_cmd, "import": import_cmd,
                                 "bench": bench, "migrate": migrate}

if __name__ == "__main__":
    sys.exit(main())
