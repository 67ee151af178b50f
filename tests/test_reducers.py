"""`cltune.get_reducer` for the arg-reductions and statistics (cltune.stats.api behind the
reducer's call convention) next to the plain reductions."""

from __future__ import annotations

import numpy as np
import pyopencl.array as cla
import pytest

import cltune
from cltune.stats.reducers import STATS_OPS, StatsReducer

pytestmark = pytest.mark.filterwarnings("ignore::cltune.core.serving.CltuneWarning")


def test_plain_ops_are_the_runtime_reducers(queue):
    assert isinstance(cltune.get_reducer(queue, "sum"), cltune.Reducer)


@pytest.mark.parametrize("op", STATS_OPS)
def test_every_statistic_matches_numpy(queue, op):
    x = np.random.default_rng(3).uniform(-1, 2, 10007).astype(np.float32)
    x[[5, 900]] = x.max() + 1  # a tie: the first occurrence wins
    r = cltune.get_reducer(queue, op, np.float32)
    assert isinstance(r, StatsReducer)
    got = r(cla.to_device(queue, x)).get()
    want = np.linalg.norm(x.astype(np.float64)) if op == "norm" else getattr(np, op)(x)
    if op in ("argmin", "argmax", "count_nonzero", "any", "all"):
        assert got == want, (op, got, want)
    else:
        assert np.isclose(float(got), float(want), rtol=1e-5), (op, got, want)
    assert r(x).get() == got  # a numpy array is uploaded


def test_options_dtype_checks_and_explain(queue):
    x = np.arange(10, dtype=np.float32)
    r = cltune.get_reducer(queue, "var", np.float32)
    assert np.isclose(float(r(x, ddof=1).get()), x.var(ddof=1))
    with pytest.raises(TypeError, match="dtype"):
        r(x.astype(np.float64))
    assert "n=1000" in str(r.explain(1000)) or r.explain(1000) is not None
    with pytest.raises(ValueError, match="default database"):
        cltune.get_reducer(queue, "argmax", db="sqlite:///x.db")
    with pytest.raises(ValueError, match="unknown op") as e:
        cltune.get_reducer(queue, "median")
    assert "dot" in str(e.value) and "count_nonzero" in str(e.value)  # every op it takes
