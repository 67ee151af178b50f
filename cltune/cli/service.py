"""What the CLI commands do, as library functions returning plain data (the CLI only renders).
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

import pyopencl as cl

from cltune.cli.bench import Report, run_benchmark
from cltune.cli.bench_cases import ModeReport
from cltune.cli.bench_modes import BenchRequest, run_mode
from cltune.core.ops import DTYPES, OPS, OpSpec
from cltune.device.health import Health
from cltune.device.info import DeviceInfo
from cltune.device.select import device_health, list_devices, select, select_many
from cltune.families.axis import family as axis_family
from cltune.families.hist import family as hist_family
from cltune.families.many import family as many_family
from cltune.families.reduce import family as reduce_family
from cltune.families.reduce.kernel import kernel_subgroup_size
from cltune.families.scan import family as scan_family
from cltune.families.scan import sort_family
from cltune.families.topk import family as topk_family
from cltune.tuning.parallel import ParallelTuner
from cltune.tuning.reverify import verify_device
from cltune.tuning.tuner import BucketResult, Progress, TuneOptions, Tuner
from cltune.tuning_db import DatabaseError, Store, default_storage_url
from cltune.tuning_db.exchange import export_doc, read_import_file
from cltune.tuning_db.lookup import DeviceKey, lookup
from cltune.tuning_db.migrations import LATEST
from cltune.user import cachefile, interop, t1
from cltune.user import family as user_family
from cltune.user.tune import tune_kernel


@dataclass(frozen=True)
class DeviceRow:
    info: DeviceInfo
    subgroup_size: int
    tuned: bool
    health: Health


def devices_report(db: str | None, recheck: bool = False) -> tuple[list[DeviceRow], str]:
    """Every device with its health, subgroup size and whether the database holds results for
    it; `recheck` probes every device again. The second item is a note when the database could
    not be read ('' otherwise)."""
    note = ""
    tuned: set[str] = set()
    try:
        store = Store.open(db, readonly=True)
        try:
            tuned = store.fingerprints_tuned()
        finally:
            store.close()
    except DatabaseError as e:
        note = str(e)
    rows = []
    for info in list_devices(recheck=recheck):
        sg = 0
        h = device_health(info)
        if info.subgroups and h.ok:
            dev = info.cl_device()
            try:
                sg = kernel_subgroup_size(cl.Context([dev]), dev, info, min(64, info.max_wg))
            except cl.Error:
                sg = 0
        rows.append(DeviceRow(info, sg, info.fingerprint in tuned, h))
    return rows, note


def _tuner(devices: list[tuple[DeviceInfo, cl.Device]], ctx: cl.Context | None, store,  # noqa: ANN001
           storage: str | None, opts: TuneOptions, progress: Progress | None,
           workers: int) -> Tuner | ParallelTuner:
    """One device's Tuner, or a ParallelTuner over several devices / workers."""
    url = storage or default_storage_url(store.url)
    if len(devices) == 1 and workers == 1:
        info, dev = devices[0]
        return Tuner(ctx or cl.Context([dev]), dev, info, store, url, opts, progress)
    return ParallelTuner([(d, i) for i, d in devices], store, url, opts, progress, workers)


def tune(selector: str, opts: TuneOptions, db: str | None, storage: str | None,
         progress: Progress | None = None, workers: int = 1,
         ) -> tuple[DeviceInfo, list[BucketResult]]:
    """Tune `opts` on the selected device(s) (`0,1`, `all`: identical devices feeding one
    study per class, `workers` per device); store the bests. Returns (the first device's info,
    the results, one per size class)."""
    devices = select_many(selector)
    store = Store.open(db)
    try:
        return devices[0][0], _tuner(devices, None, store, storage, opts, progress,
                                     workers).run()
    finally:
        store.close()


