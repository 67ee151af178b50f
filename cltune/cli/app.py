"""The `cltune` command line: parse, call one library function, render with rich."""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import sys
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import TYPE_CHECKING, Annotated

import pyopencl as cl
import typer
from rich.console import Console
from rich.markup import escape

from cltune.cli.render import (
    progress_bar,
    render_bench,
    render_bench_cases,
    render_devices,
    render_kernel,
    render_shapes,
    render_show,
    render_sizes,
    render_verify,
)
from cltune.core.buckets import parse_counts
from cltune.core.ops import OPS
from cltune.opencl.errors import one_line

if TYPE_CHECKING:  # annotations only: importing it loads the tuner
    from cltune.cli.tune_modes import TuneRequest

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="Autotune OpenCL reductions, scans, sorts, histograms, top-k and your "
                  "own kernels, and keep the results in a database.")
out = Console()
err = Console(stderr=True)

DbOpt = Annotated[str | None, typer.Option(  # noqa: UP007 - typer needs Optional
    "--db", help="Results database: SQLAlchemy URL or file path (default: $CLTUNE_DB or the "
    "user data dir).", show_default=False)]


@contextmanager
def _errors() -> Iterator[None]:
    """Library errors become one line on stderr and exit code 1; never a traceback."""
    from cltune.cli.errors import LIBRARY_ERRORS  # lazy: loads device probing, the worker, db

    try:
        yield
    except (typer.Exit, typer.Abort):
        raise
    except LIBRARY_ERRORS as e:
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


def _service() -> ModuleType:
    """cltune.cli.service, whose functions the commands call (looked up at each call)."""
    from cltune.cli import service  # lazy: loads the tuner (optuna); `--help` needs none of it

    return service


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
    with _errors():
        rows, note = _service().devices_report(db, recheck)
    render_devices(rows, note, as_json, out, err)


