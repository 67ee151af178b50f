"""The strategy registry: a strategy added from outside the package (a record plus a few lines
of OpenCL from this test's own files) is offered, validated, tuned, stored and served, with no
module of cltune touched."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyopencl.array as cla
import pytest

from cltune import get_reducer
from cltune.core import strategies
from cltune.core.ops import OpSpec
from cltune.families.reduce.config import Config, ConfigError
from cltune.families.reduce.space import make_space
from cltune.tuning.tuner import TuneOptions, Tuner
from cltune.tuning_db import Store

TOY_SOURCE = (Path(__file__).parent / "strategies" / "toy_sequential.cl").read_text()


@pytest.fixture
def toy():
    s = strategies.register(strategies.Strategy("toy_sequential", kernel_id=-1,
                                                source=TOY_SOURCE))
    try:
        yield s
    finally:
        strategies.unregister(s.name)


def test_builtin_records():
    assert strategies.names()[:5] == ("local_tree", "subgroup", "subgroup_local",
                                      "warp_shuffle", "serial")
    ids = [s.kernel_id for s in strategies.BUILTIN]
    assert len(set(ids)) == len(ids)
    assert strategies.get("serial").partials == "work-item"
    assert strategies.get("warp_shuffle").wg_multiple(8) == 32
    with pytest.raises(KeyError, match="unknown strategy"):
        strategies.get("nope")


def test_registry_rejects_clashes(toy):
    with pytest.raises(ValueError, match="already registered"):
        strategies.register(strategies.Strategy("toy_sequential", kernel_id=-1, source="x"))
    with pytest.raises(ValueError, match="kernel id"):
        strategies.register(strategies.Strategy("other", kernel_id=0))
    with pytest.raises(ValueError, match="built in"):
        strategies.unregister("serial")


def test_unregistered_strategy_never_reaches_the_compiler():
    with pytest.raises(ConfigError, match="strategy"):
        Config.from_mapping({"strategy": "toy_sequential", "wg": 8, "tile": 0, "items": 1,
                             "vec": 1, "groups_per_cu": 1, "passes": 2, "acc": "native"})


def test_toy_strategy_is_offered_tuned_stored_and_served(toy, ctx, device, queue, db_url,
                                                         storage_url):
    info, dev = device
    space = make_space(ctx, dev, info, OpSpec("sum", "float32"))
    assert "toy_sequential" in space.values["strategy"], space.excluded
    store = Store.open(db_url)
    try:
        opts = TuneOptions(buckets=(12,), trials=6, timeout_s=120, seed=3, seeds=False,
                           restrict={"strategy": ("toy_sequential",)})
        (res,) = Tuner(ctx, dev, info, store, storage_url, opts).run()
        assert res.config is not None and res.config.strategy == "toy_sequential", res
        bests = store.bests(store.device_ids(fingerprint=info.fingerprint))
        assert [(b.size_class, b.config["strategy"], b.status) for b in bests] == [
            ("2^12", "toy_sequential", "ok")]
    finally:
        store.close()
    r = get_reducer(queue, db=db_url)
    x = np.random.default_rng(5).uniform(-1, 2, 4099).astype(np.float32)
    got = r(cla.to_device(queue, x)).get()
    assert abs(float(got) - float(np.sum(x.astype(np.float64)))) < 1e-3
    e = r.explain(4099)
    assert e.config.strategy == "toy_sequential" and e.level == "exact", e


@pytest.mark.parametrize("op,dtype", [("max", "float32"), ("prod", "int64"), ("dot", "float64")])
def test_toy_strategy_matches_numpy_on_other_ops(toy, ctx, device, queue, op, dtype):
    from cltune.families.reduce.launch import Launcher
    from cltune.families.reduce.reference import validate

    info, dev = device
    spec = OpSpec(op, dtype)
    if spec.needs_fp64 and not info.fp64:
        pytest.skip("no fp64")
    wide = spec.acc_cl_type() in ("double", "long", "ulong")
    for passes in (1, 2) if info.int64_atomics or not wide else (2,):
        la = Launcher(ctx, dev, info, spec, Config("toy_sequential", 16, 0, 2, 4, 3, passes,
                                                    "native"))
        chk = validate(la, queue, 5000)
        assert chk.ok, chk.reason
