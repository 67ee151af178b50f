"""cltune.opencl.host_part: the enqueue stub that `cltune bench` and scripts/call_floor.py
measure the host part of a call with (issue 39 item 3), and the rule that makes it safe: host
parts are measured last and followed by `clear_caches()`, after which calls answer right."""

from __future__ import annotations

import numpy as np
import pyopencl as cl
import pyopencl._cl as _cl
import pyopencl.array as cla
import pytest

import cltune
from cltune.cli.bench import host_parts
from cltune.cli.bench_cases import Case
from cltune.opencl.host_part import enqueue_floor, measure, stubbed_enqueue


def test_the_stub_counts_answers_done_and_puts_the_entry_points_back(queue):
    saved = (cl.enqueue_nd_range_kernel, _cl.enqueue_nd_range_kernel)
    r = cltune.get_reducer(queue, "sum", np.float32)
    x = cla.to_device(queue, np.arange(5000, dtype=np.float32))
    assert float(r(x).get()) == 5000 * 4999 / 2
    count = [0]
    with pytest.raises(RuntimeError, match="inside"):
        with stubbed_enqueue(queue, count):
            assert cl.enqueue_nd_range_kernel is not saved[0]
            res = r(x)
            assert count[0] >= 1  # one or two passes
            res.finish()  # its event: a completed marker
            raise RuntimeError("inside")
    assert (cl.enqueue_nd_range_kernel, _cl.enqueue_nd_range_kernel) == saved
    assert float(r(x).get()) == 5000 * 4999 / 2  # real launches again


def test_measure_and_the_floor_give_positive_figures(queue):
    r = cltune.get_reducer(queue, "sum", np.float32)
    x = cla.to_device(queue, np.ones((30, 40), np.float32))
    r(x, axis=1).get()
    part = measure(lambda: r(x, axis=1), queue, calls=20, blocks=3)
    assert part.us > 0 and part.launches in (1.0, 2.0), part
    floor = enqueue_floor(queue, calls=20, blocks=3)
    assert floor.us > 0 and floor.launches == 1.0
    assert np.array_equal(r(x, axis=1).get(), np.full(30, 40, np.float32))


def test_after_host_parts_a_scanner_answers_right_again(queue):
    """Stubbed scans move a chained scanner's ticket base on while no kernel takes tickets;
    host_parts ends with clear_caches(), so the next cumsum starts from a fresh state and
    answers like numpy (it would wait for tickets nobody takes otherwise)."""
    h = np.random.default_rng(4).random(300_001).astype(np.float32)
    x = cla.to_device(queue, h)
    want = np.cumsum(h.astype(np.float64))
    assert np.allclose(cltune.cumsum(x).get(), want, rtol=1e-4)
    case = Case("n = 300001", h.nbytes, "")
    case.__dict__["_host"] = lambda: cltune.cumsum(x)
    floor = host_parts(queue, [case])
    assert floor > 0 and case.host_us > 0 and case.launches >= 1, case
    assert "_host" not in case.__dict__
    for _ in range(3):
        assert np.allclose(cltune.cumsum(x).get(), want, rtol=1e-4)
