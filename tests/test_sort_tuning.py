"""cltune.sort's radix passes tuned as a family (`sort`): `SortConfig` validated, `fit` to a
device, the space pruned to what the device holds, the chain `shape_for` serves from (the
nearest tuned class of the key dtype, a stored config that does not validate skipped, a tuned
shape that fails its vetting replaced by the untuned one, the untuned shape beyond), the sorts
numpy-exact under a tuned shape, `cltune tune --op sort` end to end into a database that
`cltune show` and `cltune verify` read, and a candidate that crashes the driver failing its
trial only."""

from __future__ import annotations

import json
from types import SimpleNamespace as NS

import numpy as np
import pyopencl.array as cla
import pytest
from support.faults import injected
from typer.testing import CliRunner

import cltune
from cltune.cli.app import app
from cltune.core.serving import CltuneWarning
from cltune.families.scan import sort as sort_mod
from cltune.families.scan import sort_family
from cltune.families.scan.sort_config import (
    RESERVE,
    SortConfig,
    SortConfigError,
    fit,
    walk_local,
)
from cltune.families.scan.sort_target import SortSpace, make_space, params_of
from cltune.opencl.caches import clear_caches
from cltune.tuning_db import Store
from cltune.tuning_db.rows import Measurement

GPU = NS(type="gpu", max_wg=1024, local_mem=49152, compute_units=132, fp64=True)


def _record(db_url, info, variant, size_class, config: dict):
    """Store `config` (a mapping, valid or not) as the best of (sort, variant, size class)."""
    store = Store.open(db_url)
    try:
        dev_id = store.upsert_device(info.fingerprint_parts(), info.fingerprint,
                                     info.hardware_key, info.name)
        rid = store.record(dev_id, Measurement("sort", variant, size_class, config,
                                               json.dumps(config, sort_keys=True)[:16], "ok",
                                               1 << 13, "test", "test", "", 1e-4, 1.0))
        store.set_best(dev_id, rid)
    finally:
        store.close()


@pytest.fixture
def served_from(monkeypatch):
    """Sorts served from the database named (CLTUNE_DB), nothing served before or after kept."""
    def use(db_url: str) -> None:
        monkeypatch.setenv("CLTUNE_DB", db_url)
        clear_caches()

    yield use
    clear_caches()


def _awkward(n: int, dt=np.float32) -> np.ndarray:
    h = (np.random.default_rng(5).standard_normal(n) * 10).astype(dt)
    h[::41], h[3::43], h[4::47] = np.nan, -0.0, 0.0
    h[7::11] = h[9]
    return h


def test_configs_are_validated():
    assert SortConfig.from_mapping({"wg": 64, "items": 3, "bits": 5, "chunks_per_cu": 4}) == \
        SortConfig(64, 3, 5, 4)
    assert SortConfig(1, 4096, 8, 2).shape() == (1, 4096, 8, 2)
    for change, msg in (({"wg": 3}, "wg"), ({"wg": 2048}, "wg"), ({"wg": True}, "wg"),
                        ({"items": 17}, "items"), ({"items": 0}, "items"),
                        ({"wg": 1, "items": 8}, "one work-item"),
                        ({"wg": 1, "items": 1000}, "one work-item"), ({"bits": 3}, "bits"),
                        ({"bits": 9}, "bits"), ({"chunks_per_cu": 3}, "chunks_per_cu"),
                        ({"chunks_per_cu": 64}, "chunks_per_cu"), ({"x": 1}, "unknown")):
        with pytest.raises(SortConfigError, match=msg):
            SortConfig.from_mapping({"wg": 64, "items": 8, "bits": 8, "chunks_per_cu": 2,
                                     **change})
    with pytest.raises(SortConfigError, match="missing"):
        SortConfig.from_mapping({"wg": 64})
    # the family: a variant per key dtype of kernels/sort.cl, bool as uint8
    assert set(sort_family.KEY_DTYPES) == {dt.name for dt in sort_mod.TYPE_CODES}
    assert sort_family.variant_for(np.bool_) == "sort/uint8"
    fam = cltune.core.family.get("sort")
    assert fam.check_variant("sort/float16") == "" and fam.check_size_class("2^20") == ""
    for bad in ("sort/bool", "sort/complex64", "topk/float32", "sort"):
        assert fam.check_variant(bad), bad
    assert fam.check_size_class("2^20x2^3")
    with pytest.raises(ValueError, match="complex64"):
        sort_family.variant_for(np.complex64)


