import pytest

from cltune.core.ops import OpSpec
from cltune.families.reduce.config import Config, ConfigError
from cltune.families.reduce.kernel import build_defines

GOOD = {"strategy": "local_tree", "wg": 64, "tile": 128, "items": 4, "vec": 4,
        "groups_per_cu": 4, "passes": 2, "acc": "native"}


def test_round_trip_and_key_is_stable():
    cfg = Config.from_mapping(GOOD)
    assert cfg.to_dict() == GOOD
    assert Config.from_mapping(cfg.to_dict()).key() == cfg.key()
    assert cfg.lanes == 2


@pytest.mark.parametrize("field,value", [
    ("wg", "64"), ("wg", 48), ("wg", 8192), ("wg", True), ("tile", 32), ("tile", 64 * 128),
    ("items", 0), ("items", 33), ("vec", 3), ("vec", 4.0), ("groups_per_cu", 0),
    ("passes", 3), ("acc", "double"), ("strategy", "-DEVIL=1"), ("strategy", "local_tree "),
    ("wg", 2**70),
])
def test_rejects_bad_values(field, value):
    with pytest.raises(ConfigError, match=field):
        Config.from_mapping({**GOOD, field: value})


def test_rejects_unknown_and_missing_fields():
    with pytest.raises(ConfigError, match="unknown"):
        Config.from_mapping({**GOOD, "extra": 1})
    with pytest.raises(ConfigError, match="missing"):
        Config.from_mapping({k: v for k, v in GOOD.items() if k != "vec"})
    with pytest.raises(ConfigError):
        Config.from_mapping(["not", "a", "mapping"])  # type: ignore[arg-type]


def test_tile_only_for_local_tree():
    with pytest.raises(ConfigError, match="tile"):
        Config.from_mapping({**GOOD, "strategy": "serial"})
    Config.from_mapping({**GOOD, "strategy": "serial", "tile": 0})


def test_defines_are_only_names_and_numbers():
    for op in ("sum", "prod", "min", "max", "dot"):
        for dt in ("float32", "int32", "uint64", "float16", "float64"):
            for d in build_defines(OpSpec(op, dt), Config.from_mapping(GOOD), index64=True):
                name, _, value = d[2:].partition("=")
                assert d.startswith("-D") and name.isidentifier()
                assert value.isdigit() or value.isidentifier()


def test_result_dtypes_follow_numpy():
    import numpy as np

    for op in ("sum", "prod", "min", "max", "dot"):
        for dt in ("float32", "float16", "int32", "uint32", "int64", "uint64", "float64"):
            a = np.ones(3, dt)
            want = {"sum": np.sum, "prod": np.prod, "min": np.min, "max": np.max,
                    "dot": lambda v: np.dot(v, v)}[op](a).dtype
            assert OpSpec(op, dt).result_dtype == want, (op, dt)
