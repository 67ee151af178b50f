"""cltune.GenericScanKernel tuned (#42 item 3), as cltune.ReductionKernel is: family `gscan`
keyed by the kernel's fingerprint (never its text), `knl.tune(*args)` (every config run in the
device's worker against the one-work-item walk of the same expressions), `tune="first-use"`,
`cltune tune --kernel module:attribute`, configs derived from the device's tuned plain scan
where the kernel is untuned, `knl.explain(n)`; every point of the space gives the serial
walk's answers on sizes that are multiples of nothing (segments, an associative but not
commutative scan, an output statement writing where another element's input was)."""

from __future__ import annotations

import json
import sys
import textwrap

import numpy as np
import pyopencl.array as cla
import pytest

import cltune
from cltune.families.scan.gscan_config import GScanConfig, GScanConfigError
from cltune.families.scan.gscan_serve import MAX_BUCKET_STEPS
from cltune.families.scan.gscan_target import GScanLauncher, make_space
from cltune.tuning_db import Store
from cltune.tuning_db.rows import Measurement

EXCL = ("__global int *x, __global int *y", "x[i]", "a+b", "0", "y[i] = prev_item")


def _excl(ctx, **kw):
    return cltune.GenericScanKernel(ctx, np.int32, *EXCL, **kw)


def _record(db_url, info, family, variant, size_class, cfg):
    """Store `cfg` as the best of (family, variant, size class) on `info`'s device."""
    store = Store.open(db_url)
    try:
        dev_id = store.upsert_device(info.fingerprint_parts(), info.fingerprint,
                                     info.hardware_key, info.name)
        rid = store.record(dev_id, Measurement(family, variant, size_class, cfg.to_dict(),
                                               cfg.key(), "ok", 1 << 20, "test", "test", "",
                                               1e-4, 40.0))
        store.set_best(dev_id, rid)
    finally:
        store.close()


def test_the_fingerprint_is_the_code_not_the_object(ctx):
    a, b = _excl(ctx), _excl(ctx)
    assert a.fingerprint == b.fingerprint and len(a.fingerprint) == 24
    others = [cltune.GenericScanKernel(ctx, np.int32, EXCL[0], "x[i]", "max(a, b)", "0",
                                       EXCL[4]),
              cltune.GenericScanKernel(ctx, np.int32, *EXCL[:4], "y[i] = item"),
              cltune.GenericScanKernel(ctx, np.int64, "__global long *x, __global long *y",
                                       *EXCL[1:]),
              cltune.GenericScanKernel(ctx, np.int32, *EXCL, options=["-DX=1"]),
              cltune.GenericScanKernel(ctx, np.int32, *EXCL, preamble="#define Y 2"),
              cltune.GenericScanKernel(ctx, np.int32, *EXCL, index_dtype=np.int64)]
    assert len({a.fingerprint, *(o.fingerprint for o in others)}) == len(others) + 1


def test_configs_are_validated():
    ok = {"layout": "tiled", "wg": 64, "groups_per_cu": 4, "items": 8}
    assert GScanConfig.from_mapping(ok) == GScanConfig("tiled", 64, 4, 8)
    for change, msg in (({"wg": 3}, "wg"), ({"wg": 2048}, "wg"),
                        ({"groups_per_cu": 5}, "groups_per_cu"), ({"wg": True}, "wg"),
                        ({"items": 3}, "items"), ({"layout": "contiguous"}, "items"),
                        ({"layout": "strided"}, "layout"), ({"x": 1}, "unknown"),
                        ({"wg": 4}, "below 8")):
        with pytest.raises(GScanConfigError, match=msg):
            GScanConfig.from_mapping({**ok, **change})
    with pytest.raises(GScanConfigError, match="missing"):
        GScanConfig.from_mapping({"wg": 64})
    assert GScanConfig("tiled", 64, 4, 8).defines() == {"CLT_WG": 64, "CLT_GS_TILED": 1,
                                                        "CLT_K": 8}
    with pytest.raises(ValueError, match="tune="):
        cltune.GenericScanKernel(None, np.int32, *EXCL, tune="always")  # before the context