@app.command()
def tune(
    device: Annotated[str, typer.Option(
        "--device", "-d", help="Index, P:D (as PYOPENCL_CTX) or name substring; several "
        "identical devices feed one study per class: 0,1,2,3, or `all` (every usable device "
        "with the first one's fingerprint).")] = "0",
    op: Annotated[str, typer.Option(
        help="sum, prod, min, max or dot; or a statistic of cltune.stats.api (argmin, argmax, "
        "mean, var, std, norm1, norm2, norm_inf, count_nonzero, any, all), tuned as an "
        "expression (sizes from --sizes, default 2^20; along axes with --axis); or sort: "
        "the radix passes' shape of cltune.sort/argsort/sort_by_key for --dtype keys over "
        "--sizes (default 2^20,2^24 on GPUs, 2^16,2^20 on CPUs).")] = "sum",
    dtype: Annotated[str, typer.Option(help="float32, float64, float16, int32, int64, uint32, "
                                       "uint64.")] = "float32",
    sizes: Annotated[str | None, typer.Option(  # noqa: UP007
        help="Size buckets, e.g. 2^12,2^16,2^20,2^24 (the default).")] = None,
    trials: Annotated[int | None, typer.Option(  # noqa: UP007
        min=1, help="Trials per bucket or shape (default 40; 12 with --axis/--segments, --many, "
        "--hist, --topk and --op sort; 8 with --scan; 30 with --kernel and the statistics, 20 "
        "a shape and axis along axes).")]
    = None,
    timeout: Annotated[float | None, typer.Option(  # noqa: UP007
        min=1, help="Seconds for the whole run (default 150; 300 with --axis/--segments; 120 "
        "with --many, --hist, --topk and --op sort (and a statistic along axes, a shape and "
        "axis); 180 with --scan, --kernel and the statistics).")]
    = None,
    axis: Annotated[str | None, typer.Option(  # noqa: UP007
        help="Tune reductions along an axis of 2-D arrays: 1 (rows, contiguous), 0 (columns, "
        "strided) or both (`--axis` alone).")] = None,
    segments: Annotated[bool, typer.Option(
        "--segments", help="Tune segmented (CSR) reductions.")] = False,
    kernel: Annotated[str | None, typer.Option(  # noqa: UP007
        help="Tune a cltune.ReductionKernel or cltune.GenericScanKernel given as "
        "module:attribute (its sample_args make the inputs; sizes from --sizes, default 2^20; "
        "a ReductionKernel with --axis along axes of 2-D inputs of --shapes).")] = None,
    many: Annotated[str | None, typer.Option(  # noqa: UP007
        help="Tune many reductions in one launch (r.many, cltune.norm_many; --op sum, prod, "
        "min, max or norm) for classes KxN: K arrays of about N elements, powers of two "
        "(e.g. 64x4096,16x65536).")] = None,
    hist: Annotated[str | None, typer.Option(  # noqa: UP007
        help="Tune histograms (cltune.bincount with --op bincount and an integer --dtype, "
        "cltune.histogram with --op histogram, or --op histogram_edges for given edges, and "
        "float32/float64) for classes NxB: about N elements in B bins, powers of two (e.g. "
        "1048576x256,16777216x4096).")] = None,
    topk: Annotated[str | None, typer.Option(  # noqa: UP007
        help="Tune top-k (cltune.topk, --dtype float32, float64 or an integer type; --op "
        "topk or left out) for classes NxK: the K largest of about N elements, powers of two "
        "(e.g. 16777216x8,16777216x1024).")] = None,
    weights: Annotated[str | None, typer.Option(  # noqa: UP007
        help="With --hist: tune the weighted sums (float32 or float64 weights; bincount's "
        "are float64).")] = None,
    workers: Annotated[int, typer.Option(
        min=1, max=64, help="Evaluation workers per device feeding each study (default 1).")]
    = 1,
    scan: Annotated[bool, typer.Option(
        "--scan", help="Tune prefix scans (cltune.cumsum & co., --op sum, prod, min or max) "
        "of whole arrays of --sizes (default 2^16,2^20,2^24) and along both axes of "
        "--shapes (or the --axis named).")] = False,
    shapes: Annotated[str | None, typer.Option(  # noqa: UP007
        help="Shapes for --axis (ROWSxCOLS, powers of two: 65536x256,16x1048576) or, with "
        "--segments, COUNTxMEANLENGTH; default: 2^20x16, 2^18x64, 2^16x256, 2^14x2^14 (a GiB "
        "of float32), 2^12x2^12, 16x2^20, 2^22x4, 2^24x2; segments 2^20x16, 2^16x256, "
        "2^12x2^12).")] = None,
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
        help="Optuna storage URL (default: $CLTUNE_STORAGE, else studies.db beside a SQLite "
        "results database, else in the user data dir).")]
    = None,
    t1: Annotated[str | None, typer.Option(  # noqa: UP007
        "--t1", help="Tune an application kernel described by a T1 problem file (Kernel "
        "Tuner's tune_kernel_T1 format) on --device.")] = None,
    t4: Annotated[str | None, typer.Option(  # noqa: UP007
        "--t4", help="With --t1: write the run's results as a T4 file.")] = None,
) -> None:
    """Tune a kernel family on one device (or identical devices) and store the best config
    per size bucket (or shape class).

    Example: cltune tune --device 0 --sizes 2^20,2^24 --trials 30;
    cltune tune --device 0 --axis (both axes of the default shapes);
    cltune tune --device 0 --axis 1 --shapes 65536x256,16x1048576;
    cltune tune --device 0 --segments; cltune tune --device 0 --kernel mymodule:knl;
    cltune tune --device 0 --kernel mymodule:knl --axis 0 --shapes 65536x256;
    cltune tune --device 0 --op var --sizes 2^20,2^24; cltune tune --device 0 --op argmax --axis 1;
    cltune tune --device 0 --many 64x4096 --op norm;
    cltune tune --device 0 --hist 16777216x256 --op bincount --dtype int32;
    cltune tune --device 0 --topk 16777216x8,16777216x1024 --dtype float32;
    cltune tune --device 0 --op sort --dtype float32 --sizes 2^20,2^24;
    cltune tune --device 0 --scan --sizes 2^20,2^24; cltune tune --device 0 --scan --axis 0;
    cltune tune --device 0,1,2,3 (or --device all): identical GPUs tune together;
    cltune tune --device 0 --t1 problem.json --t4 results.json (an application's kernel)
    """
    if t1 is not None:
        with _errors():
            done = _service().tune_t1(t1, device, db, t4)
        out.print(f"{done['kernel']}: {done['valid']} config(s) ran right, {done['failed']} "
                  f"failed; best {done['best']}" + (f"; T4 results in {t4}" if t4 else ""))
        return
    from cltune.cli import tune_modes  # lazy: loads the tuner (optuna) and the statistics

    req = tune_modes.TuneRequest(
        device=device, op=op, dtype=dtype, sizes=sizes, trials=trials, timeout=timeout,
        axis=axis, segments=segments, kernel=kernel, many=many, hist=hist, topk=topk,
        weights=weights,
        scan=scan, workers=workers,
        shapes=shapes, sampler=sampler,
        seed=seed, resume=resume, max_rel_error=max_rel_error, study=study, seeds=seeds, db=db,
        storage=storage)
    mode = _tune_mode(req, tune_modes.STATISTICS)
    parallel = "," in req.device or req.device.strip().lower() == "all" or req.workers > 1
    if parallel and mode in ("kernel", "statistic"):
        _fail("several devices (or --workers) tune the built-in kernels and scans; an "
              "expression (--kernel, a statistic) is tuned on one device")
    with _errors(), progress_bar(err) as progress:
        info, runs = tune_modes.MODES[mode](req, progress)
    if _RENDER_TUNED[mode](info, runs, out, err):
        raise typer.Exit(code=1)