def test_fit_shrinks_items_then_the_group_to_the_device():
    split = sort_mod.split_local
    big = SortConfig(256, 8, 8, 2)
    assert fit(big, GPU, 4, 4, split) == big  # fits 48 KiB
    assert fit(SortConfig(1024, 16, 8, 2), GPU, 4, 4, split).items < 16
    for local_mem in (32768, 16384):
        small = NS(type="gpu", max_wg=128, local_mem=local_mem)
        got = fit(big, small, 8, 8, split)
        assert got.wg <= 128 and got.bits == 8 and (got.wg == 128 or got.items == 1), got
        assert got.local_bytes(8, 8, split) + RESERVE <= local_mem
    assert fit(replace_wg(big, 1), small, 4, 4, split) == replace_wg(big, 1)
    tiny = NS(type="gpu", max_wg=1024, local_mem=4096)
    got = fit(big, tiny, 8, 8, split)  # no group fits: one work-item, fewer bits
    assert got.wg == 1 and got.items == 4096 and walk_local(got.bits, 8) + RESERVE <= 4096
    assert fit(big, NS(max_wg=1, local_mem=65536), 4, 4, split).wg == 1


def replace_wg(cfg: SortConfig, wg: int) -> SortConfig:
    return SortConfig(wg, 4096 if wg == 1 else cfg.items, cfg.bits, cfg.chunks_per_cu)


def test_the_space_offers_what_the_device_holds(info):
    gpu = make_space(GPU, 4)
    assert gpu.values["wg"] == (64, 128, 256, 512) and "tile" not in gpu.values
    assert not gpu.check(SortConfig(256, 8, 8, 2))
    assert "not offered" in gpu.check(SortConfig(1, 4096, 8, 2))
    short = SortSpace(NS(**{**vars(GPU), "local_mem": 16384}), 8, gpu.values)
    assert "__local" in short.check(SortConfig(512, 16, 8, 2))  # pruned, never built
    assert all(not short.check(c) for c in short.configs()) and short.size() < gpu.size()
    here = make_space(info, 4)
    assert here.configs() and params_of(SortConfig(1, 2048, 8, 2)) == {
        "wg": 1, "tile": 2048, "bits": 8, "chunks_per_cu": 2}


@pytest.mark.multiprocess
def test_shape_for_serves_the_chain(queue, info, db_url, served_from):
    """The stored best of the nearest tuned class (within NEAR_STEPS), the untuned shape
    beyond it and for an untuned dtype, a stored config that does not validate skipped; the
    sorts numpy's under the tuned shape."""
    tuned = SortConfig(16, 4, 6, 4) if info.type == "cpu" else SortConfig(64, 4, 6, 4)
    _record(db_url, info, "sort/float32", "2^13", tuned.to_dict())
    _record(db_url, info, "sort/int16", "2^13", {**tuned.to_dict(), "wg": 3})
    served_from(db_url)
    f32, dev = np.dtype(np.float32), queue.device
    untuned = sort_mod.device_shape(dev, 4, 4)
    assert untuned != tuned.shape()
    assert sort_mod.shape_for(queue, f32, 8000, False) == tuned.shape()
    assert sort_mod.shape_for(queue, f32, 1 << 15, False) == tuned.shape()  # 2^2 away: near
    assert sort_mod.shape_for(queue, f32, 1 << 15, True) == \
        fit(tuned, info, 4, 8, sort_mod.split_local).shape()
    assert sort_mod.shape_for(queue, f32, 1 << 16, False) == untuned  # 2^3 away: far
    assert sort_mod.shape_for(queue, np.dtype(np.int32), 8000, False) == untuned
    assert sort_mod.shape_for(queue, np.dtype(np.int16), 8000, False) == untuned  # skipped
    assert "(tuned for 2^13: exact)" in sort_mod.describe(dev, f32, (8000,))
    assert "(untuned)" in sort_mod.describe(dev, np.int32, (8000,))
    h = _awkward(8001)
    x = cla.to_device(queue, h)
    want = sort_mod.reference_order(h, False)
    assert cltune.sort(x).get().tobytes() == h[want].tobytes()
    assert np.array_equal(cltune.argsort(x).get(), want)
    wd = sort_mod.reference_order(h, True)
    assert np.array_equal(cltune.argsort(x, descending=True).get(), wd)
    vals = np.arange(8001, dtype=np.int64)
    k, v = cltune.sort_by_key(x, cla.to_device(queue, vals))
    assert k.get().tobytes() == h[want].tobytes() and np.array_equal(v.get(), vals[want])
    rows = h[:8000].reshape(2, 4000)  # rows past one launch's: the passes, a row's bits last
    got = cltune.argsort(cla.to_device(queue, rows)).get()
    assert np.array_equal(got, np.stack([sort_mod.reference_order(r, False) for r in rows]))


