"""Compaction's programs are vetted (house rule 17): the application's predicate is built and
run first in the device's worker, on the call's own first elements, and checked there against a
one-work-item walk of the same predicate (`compact.check_select`); a program that crashed,
hung or answered wrong there is never built in the application's process."""

from __future__ import annotations

import json

import numpy as np
import pyopencl.array as cla
import pytest
from support.faults import injected

import cltune
import cltune.families.scan.compact as compact
from cltune.device.select import info_for
from cltune.isolation.vetting import NoConfigRuns

SHAPES = [None, (8, 4, 3, 0), (1, 1, 2, 0), (64, 3, 2, 2), (24, 2, 3, 0)]


def _verdicts(cache) -> dict:
    return json.loads((cache / "vetted.json").read_text())["verdicts"]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_the_check_passes_every_call_form_on_this_driver(ctx, queue, shape):
    """check_select itself (here, in this process): values and both sides, extra array and
    scalar arguments, a preamble, indices of both widths with a fixed size's fill and the
    unravel kernel, for the device's shape and tiled, one-a-chunk and ballot (emulated) ones."""
    device = queue.device
    info = info_for(device)
    shape = shape or compact._device_shape(device, 8)
    h = ((np.arange(3001) * 7919) % 23 - 11).astype(np.float32)
    t = np.linspace(-5, 5, 3001).astype(np.float32)
    cases = [
        ("float32", "ary[i] > 0", [], "", 0, h, []),
        ("float32", "ary[i] > lim[i] * scale", [("lim", "a"), ("scale", "s")], "", 0, h,
         [t, np.float32(0.5)]),
        ("int64", "IS_ODD(ary[i])", [], "#define IS_ODD(v) (((v) & 1) != 0)", 0,
         h.astype(np.int64), []),
        ("float32", "ary[i] != 0", [], "", 1, h, []),
        ("uint8", "ary[i] != 0", [], "", 2, (h > 3).astype(np.uint8), []),
    ]
    for elem, pred, kinds, pre, index, data, values in cases:
        why = compact.check_select(ctx, queue, device, info, elem, pred, kinds, pre, index,
                                   shape, data, values)
        assert why == "", (pred, index, why)


def test_the_check_sees_a_wrong_answer(ctx, queue, monkeypatch):
    """A scatter that drops the last kept element (the count launch's chunks cut one short)
    is caught: the check compares with the serial walk, not with itself."""
    device = queue.device
    info = info_for(device)
    shape = compact._device_shape(device, 4)
    real = compact.select

    def short(ary, *a, **k):
        return real(ary[:-1], *a, **k)

    monkeypatch.setattr(compact, "select", short)
    h = np.arange(1, 2001, dtype=np.float32)
    why = compact.check_select(ctx, queue, device, info, "float32", "ary[i] > 0", [], "", 0,
                               shape, h, [])
    assert "counted 1999 kept of 2000" in why


@pytest.mark.multiprocess
def test_a_predicate_that_crashes_the_driver_is_never_built_here(queue, monkeypatch,
                                                                  tmp_path):
    """A crash (SIGABRT) of the vetting run: copy_if and nonzero raise one clear error naming
    the crash and the way to run it anyway; the verdict is kept; the process lives on and
    other predicates' programs are vetted on their own."""
    x = cla.to_device(queue, np.arange(-500, 501, dtype=np.float32))
    with injected(monkeypatch, tmp_path, "abort:check=compact") as cache:
        with pytest.raises(NoConfigRuns, match="(?s)crash.*CLTUNE_TRUST_DRIVER=1"):
            cltune.copy_if(x, "ary[i] > 0")
        with pytest.raises(NoConfigRuns, match="SIGABRT"):
            cltune.nonzero(x)
        kept = [k for k in _verdicts(cache) if ":check:compact:" in k]
        assert len(kept) == 2, kept  # the predicate's program and nonzero's
        monkeypatch.delenv("CLTUNE_TEST_FAULT")
        # the kept verdict answers the next call without a worker
        with pytest.raises(NoConfigRuns, match="SIGABRT"):
            cltune.copy_if(x, "ary[i] > 0")
        out, count, _ = cltune.copy_if(x, "ary[i] > 1")  # another program: vetted, runs
        assert int(count.get()) == 499 and out.get()[0] == 2.0


@pytest.mark.multiprocess
def test_a_wrong_answer_in_vetting_refuses_and_trust_overrides(queue, monkeypatch, tmp_path):
    x = cla.to_device(queue, np.arange(-50, 51, dtype=np.int32))
    with injected(monkeypatch, tmp_path, "wrong:check=compact"):
        with pytest.raises(NoConfigRuns, match="wrong answer"):
            cltune.partition(x, "ary[i] % 3 == 0")
        monkeypatch.setenv("CLTUNE_TRUST_DRIVER", "1")
        t, f, count, _ = cltune.partition(x, "ary[i] % 3 == 0")
        c = int(count.get())
        h = x.get()
        assert c == (h % 3 == 0).sum() and (t.get()[:c] == h[h % 3 == 0]).all()
        assert (f.get()[:101 - c] == h[h % 3 != 0]).all()


def test_a_predicate_that_does_not_compile_raises_the_compilers_error(queue):
    """A compiler error is not a crash: the verdict lets this process build it, which raises
    the compiler's words as pyopencl's copy_if does."""
    x = cla.to_device(queue, np.arange(10, dtype=np.float32))
    with pytest.raises(Exception, match="no_such_name"):
        cltune.copy_if(x, "ary[i] > no_such_name")


def test_the_vetting_input_is_the_calls_own_data(queue, monkeypatch):
    """An extra array larger than VET_EXTRA_BYTES is copied in part (never fewer elements
    than the array vetted on); the array itself its first VET_ELEMENTS."""
    monkeypatch.setattr(compact, "VET_EXTRA_BYTES", 4096)
    x = cla.to_device(queue, np.arange(30000, dtype=np.float32))
    big = cla.to_device(queue, np.arange(40000, dtype=np.int32))
    data, values = compact._sample(x, [("big", big), ("s", np.float32(2))])
    assert data.size == compact.VET_ELEMENTS and data[-1] == compact.VET_ELEMENTS - 1
    assert values[0].size == compact.VET_ELEMENTS and values[1] == np.float32(2)
    small = cla.to_device(queue, np.arange(7, dtype=np.float64))
    data, values = compact._sample(x[:5], [("small", small)])
    assert data.tolist() == [0, 1, 2, 3, 4] and values[0].tolist() == list(range(7))