#: how each mode's results are drawn; each returns True when a class has no validated config
_RENDER_TUNED = {"sizes": render_sizes, "shapes": render_shapes, "kernel": render_kernel,
                 "statistic": render_kernel, "many": render_shapes, "scan": render_shapes,
                 "hist": render_shapes, "topk": render_shapes, "sort": render_sizes}


def _tune_mode(req: TuneRequest, statistics: tuple[str, ...]) -> str:
    """Which of `cltune tune`'s modes (tune_modes.MODES) the options pick; options that
    contradict each other are one error line."""
    if req.scan:
        if req.op not in ("sum", "prod", "min", "max"):
            _fail(f"--scan tunes sum, prod, min or max scans, not {req.op!r:.30}")
        if req.many is not None or req.segments or req.kernel is not None \
                or req.hist is not None or req.topk is not None:
            _fail("--scan goes alone (with --sizes, --axis and --shapes; not with --many, "
                  "--hist, --topk, --segments or --kernel)")
        return "scan"
    if req.topk is not None:
        if req.op not in ("sum", "topk"):  # sum: --op's default, left out
            _fail(f"--topk tunes top-k (--op topk or none), not {req.op!r:.30}")
        if req.many is not None or req.axis is not None or req.segments \
                or req.kernel is not None or req.hist is not None or req.weights is not None:
            _fail("--topk goes alone (not with --many, --hist, --weights, --axis, --segments "
                  "or --kernel)")
        return "topk"
    if req.hist is not None:
        if req.op not in ("bincount", "histogram", "histogram_edges"):
            _fail(f"--hist tunes bincount, histogram or histogram_edges (--op), not "
                  f"{req.op!r:.30}")
        if req.many is not None or req.axis is not None or req.segments \
                or req.kernel is not None:
            _fail("--hist goes alone (not with --many, --axis, --segments or --kernel)")
        return "hist"
    if req.weights is not None:
        _fail("--weights goes with --hist")
    if req.many is not None:
        if req.op not in ("sum", "prod", "min", "max", "norm"):
            _fail(f"--many tunes sum, prod, min, max or norm, not {req.op!r:.30}")
        if req.axis is not None or req.segments or req.kernel is not None:
            _fail("--many goes alone (not with --axis, --segments or --kernel)")
        return "many"
    if req.op == "sort":
        if req.axis is not None or req.segments or req.kernel is not None \
                or req.shapes is not None:
            _fail("--op sort tunes whole-array sorts over --sizes (not with --axis, --shapes, "
                  "--segments or --kernel)")
        return "sort"
    if req.op not in OPS and req.op not in statistics:
        _fail(f"unknown op {req.op!r:.30}; choose one of {', '.join(OPS)}, or a statistic: "
              f"{', '.join(statistics)}")
    if req.op in statistics:
        if req.kernel is not None:
            _fail(f"--op {req.op} and --kernel name two kernels: give one")
        if req.segments:
            _fail(f"--segments tunes the built-in ops (sum, prod, min, max); {req.op} is tuned "
                  "whole (--sizes) or along an --axis (--shapes)")
        return "statistic"
    if req.kernel is not None:
        if req.segments:
            _fail("--segments tunes the built-in ops (sum, prod, min, max); a --kernel is "
                  "tuned whole (--sizes) or along an --axis (--shapes)")
        return "kernel"
    if req.axis is not None or req.segments:
        return "shapes"
    if req.shapes is not None:
        _fail("--shapes goes with --axis or --segments (sizes of 1-D reductions: --sizes)")
    return "sizes"


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
    with _errors():
        service = _service()
        rows = service.show(db, device)
        answers = []
        if device is not None:
            variants = sorted({r.variant for r in rows if r.family == "reduce"})
            answers = [(v, service.explain_device(db, device, v)[1])
                       for v in variants or ["sum/float32"]]
    render_show(rows, answers, device, as_json, out)