def axis_variants(op: str, dtype: str, axis: str | None, segments: bool) -> list[str]:
    """The axis family's variants a `cltune tune --axis/--segments` run tunes: axis 1 is the
    contiguous (rows) layout of a 2-D C array, axis 0 the strided (cols) one."""
    if axis not in (None, "0", "1", "both"):
        raise ValueError(f"--axis takes 0, 1 or both, not {axis!r:.20}")
    kinds = {"1": ["rows"], "0": ["cols"], "both": ["rows", "cols"], None: []}[axis]
    kinds += ["segs"] if segments else []
    OpSpec(op, dtype)  # a clear error for an unknown op or dtype
    if segments and op == "dot":
        raise ValueError("segments have no dot (multiply first, then sum)")
    return [f"{op}/{dtype}/{k}" for k in kinds]


def tune_axis(selector: str, variants: list[str], shapes: tuple | None, opts: TuneOptions,
              db: str | None, storage: str | None, progress: Progress | None = None,
              workers: int = 1) -> tuple[DeviceInfo, list[tuple[str, list[BucketResult]]]]:
    """Tune the axis family's variants over shapes (log2 pairs; default: the family's shape
    set, for segments its segment classes); the time budget is shared by all classes."""
    devices = select_many(selector)
    info, dev = devices[0]
    plan = [(v, shapes or (axis_family.DEFAULT_SEGMENTS if v.endswith("/segs")
                           else axis_family.DEFAULT_SHAPES)) for v in variants]
    total = sum(len(s) for _, s in plan)
    store = Store.open(db)
    out = []
    try:
        ctx = cl.Context([dev])
        for v, keys in plan:
            o = replace(opts, family="axis", variant=v, buckets=tuple(keys),
                        timeout_s=opts.timeout_s * len(keys) / total)
            out.append((v, _tuner(devices, ctx, store, storage, o, progress, workers).run()))
    finally:
        store.close()
    return info, out


def tune_family(selector: str, family: str, variants: list[str], keys: tuple,
                opts: TuneOptions, db: str | None, storage: str | None,
                progress: Progress | None = None, workers: int = 1,
                ) -> tuple[DeviceInfo, list[tuple[str, list[BucketResult]]]]:
    """Tune variants of any family over its size keys (the budget shared by all classes)."""
    devices = select_many(selector)
    info, dev = devices[0]
    store = Store.open(db)
    out = []
    try:
        ctx = cl.Context([dev])
        for v in variants:
            o = replace(opts, family=family, variant=v, buckets=tuple(keys),
                        timeout_s=opts.timeout_s / len(variants))
            out.append((v, _tuner(devices, ctx, store, storage, o, progress, workers).run()))
    finally:
        store.close()
    return info, out


def show(db: str | None, selector: str | None):  # noqa: ANN201 - list of ResultRow
    """Best results, optionally of one device (selector as for `--device`)."""
    info = select(selector)[0] if selector is not None else None
    store = Store.open(db, readonly=True)
    try:
        ids = store.device_ids(**({"fingerprint": info.fingerprint} if info else {}))
        return store.bests(ids)
    finally:
        store.close()


def explain_device(db: str | None, selector: str, variant: str):  # noqa: ANN201
    """Which fallback level answers for this device, and why (as get_reducer would see it)."""
    info, _ = select(selector)
    key = DeviceKey(info.fingerprint, info.hardware_key, info.model, info.vendor, info.type,
                    info.driver)
    store = Store.open(db, readonly=True)
    try:
        return info, lookup(store, key, reduce_family.NAME, variant)
    finally:
        store.close()


def tune_t1(path: str, selector: str, db: str | None, t4: str | None) -> dict:
    """Run a T1 problem file on the selected device; a summary (and the T4 file)."""
    kw = t1.read_t1(path)
    _, dev = select(selector)
    results, env = tune_kernel(**kw, device=dev, db=db, quiet=True)
    if t4 is not None:
        doc = t1.t4_document(results, env["failed"], kw["tune_params"], env["objective"])
        _write_atomically(Path(t4), json.dumps(doc, indent=1))
    best = env.get("best_config")
    shown = ", ".join(f"{k}={best[k]}" for k in kw["tune_params"]) + \
        f" ({best['time']:.4f} ms)" if best else "none"
    return {"kernel": kw["kernel_name"], "valid": len(results), "failed": env["failed_count"],
            "best": shown}


