"""Caches belong to a context and go with it; nothing caches GiB-sized inputs; importing the
library leaves logging and warnings alone (the CLI's `main` sets them)."""

from __future__ import annotations

import gc
import subprocess
import sys
import weakref

import numpy as np
import pyopencl as cl
import pyopencl.array as cla
import pytest

from cltune import clear_caches, get_reducer
from cltune.core.inputs import CACHE_INPUT_BYTES, make_input
from cltune.core.ops import OpSpec
from cltune.families.reduce.api import engine_contexts
from cltune.families.reduce.config import Config
from cltune.families.reduce.launch import Launcher
from cltune.families.reduce.reference import run_once


def _refs(watch: cl.Context) -> int:
    gc.collect()
    return watch.reference_count


def test_builds_are_released_with_their_context(device):
    info, dev = device
    ctx = cl.Context([dev])
    gone = weakref.ref(ctx)
    watch = cl.Context.from_int_ptr(ctx.int_ptr)  # a second handle that only counts
    base = _refs(watch)
    q = cl.CommandQueue(ctx, dev)
    la = Launcher(ctx, dev, info, OpSpec("sum", "float32"), Config("serial", 8, 0, 2, 4, 2, 2))
    assert run_once(la, q, make_input(OpSpec("sum", "float32"), 1000)) is not None
    counted = _refs(watch) > base  # PoCL counts what holds the context; NVIDIA's driver not
    del la, q, ctx
    gc.collect()
    assert gone() is None, "cltune still holds the Context object"
    if counted:
        assert _refs(watch) == base - 1, "the context's programs and buffers were not released"


def test_reducer_engines_are_released(device):
    _, dev = device
    ctx = cl.Context([dev])
    watch = cl.Context.from_int_ptr(ctx.int_ptr)
    base = _refs(watch)
    q = cl.CommandQueue(ctx, dev)
    r = get_reducer(q)
    x = cla.to_device(q, np.ones(5000, np.float32))
    assert r(x).get() == 5000
    assert get_reducer(q)(x).get() == 5000
    counted = _refs(watch) > base
    ptr = ctx.int_ptr
    assert ptr in engine_contexts()
    del r, x, q, ctx
    clear_caches()
    gc.collect()
    assert ptr not in engine_contexts(), "the runtime still holds an engine of the context"
    if counted:
        assert _refs(watch) == base - 1, "the runtime still holds the context"


def test_big_inputs_are_not_cached():
    spec = OpSpec("sum", "float32")
    small = 1000
    big = CACHE_INPUT_BYTES // spec.itemsize + 1
    assert make_input(spec, small) is make_input(spec, small)
    a, b = make_input(spec, big), make_input(spec, big)
    assert a is not b and np.array_equal(a[0], b[0])  # same values, not kept alive


@pytest.mark.multiprocess
def test_importing_the_library_leaves_logging_and_warnings_alone():
    code = ("import logging, warnings, numpy, pyopencl, optuna, sqlalchemy; "
            "log = logging.getLogger('optuna'); "
            "before = (list(warnings.filters), log.level, log.propagate, list(log.handlers)); "
            "import cltune, cltune.tuning.tuner, cltune.cli.service; "
            "after = (list(warnings.filters), log.level, log.propagate, list(log.handlers)); "
            "assert after == before, (before, after); "
            "print('ok')")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


def test_clear_caches_clears_every_familys_builds(queue):
    """`cltune.clear_caches()` reaches every per-context cache: the 1-D, axis, expression and
    statistics builds alike (one registry, opencl/caches.py)."""
    from cltune import ReductionKernel, argmax
    from cltune.opencl.caches import ContextCache

    x = cla.to_device(queue, np.arange(6 * 37, dtype=np.float32).reshape(6, 37))
    get_reducer(queue)(x.reshape(-1))
    get_reducer(queue)(x, axis=1)
    argmax(x)
    ReductionKernel(queue.context, np.float32, "0", "a+b", "x[i]",
                    "__global const float *x")(x.reshape(-1))
    holding = [c for c in ContextCache.instances if queue.context in c.contexts()]
    assert len(holding) >= 3, "the families' builds are not in ContextCaches"
    clear_caches()
    assert not [c for c in ContextCache.instances if c.contexts()]