@app.command("export")
def export_cmd(
    output: Annotated[str, typer.Option("--output", "-o", help="JSON file to write.")],
    device: Annotated[str | None, typer.Option(  # noqa: UP007
        "--device", "-d", help="Only this device (index, P:D or name).")] = None,
    fmt: Annotated[str, typer.Option(
        "--format", help="cltune (every family, to share or ship) or kernel-tuner (an "
        "application kernel's bests as Kernel Tuner's store_results file).")] = "cltune",
    kernel: Annotated[str | None, typer.Option(  # noqa: UP007
        "--kernel", help="With --format kernel-tuner: the kernel's name.")] = None,
    db: DbOpt = None,
) -> None:
    """Export the best configs as a versioned JSON file (to share or ship).

    Example: cltune export --device 0 -o results.json;
    cltune export --format kernel-tuner --kernel vector_add -o vector_add.json
    """
    with _errors():
        if fmt == "kernel-tuner":
            n = _service().export_kernel_tuner(db, device, kernel, output)
        elif fmt == "cltune":
            n = _service().export(db, device, output)
        else:
            raise ValueError(f"--format {fmt!r:.30}: choose cltune or kernel-tuner")
    out.print(f"exported {n} best result(s) to {output}")


@app.command("import")
def import_cmd(
    path: Annotated[str, typer.Argument(
        help="A file written by `cltune export`, or a Kernel Tuner cache file.")],
    kernel_source: Annotated[str | None, typer.Option(  # noqa: UP007
        "--kernel-source", help="A Kernel Tuner cache file's kernel (its source names it in "
        "the database).")] = None,
    device: Annotated[str | None, typer.Option(  # noqa: UP007
        "--device", "-d", help="A Kernel Tuner cache file's device (default: the device of "
        "the name in the file).")] = None,
    compiler_option: Annotated[list[str] | None, typer.Option(  # noqa: UP007
        "--compiler-option", help="A compiler option the cache file's kernel was built with "
        "(repeat for several).")] = None,
    db: DbOpt = None,
) -> None:
    """Import results: every field is validated first; one bad field rejects the whole file.

    Example: cltune import results.json; cltune import kt_cache.json --kernel-source kernel.cl
    """
    with _errors():
        rep = _service().import_file(db, path, kernel_source, device,
                                     tuple(compiler_option or ()))
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
    with _errors():
        service = _service()
        info, rows = service.verify(db, device, op, dtype)
        skipped = service.not_reverified(db, device)
    if render_verify(info, rows, skipped, out):
        raise typer.Exit(code=1)