def _device_named(name: object) -> DeviceInfo:
    hits = [i for i in list_devices() if i.name == name]
    if not hits:
        raise ValueError(f"no device here is named {name!r:.80}; choose one with --device")
    return hits[0]


def export(db: str | None, selector: str | None, path: str) -> int:
    """Write the bests (of one device, or all) as a versioned JSON file; returns the count."""
    fps = None if selector is None else {select(selector)[0].fingerprint}
    store = Store.open(db, readonly=True)
    try:
        doc = export_doc(store.export_rows(fps))
    finally:
        store.close()
    _write_atomically(Path(path), json.dumps(doc, indent=1, sort_keys=True))
    return len(doc["results"])


def _write_atomically(target: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=target.parent if str(target.parent) else ".",
                               prefix=".cltune-export-")
    with os.fdopen(fd, "w") as f:  # write then rename: never a half-written file
        f.write(text)
    os.replace(tmp, target)


def export_kernel_tuner(db: str | None, selector: str | None, kernel: str | None,
                        path: str) -> int:
    """Write an application kernel's bests as Kernel Tuner's `store_results` file."""
    fps = None if selector is None else {select(selector)[0].fingerprint}
    store = Store.open(db, readonly=True)
    try:
        rows = [r for r in store.bests(store.device_ids(), user_family.NAME)
                if fps is None or r.fingerprint in fps]
    finally:
        store.close()
    names = sorted({user_family.variant_of(r.variant)[0] for r in rows})
    if kernel is None and len(names) > 1:
        raise ValueError(f"the database holds several kernels ({', '.join(names)}): name one "
                         f"with --kernel")
    name = kernel if kernel is not None else (names[0] if names else "")
    rows = [r for r in rows if user_family.variant_of(r.variant)[0] == name]
    if not rows:
        raise ValueError(f"no tuned results of kernel {name!r:.60} in the database"
                         if name else "no tuned kernel results in the database")
    _write_atomically(Path(path), interop.dumps(interop.store_results_doc(rows, name)))
    return len(rows)


def import_file(db: str | None, path: str, kernel_source: str | None = None,
                selector: str | None = None,
                compiler_options: tuple[str, ...] = ()):  # noqa: ANN201 - MergeReport
    """Validate the whole file, then merge it in one transaction. A Kernel Tuner cache file
    (with `kernel_source`) is read as results of the selected device (default: the device
    of the name the file names)."""
    if interop.is_cache_file(path):
        if kernel_source is None:
            raise ValueError(f"{path} is a Kernel Tuner cache file: give the kernel's source "
                             f"with --kernel-source (it names the kernel in the database)")
        data = cachefile.read(Path(path))
        info = select(selector)[0] if selector is not None else _device_named(
            data.get("device_name"))
        records = interop.records_from_cache(path, kernel_source, info, compiler_options, data)
    else:
        records = read_import_file(path)  # raises before anything is written
    store = Store.open(db)
    try:
        return store.merge(records)
    finally:
        store.close()


def _hist_matches(variant: str, op: str | None, dtype: str | None) -> bool:
    kind, _, rest = variant.partition("/")
    return kind == (op or kind) and rest.split("/")[0] == (dtype or rest.split("/")[0])


