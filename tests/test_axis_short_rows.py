"""float32 sums along short rows of a length that is not a power of two on CPUs, served by
kernels/normvec.cl's clt_normvec_rowss<L> (cltune/families/axis/short_rows.py, #40): numpy's
answer (the row added in double: within a float32 rounding of the float64 sum), odd row
counts, 3-D, keepdims, an input at an offset, `out=`, the warm repeat call, NaN and inf,
explain saying so; powers of two, small arrays, other dtypes and ops, tuned classes and GPUs
keep the axis family's own launch."""

from __future__ import annotations

import numpy as np
import pyopencl.array as cla
import pytest

import cltune
from cltune.families.axis import short_rows
from cltune.stats import normvec


@pytest.fixture
def cpu(device):
    if device[0].type != "cpu":
        pytest.skip("short rows by normvec's kernels are served on CPUs")
    return device


def _close(got, h64, axis, keepdims=False):
    want = h64.sum(axis=axis, keepdims=keepdims)
    w32 = want.astype(np.float32)
    ok = (got == w32) | (np.isnan(got) & np.isnan(w32)) | (
        np.abs(got.astype(np.float64) - want) <= np.spacing(np.abs(w32)).astype(np.float64))
    return ok.all()


def test_sums_along_short_rows_as_numpy(queue, cpu, tmp_path, monkeypatch):
    served = []
    real = short_rows.launch_for

    def spy(*a):
        got = real(*a)
        if got is not None:
            served.append(a[-1])
        return got

    monkeypatch.setattr(short_rows, "launch_for", spy)
    r = cltune.get_reducer(queue, "sum", np.float32, db=f"sqlite:///{tmp_path / 'n.db'}")
    rng = np.random.default_rng(3)
    for length, lead, three in ((3, 0, False), (5, 1, True), (6, 0, False), (7, 3, False),
                                (9, 0, True), (13, 2, False), (15, 0, False)):
        nrows = normvec.ROWS_MIN // length + 11
        shape = (3, -(-nrows // 3), length) if three else (nrows, length)
        flat = (rng.standard_normal(int(np.prod(shape)) + lead) * 100).astype(np.float32)
        h = flat[lead:].reshape(shape)
        rows = h.reshape(-1, length)
        rows[4, 1] = np.inf
        rows[8, 0] = np.nan
        rows[12] = np.float32(3e38)  # a float32 sum past FLT_MAX: inf, as numpy's
        x = cla.to_device(queue, flat)[lead:].reshape(shape)
        h64 = h.astype(np.float64)
        with np.errstate(all="ignore"):
            for keep in (False, True):
                got = r(x, axis=-1, keepdims=keep)
                assert got.dtype == np.float32 and got.shape == h.sum(-1, keepdims=keep).shape
                assert _close(got.get(), h64, -1, keep), (length, keep)
            again = r(x, axis=-1).get()  # the warm call: the prepared launch again
            assert _close(again, h64, -1)
            out = cla.empty(queue, h.shape[:-1], np.float32)
            assert r(x, axis=-1, out=out) is out and _close(out.get(), h64, -1)
        assert served and served[-1] == length, (length, served[-3:])
        assert "clt_normvec_rowss" in str(r.explain(shape, axis=-1))
    before = len(served)
    for shape, dt in (((normvec.ROWS_MIN // 4 + 1, 4), np.float32),  # a power of two
                      ((101, 5), np.float32),  # small
                      ((normvec.ROWS_MIN // 5 + 1, 5), np.float64)):
        h = rng.random(shape).astype(dt)
        rr = cltune.get_reducer(queue, "sum", dt, db=f"sqlite:///{tmp_path / 'n.db'}")
        np.testing.assert_allclose(rr(cla.to_device(queue, h), axis=1).get(),
                                   h.astype(np.float64).sum(axis=1), rtol=1e-5)
        assert "clt_normvec_rowss" not in str(rr.explain(shape, axis=1))
    h = rng.random((normvec.ROWS_MIN // 5 + 1, 5)).astype(np.float32)
    mx = cltune.get_reducer(queue, "max", np.float32, db=f"sqlite:///{tmp_path / 'n.db'}")
    assert np.array_equal(mx(cla.to_device(queue, h), axis=1).get(), h.max(axis=1))
    assert len(served) == before