@app.command()
def bench(
    device: Annotated[str, typer.Option("--device", "-d", help="Index, P:D or name.")] = "0",
    op: Annotated[str, typer.Option(
        help="sum, prod, min or max; or a statistic (argmin, argmax, mean, var, std, norm, "
        "count_nonzero, any, all), whole (--sizes) or along --axis; or a scan (cumsum, "
        "cumprod, cummax, cummin) against the copy ceiling, numpy, pyopencl and torch; or a "
        "histogram (bincount with an integer --dtype, histogram) in --bins bins; or topk "
        "(the --k largest of --sizes, or along the rows of --shapes); or sort (--sizes, or "
        "the rows of --shapes); or compaction (copy_if, nonzero) of --sizes.")]
    = "sum",
    dtype: Annotated[str, typer.Option(help="float32, float64, float16, int32, int64, uint32, "
                                       "uint64.")] = "float32",
    sizes: Annotated[str | None, typer.Option(  # noqa: UP007
        help="Sizes, e.g. 2^12,2^20,1000003,2^24+7,3e6 (any count; default 2^12,2^16,2^20,2^24); "
        "with --many "
        "the length of each array (default 2^12).")] = None,
    axis: Annotated[str | None, typer.Option(  # noqa: UP007
        help="Reduce 2-D arrays of --shapes along axis 1 (rows), 0 (columns) or both: "
        "r(x, axis=k) against numpy.<op>(h, axis=k) (and torch).")] = None,
    segments: Annotated[bool, typer.Option(
        "--segments", help="Segmented (CSR) reductions r.segments(x, offsets) of --shapes "
        "MxN (M segments of about N elements) against numpy's reduceat (and torch).")] = False,
    shapes: Annotated[str | None, typer.Option(  # noqa: UP007
        help="RxC[,RxC...] for --axis (e.g. 4096x4096,65536x256,3000x5000) or MxN for "
        "--segments.")] = None,
    many: Annotated[int | None, typer.Option(  # noqa: UP007
        min=1, help="K arrays of each of --sizes in one launch: r.many (norm: "
        "cltune.norm_many) against K cltune calls, numpy, pyopencl (and torch).")] = None,
    bins: Annotated[str | None, typer.Option(  # noqa: UP007
        help="With --op bincount or histogram: bin counts, e.g. 256,4096 (the default).")]
    = None,
    k: Annotated[str | None, typer.Option(  # noqa: UP007
        "--k", help="With --op topk: how many of the largest, e.g. 10,1000 (the default).")]
    = None,
    repeats: Annotated[int, typer.Option(min=1, help="Interleaved samples per contender.")]
    = 9,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON (with every sample).")]
    = False,
    plot: Annotated[str | None, typer.Option(  # noqa: UP007
        help="Write a PNG of GB/s against n here (needs matplotlib; 1-D sizes only).")] = None,
    db: DbOpt = None,
) -> None:
    """Benchmark the tuned reduction against numpy, pyopencl, the builtin config, a streaming
    read ceiling (and torch on CUDA devices), interleaved in one process, results validated;
    also statistics, along an axis, over segments and many arrays in one launch.

    Example: cltune bench --device 0 --sizes 2^20,2^24 --plot bench.png;
    cltune bench --device 0 --axis 0 --shapes 4096x4096,65536x256;
    cltune bench --device 0 --segments --shapes 65536x256; cltune bench --device 0 --op var;
    cltune bench --device 0 --op argmax --axis 1 --shapes 65536x256;
    cltune bench --device 0 --many 64 --sizes 2^12 --op norm;
    cltune bench --device 0 --op cumsum --sizes 2^20,2^24 (or --axis both --shapes 4096x4096);
    cltune bench --device 0 --op bincount --dtype int32 --sizes 2^24 --bins 256,4096;
    cltune bench --device 0 --op topk --sizes 2^24 --k 10,1000 (rows: --shapes 4096x4096);
    cltune bench --device 0 --op copy_if --sizes 2^20,2^24 (or --op nonzero);
    cltune bench --device 0 --op sort --sizes 2^20,2^24 (rows: --shapes 4096x4096)
    """
    from cltune.cli import bench as benchmark  # lazy: loads pyopencl.array and the runtime
    from cltune.cli import bench_modes  # lazy: loads the statistics

    req = bench_modes.BenchRequest(op=op, dtype=dtype, sizes=sizes, repeats=repeats, axis=axis,
                                   segments=segments, shapes=shapes, many=many, plot=plot,
                                   db=db, bins=bins, k=k)
    with _errors():
        mode = bench_modes.mode_of(req)
        if plot:
            benchmark.require_matplotlib()
        if mode == "sizes":
            report = _service().bench(device, op, dtype, list(parse_counts(
                sizes or bench_modes.DEFAULT_SIZES)), repeats, db)
        else:
            report = _service().bench_mode(device, req)
        if plot:
            benchmark.plot(report, plot)
    if as_json:
        out.print_json(json.dumps(dataclasses.asdict(report)))
    else:
        (render_bench if mode == "sizes" else render_bench_cases)(report, out, err)
    for note in report.notes:
        err.print(f"note: {note}", highlight=False)
    if plot:
        err.print(f"plot written to {plot}", highlight=False)
    if report.any_wrong():
        raise typer.Exit(code=1)


@app.command()
def migrate(db: DbOpt = None,
            rebuild_tally: Annotated[bool, typer.Option(
                help="Also recount the vendor tally from the stored results (a repair).")]
            = False) -> None:
    """Create the database or migrate it to this cltune's schema version.

    Example: cltune migrate --db ~/.local/share/cltune/tuning.db
    """
    with _errors():
        v, tally = _service().migrate(db, rebuild_tally)
    out.print(f"database schema is at version {v}")
    if tally is not None:
        out.print(f"vendor tally rebuilt: {tally[0]} rows, {tally[1]} differed from the stored "
                  "tally")


def _axis_alone(argv: list[str]) -> None:
    """`--axis` with no value means both axes (click options cannot take an optional value)."""
    for i, a in enumerate(argv):
        if a == "--axis" and (i + 1 == len(argv) or argv[i + 1].startswith("-")):
            argv.insert(i + 1, "both")
            return


def main() -> None:
    """The console script: process-wide logging and warning setup happens here, never on
    import of a library module."""
    # compiler chatter ("Non-empty compiler output") and Optuna's per-trial log lines are not
    # for the command line's user (the progress bar shows the trials)
    warnings.filterwarnings("ignore", category=cl.CompilerWarning)
    _axis_alone(sys.argv)
    logging.getLogger("optuna").setLevel(logging.WARNING)
    logging.getLogger("optuna").propagate = False
    try:
        import optuna  # lazy: slow to import; only the console script quiets it

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