def verify(db: str | None, selector: str, op: str | None, dtype: str | None):  # noqa: ANN201
    """Re-validate and re-time the stored configs of the families whose results the database
    alone describes (1-D, axis, many, scan, hist, topk, sort) on the selected device. Returns
    (device info, reverify rows)."""
    info, dev = select(selector)
    store = Store.open(db)
    try:
        variants = axis = many = scan = hist = topk = sort = None
        if op or dtype:  # the variants of this op and/or dtype
            variants = tuple(reduce_family.variant(OpSpec(o, d)) for o in OPS for d in DTYPES
                             if o == (op or o) and d == (dtype or d))
            axis = tuple(f"{v}/{k}" for v in variants for k in axis_family.KINDS)
            many = tuple(f"{o}/{d}" for o in many_family.OPS for d in many_family.DTYPES
                         if o == (op or o) and d == (dtype or d))
            scan = tuple(f"{o}/{d}/{lay}" for o in scan_family.OPS for d in scan_family.DTYPES
                         for lay in ("rows", "cols") if o == (op or o) and d == (dtype or d))
            hist = tuple(r.variant for r in store.ok_results(
                store.device_ids(fingerprint=info.fingerprint), hist_family.NAME, None)
                if _hist_matches(r.variant, op, dtype))
            topk = () if op not in (None, "topk") else (f"topk/{dtype}",) if dtype else None
            sort = () if op not in (None, "sort") else (f"sort/{dtype}",) if dtype else None
        ctx = cl.Context([dev])
        # the families whose stored results can be re-run from the database alone (a custom
        # expression's text is not stored: `knl.tune` re-validates those)
        return info, (verify_device(ctx, dev, info, store, reduce_family.NAME, variants)
                      + verify_device(ctx, dev, info, store, axis_family.NAME, axis)
                      + verify_device(ctx, dev, info, store, many_family.NAME, many)
                      + verify_device(ctx, dev, info, store, scan_family.NAME, scan)
                + verify_device(ctx, dev, info, store, hist_family.NAME, hist)
                + verify_device(ctx, dev, info, store, topk_family.NAME, topk)
                + verify_device(ctx, dev, info, store, sort_family.NAME, sort))
    finally:
        store.close()


#: families whose stored results verify cannot re-run: their code (an application's
#: expression or kernel) is not stored, only its fingerprint; `knl.tune(...)` and
#: `tune_kernel(..., resume=False)` re-validate them
CODE_FAMILIES = ("expr", "expr_axis", "gscan", user_family.NAME)


def not_reverified(db: str | None, selector: str) -> dict[str, int]:
    """How many stored results `verify` leaves alone on this device (and related ones), per
    family of CODE_FAMILIES that has any."""
    info, _ = select(selector)
    store = Store.open(db)
    try:
        ids = [i for _, group in store.related_devices(info.fingerprint, info.hardware_key,
                                                         info.model, info.vendor)
               for i in group]
        counts = {f: len({(r.variant, r.size_class) for r in store.ok_results(ids, f, None)})
                  for f in CODE_FAMILIES}
        return {f: n for f, n in counts.items() if n}
    finally:
        store.close()


def bench(selector: str, op: str, dtype: str, sizes: list[int], repeats: int,
          db: str | None) -> Report:
    """`cltune bench`: the tuned reduction against its baselines on one device."""
    if repeats < 1:
        raise ValueError("--repeats must be at least 1")
    info, dev = select(selector)
    ctx = cl.Context([dev])
    return run_benchmark(cl.CommandQueue(ctx, dev), info, op, dtype, sizes, repeats, db)


def bench_mode(selector: str, req: BenchRequest) -> ModeReport:
    """`cltune bench --axis/--segments/--many` or a statistic: cltune.cli.bench_modes."""
    if req.repeats < 1:
        raise ValueError("--repeats must be at least 1")
    info, dev = select(selector)
    ctx = cl.Context([dev])
    return run_mode(cl.CommandQueue(ctx, dev), info, req)


def migrate(db: str | None, rebuild_tally: bool = False) -> tuple[int, tuple[int, int] | None]:
    """Create or migrate the schema; with rebuild_tally also recount the vendor tally.
    Returns the version now in place and (tally rows, keys that differed) when rebuilt."""
    store = Store.open(db)
    try:
        return LATEST, store.rebuild_tally() if rebuild_tally else None
    finally:
        store.close()
