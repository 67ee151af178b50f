"""Builds without the driver's optimizer, for the tests that check the product of a space's
fields (every combination), beyond the per-field checks that build optimized.

`-cl-opt-disable` is half of a build on a CPU driver (Debian's PoCL: the whole axis space's
product 134 s -> ~70 s a dtype) and cannot change an answer these tests check: OpenCL C may not
reassociate floating point without -cl-fast-relaxed-math or -cl-unsafe-math-optimizations, so
the order of the operations, which is all the accuracy depends on, is the source's. A context
of its own keeps the process's build caches (per context) from handing these builds to
another test; every build's options are read back from the program and checked.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType

import pyopencl as cl
import pytest

UNOPTIMIZED = "-cl-opt-disable"


@contextmanager
def unoptimized_builds(dev: cl.Device, monkeypatch: pytest.MonkeyPatch,
                       *modules: ModuleType) -> Iterator[tuple[cl.Context, cl.CommandQueue]]:
    """(context, queue) of a new context whose builds through `modules`' compile_program
    pass -cl-opt-disable; on exit, every such build is checked to have had it."""
    built: list[str] = []
    for mod in modules:
        real = mod.compile_program

        def compile_unoptimized(ctx, dev, source, options, real=real):
            prg = real(ctx, dev, source, [*options, UNOPTIMIZED])
            built.append(prg.get_build_info(dev, cl.program_build_info.OPTIONS))
            return prg

        monkeypatch.setattr(mod, "compile_program", compile_unoptimized)
    ctx = cl.Context([dev])
    yield ctx, cl.CommandQueue(ctx, dev)
    assert all(UNOPTIMIZED in opts for opts in built), built[:3]
