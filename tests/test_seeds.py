"""Seeds: a new study starts from what is known; resume and --no-seeds add nothing."""

import optuna
from support.records import reduce_measurement

from cltune.core.ops import OpSpec
from cltune.families.base import MAX_SEEDS, known_config
from cltune.families.reduce.config import Config
from cltune.families.reduce.defaults import builtin_config
from cltune.families.reduce.seeds import params_of, seed_params
from cltune.families.reduce.space import make_space
from cltune.tuning.tuner import TuneOptions, Tuner
from cltune.tuning_db import Store


def _space(ctx, device):
    info, dev = device
    return make_space(ctx, dev, info, OpSpec("sum", "float32"))


def test_params_round_trip_and_infeasible_points_are_not_seeds(ctx, device):
    space = _space(ctx, device)
    wg = space.values["wg"][0]
    cfg = Config("local_tree", wg, 2 * wg, 3, 4, 2, 1, "native")
    p = params_of(cfg, space)
    assert p == {"strategy": "local_tree", "wg": wg, "tile_factor": 2, "items": 3, "vec": 4,
                 "groups_per_cu": 2, "passes": 1, "acc": "native"}
    too_big = Config("local_tree", wg, wg * 16, 1, 1, 1, 2, "native")
    small = space.restrict(tile_factor=(1, 2))
    assert params_of(too_big, small) is None  # a value the (restricted) space does not offer
    assert params_of(Config("serial", wg, 0, 5, 1, 1, 2, "native"), space) is None  # items=5
    assert "tile_factor" not in params_of(Config("serial", wg, 0, 4, 4, 1, 2, "native"), space)


def test_seed_params_skip_invalid_stored_configs_and_duplicates(ctx, device):
    space = _space(ctx, device)
    wg = space.values["wg"][0]
    good = Config("serial", wg, 0, 4, 4, 2, 2, "native")
    hostile = {"strategy": "serial", "wg": "64 -DEVIL=1", "tile": 0, "items": 4, "vec": 4,
               "groups_per_cu": 2, "passes": 2, "acc": "native"}
    seeds = seed_params(space, [None, hostile, {"nonsense": 1}, good.to_dict(), good,
                                Config("serial", wg, 0, 8, 4, 2, 2, "native"),
                                Config("serial", wg, 0, 2, 4, 2, 2, "native"),
                                Config("serial", wg, 0, 1, 4, 2, 2, "native")])
    assert len(seeds) == MAX_SEEDS
    assert seeds[0] == params_of(good, space) and seeds[1]["items"] == 8


def test_known_config_takes_the_nearest_bucket():
    class R:
        def __init__(self, bucket, config):
            self.size_class, self.config = f"2^{bucket}", config
    rows = [R(10, {"a": 10}), R(20, {"a": 20}), R(24, {"a": 24})]
    assert known_config(rows, 20) == {"a": 20}
    assert known_config(rows, 22) == {"a": 24}  # ties go to the larger bucket
    assert known_config(rows, 11) == {"a": 10}
    assert known_config([], 11) is None


def _first_params(storage_url, tuner, bucket):
    study = optuna.load_study(study_name=tuner.study_name(bucket), storage=storage_url)
    trials = sorted(study.get_trials(deepcopy=False), key=lambda t: t.number)
    return [t.params for t in trials], study


def test_a_new_study_starts_from_the_stored_best_then_the_previous_winner(
        ctx, device, db_url, storage_url):
    info, dev = device
    store = Store.open(db_url)
    space = _space(ctx, device)
    wg = space.values["wg"][-1]
    stored = Config("local_tree", wg, wg, 2, 2, 1, 2, "native")
    dev_id = store.upsert_device(info.fingerprint_parts(), info.fingerprint, info.hardware_key,
                                 info.name)
    rid = store.record(dev_id, reduce_measurement("sum", "float32", 12, stored.to_dict(),
                                                  stored.key(), status="ok", median_s=1.0,
                                                  gbps=0.001, n_measured=1 << 12,
                                                  cltune_version="test", source_hash="test"))
    store.set_best(dev_id, rid)
    tuner = Tuner(ctx, dev, info, store, storage_url,
                  TuneOptions(buckets=(12, 14), trials=5, timeout_s=300, seed=3))
    results = tuner.run()
    params12, _ = _first_params(storage_url, tuner, 12)
    assert params12[0] == params_of(stored, tuner.space)  # the stored best, re-validated
    spec = OpSpec("sum", "float32")
    # then the builtin config served untuned at 2^12 (CPUs: in one launch), the general one
    assert params12[1:3] == seed_params(tuner.space, [builtin_config(info, spec, 1 << 12),
                                                      builtin_config(info, spec)])
    params14, _ = _first_params(storage_url, tuner, 14)
    # bucket 14: the nearest known bucket (12, as known when the run started), the winner of
    # bucket 12 in this run, the builtin config; duplicates dropped
    want = seed_params(tuner.space, [stored, results[0].config,
                                     builtin_config(info, spec, 1 << 14),
                                     builtin_config(info, spec)])
    assert params14[:len(want)] == want and want[0] == params_of(stored, tuner.space)
    assert all(r.trials >= 5 for r in results)


def test_no_seeds_and_resume_enqueue_nothing(ctx, device, db_url, storage_url):
    info, dev = device
    store = Store.open(db_url)
    opts = TuneOptions(buckets=(11,), trials=3, timeout_s=300, seed=5, seeds=False)
    tuner = Tuner(ctx, dev, info, store, storage_url, opts)
    tuner.run()
    _, study = _first_params(storage_url, tuner, 11)
    assert not any("fixed_params" in t.system_attrs for t in study.trials)
    # resume of a seeded study: the seeds were enqueued once, at creation
    opts = TuneOptions(buckets=(13,), trials=3, timeout_s=300, seed=5)
    Tuner(ctx, dev, info, store, storage_url, opts).run()
    resumed = TuneOptions(buckets=(13,), trials=5, timeout_s=300, seed=5, resume=True)
    t2 = Tuner(ctx, dev, info, store, storage_url, resumed)
    t2.run()
    _, study = _first_params(storage_url, t2, 13)
    fixed = [t for t in study.trials if "fixed_params" in t.system_attrs]
    assert 1 <= len(fixed) <= MAX_SEEDS and all(t.number < 3 for t in fixed)
    assert len(study.trials) == 5