def test_every_point_of_the_space_gives_the_serial_walks_answers(ctx, queue, device):
    """Both layouts, work-group sizes from the smallest to the largest offered, items 1 to 16
    (tiled), chunks a compute unit from 1 to 64, on sizes of 1 to 100003 (tiles cut short,
    chunks of several tiles): a segmented scan whose scan_expr is associative but not
    commutative (the last non-zero value), an exclusive sum written in place one element on
    (pyopencl's ListOfListsBuilder writes ary[i + 1] so), each against numpy."""
    info, dev = device
    space = make_space(info, 4)
    wgs = space.values["wg"]
    assert wgs[0] == (1 if info.type == "cpu" else min(32, wgs[-1])) and 1024 >= wgs[-1]
    last = cltune.GenericScanKernel(
        ctx, np.int32, "__global int *x, __global const char *s, __global int *y",
        "x[i]", "across_seg_boundary ? b : (b != 0 ? b : a)", "0", "y[i] = item",
        is_segment_start_expr="s[i]")
    shift = cltune.GenericScanKernel(ctx, np.int32, "__global int *x", "x[i]", "a+b", "0",
                                     "if (i + 1 < N) x[i + 1] = item; if (i == 0) x[0] = 0")
    rng = np.random.default_rng(42)
    pick = dict.fromkeys((wgs[0], wgs[len(wgs) // 2], wgs[-1]))
    configs = [GScanConfig("contiguous", w, g, 1) for w in pick for g in (1, 8, 64)]
    configs += [c for c in (GScanConfig("tiled", w, g, k) for w in (*pick, 8) if w >= 8
                            for g in (1, 64) for k in (1, 4, 16)) if not space.check(c)]
    assert any(c.layout == "tiled" for c in configs)
    for n in (1, 7, 1000, 100003):
        h = rng.integers(-3, 4, n).astype(np.int32)
        h[rng.random(n) < 0.3] = 0
        seg = (rng.random(n) < 0.01).astype(np.int8)
        want_last = np.empty(n, np.int32)
        cur = 0
        for i in range(n):
            cur = h[i] if seg[i] else (h[i] if h[i] != 0 else cur)
            want_last[i] = cur
        want_shift = np.concatenate([[0], np.cumsum(h)[:-1]]).astype(np.int32)
        for cfg in configs:
            x, s, y = (cla.to_device(queue, h), cla.to_device(queue, seg),
                       cla.empty(queue, n, np.int32))
            GScanLauncher(last, dev, cfg).enqueue(queue, (x, s, y), n)
            assert np.array_equal(y.get(), want_last), (cfg.short(), n)
            z = cla.to_device(queue, h)
            GScanLauncher(shift, dev, cfg).enqueue(queue, (z,), n)
            assert np.array_equal(z.get(), want_shift), (cfg.short(), n)


def test_tune_stores_serves_and_explains(ctx, queue, device, db_url, storage_url):
    """Untuned: the builtin config (no tuned plain scan here) or one derived from it; tuned:
    the exact level for sizes within MAX_BUCKET_STEPS of the class, the fallback beyond, the
    same for a new kernel object of the same code; the answers stay numpy's."""
    info, _ = device
    knl = _excl(ctx, db=db_url)
    assert knl.explain(1 << 12).level in ("builtin", "derived")
    h = np.random.default_rng(1).integers(0, 9, 5001).astype(np.int32)
    x, y = cla.to_device(queue, h), cla.empty(queue, 5001, np.int32)
    res = knl.tune(x, y, trials=4, timeout=60, storage=storage_url)
    assert res[0].size_class == "2^12" and res[0].config is not None
    e = knl.explain(5001)
    assert (e.level, e.bucket, e.config) == ("exact", 12, res[0].config), e
    far = knl.explain(1 << (13 + MAX_BUCKET_STEPS))
    assert far.level in ("builtin", "derived") and "tuned for 2^12 (exact)" in far.why
    again = _excl(ctx, db=db_url)
    assert again.explain(4096).level == "exact"
    again(x, y)
    assert np.array_equal(y.get(), np.concatenate([[0], np.cumsum(h)[:-1]]))
    assert knl.explain(4096, device=queue.device).config == res[0].config


def test_untuned_kernels_are_shaped_like_the_tuned_plain_scan(ctx, device, db_url):
    info, _ = device
    from cltune.families.scan.config import ScanConfig

    knl = _excl(ctx, db=db_url)
    _record(db_url, info, "scan", "sum/float32/rows", "2^0x2^20",
            ScanConfig("rows", wg=64, items=8, groups_per_cu=16))
    knl.reload()
    e = knl.explain(1 << 20)
    assert e.level == "derived" and "sum/float32/rows" in e.why, e
    assert e.config == GScanConfig("tiled", 64, 16, 8)  # the plain scan stages tiles
    # and this kernel's own tuned class wins where it is near
    _record(db_url, info, "gscan", knl.fingerprint, "2^20", GScanConfig("contiguous", 2, 2, 1))
    knl.reload()
    assert knl.explain(1 << 20).config == GScanConfig("contiguous", 2, 2, 1)


def test_first_use_tunes_in_the_background_and_switches(ctx, queue, db_url):
    knl = _excl(ctx, db=db_url, tune="first-use", budget_s=2.0)
    assert knl.background is None
    h = np.arange(3000, dtype=np.int32) % 7
    x, y = cla.to_device(queue, h), cla.empty(queue, 3000, np.int32)
    knl(x, y)  # served at once by the untuned config
    want = np.concatenate([[0], np.cumsum(h)[:-1]])
    assert np.array_equal(y.get(), want)
    assert knl.background is not None
    knl.background.join(timeout=120)
    assert knl.background_error is None
    assert knl.explain(3000).level == "exact"
    knl(x, y)
    assert np.array_equal(y.get(), want)


def test_the_cli_tunes_a_scan_kernel_named_module_attribute(tmp_path, monkeypatch, info,
                                                            db_url, storage_url):
    from typer.testing import CliRunner

    from cltune.cli.app import app

    (tmp_path / "clt_scan_app.py").write_text(textwrap.dedent(f"""
        import numpy as np
        import pyopencl as cl
        import cltune
        from cltune.device.select import select

        def running_max():
            ctx = cl.Context([select("{info.index}")[1]])
            return cltune.InclusiveScanKernel(ctx, np.float32, "fmax(a, b)", "-INFINITY")
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    runner = CliRunner()
    r = runner.invoke(app, ["tune", "--device", str(info.index), "--kernel",
                            "clt_scan_app:running_max", "--sizes", "2^12", "--trials", "3",
                            "--timeout", "60", "--db", db_url, "--storage", storage_url])
    assert r.exit_code == 0, r.output
    r = runner.invoke(app, ["show", "--json", "--db", db_url])
    rows = json.loads(r.output)
    assert any(x["family"] == "gscan" and x["size_class"] == "2^12" for x in rows), rows
    r = runner.invoke(app, ["tune", "--device", str(info.index), "--kernel",
                            "clt_scan_app:running_max", "--axis", "0", "--db", db_url])
    assert r.exit_code != 0 and "--axis" in r.output
    sys.modules.pop("clt_scan_app", None)


def test_the_scratch_kept_per_queue_serves_calls_of_any_size_and_queue(ctx, queue):
    """The scratch a kernel keeps per in-order queue (its calls run one after another there):
    calls of shrinking and growing sizes back to back on two queues, no wait between them,
    and with an allocator (its own buffers): numpy's answers each time."""
    import pyopencl as cl
    import pyopencl.tools as cltools

    knl = _excl(ctx)
    q2 = cl.CommandQueue(ctx, queue.device)
    rng = np.random.default_rng(3)
    outs = []
    for i, n in enumerate((100003, 7, 50001, 200003, 1)):
        q = queue if i % 2 == 0 else q2
        h = rng.integers(0, 9, n).astype(np.int32)
        x, y = cla.to_device(q, h), cla.empty(q, n, np.int32)
        knl(x, y, queue=q)
        outs.append((h, y))
    pool = cltools.MemoryPool(cltools.ImmediateAllocator(queue))
    h = rng.integers(0, 9, 3001).astype(np.int32)
    x, y = cla.to_device(queue, h), cla.empty(queue, 3001, np.int32)
    knl(x, y, allocator=pool)
    outs.append((h, y))
    for h, y in outs:
        assert np.array_equal(y.get(), np.concatenate([[0], np.cumsum(h)[:-1]])), h.size
    assert len(knl._kept) == 2  # one scratch per queue