@pytest.mark.multiprocess
def test_the_sorts_take_a_database_by_name(queue, info, db_url, served_from, tmp_path):
    """db= on sort / argsort / sort_by_key: the shape tuned there, whatever CLTUNE_DB names."""
    tuned = SortConfig(16, 4, 6, 4) if info.type == "cpu" else SortConfig(64, 4, 6, 4)
    _record(db_url, info, "sort/float32", "2^13", tuned.to_dict())
    other = f"sqlite:///{tmp_path / 'other.db'}"
    _record(other, info, "sort/int8", "2^13", tuned.to_dict())  # nothing for float32 there
    served_from(other)
    f32 = np.dtype(np.float32)
    assert sort_mod.shape_for(queue, f32, 8000, False) == sort_mod.device_shape(
        queue.device, 4, 4)
    assert sort_mod.shape_for(queue, f32, 8000, False, db_url) == tuned.shape()
    h = _awkward(8001)
    x = cla.to_device(queue, h)
    want = sort_mod.reference_order(h, False)
    assert cltune.sort(x, db=db_url).get().tobytes() == h[want].tobytes()
    assert np.array_equal(cltune.argsort(x, db=db_url).get(), want)
    k, v = cltune.sort_by_key(x, x, db=db_url)
    assert k.get().tobytes() == h[want].tobytes() == v.get().tobytes()


@pytest.mark.multiprocess
def test_a_tuned_shape_that_fails_its_vetting_is_passed_over(queue, info, db_url, served_from,
                                                             monkeypatch, tmp_path):
    tuned = SortConfig(1, 1024, 5, 1)
    _record(db_url, info, "sort/uint32", "2^14", tuned.to_dict())
    served_from(db_url)
    with injected(monkeypatch, tmp_path, "abort:check=sort"):
        with pytest.warns(CltuneWarning, match="exact sort shape wg1 x1024 b5 c/cu1"):
            shape = sort_mod.shape_for(queue, np.dtype(np.uint32), 1 << 14, False)
    assert shape == sort_mod.device_shape(queue.device, 4, 4)


@pytest.mark.multiprocess
def test_the_cli_tunes_stores_shows_verifies_and_serves(info, queue, db_url, storage_url,
                                                       served_from):
    runner = CliRunner()
    r = runner.invoke(app, ["tune", "--device", str(info.index), "--op", "sort", "--dtype",
                            "float32", "--sizes", "2^13", "--trials", "2", "--timeout", "60",
                            "--db", db_url, "--storage", storage_url])
    assert r.exit_code == 0, r.output
    r = runner.invoke(app, ["show", "--json", "--db", db_url])
    rows = [x for x in json.loads(r.output) if x["family"] == "sort"]
    assert [(x["variant"], x["size_class"]) for x in rows] == [("sort/float32", "2^13")], rows
    best = SortConfig.from_mapping(rows[0]["config"])
    r = runner.invoke(app, ["verify", "--device", str(info.index), "--op", "sort", "--db",
                            db_url])
    assert r.exit_code == 0 and "sort/float32" in r.output, r.output
    served_from(db_url)
    assert sort_mod.shape_for(queue, np.dtype(np.float32), 9000, False) == best.shape()
    h = _awkward(9000)
    assert cltune.sort(cla.to_device(queue, h)).get().tobytes() == \
        h[sort_mod.reference_order(h, False)].tobytes()
    for bad, msg in ((["--axis", "1"], "--op sort"), (["--dtype", "complex64"], "complex64"),
                     (["--topk", "4096x16"], "--op topk")):
        r = runner.invoke(app, ["tune", "--device", str(info.index), "--op", "sort", *bad,
                                "--db", db_url])
        assert r.exit_code != 0 and msg in r.output, (bad, r.output)


@pytest.mark.multiprocess
def test_a_candidate_that_crashes_the_driver_fails_its_trial_only(info, db_url, storage_url,
                                                                  monkeypatch, tmp_path):
    from cltune.cli import service
    from cltune.device.select import select
    from cltune.tuning.tuner import TuneOptions

    # two points: the device's untuned shape, and the same with 5-bit digits, which crashes
    untuned = SortConfig(*sort_mod.device_shape(select(str(info.index))[1], 4, 4))
    only = {k: (v,) for k, v in params_of(untuned).items()}
    opts = TuneOptions(trials=2, timeout_s=90, sampler="grid", seeds=False,
                       restrict={**only, "bits": (5, untuned.bits)})
    with injected(monkeypatch, tmp_path, "abort:family=sort,bits=5"):
        _, runs = service.tune_family(str(info.index), "sort", ["sort/float32"], (13,), opts,
                                      db_url, storage_url)
    (res,) = runs[0][1]
    assert res.crashed == 1 and res.failed == 1 and res.config == untuned, res
