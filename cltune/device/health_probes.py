"""The health check's probe kernels, run inside the evaluation worker (`worker_main`): each
returns '' when the device built, launched and answered right, else why not. A crash or a
hang ends the worker, and `health.py` names it.

- `tree`: a local-memory tree with barriers over a prime number of integers (every strategy
  relies on it); its source comes from `health.PROBE_SRC`, sent with the request.
- `vec512`: 512-bit vectors handed to builtins (`convert_`, `vload`, `fmax`/`max`) for each
  lane type: where LLVM compiles for a CPU without AVX-512 but the runtime links an AVX-512
  builtin library (pyopencl's bundled PoCL 3.0 on AMD Zen 4), exactly these abort, segfault,
  hang or answer wrong.
- `expressions`: what a `cltune.ReductionKernel` serves untuned, whole and along both axes, for
  float32, int32, int64 and float64 (the expression families' builtin or derived configs).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from cltune.core import family
from cltune.device.info import DeviceInfo
from cltune.opencl.errors import compiler_message, one_line

PROBE_N = 1031  # prime: no multiple of any work-group size


def tree(ctx: cl.Context, queue: cl.CommandQueue, dev: cl.Device, info: DeviceInfo,
         src: str = "") -> str:
    wg = 1 << (min(64, int(dev.max_work_group_size)).bit_length() - 1)
    x = (np.arange(PROBE_N, dtype=np.int32) * 7919) % 1009 - 500
    mf = cl.mem_flags
    xb = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=x)
    ob = cl.Buffer(ctx, mf.READ_WRITE, 4)
    try:
        knl = cl.Program(ctx, src).build().cltune_probe
        knl(queue, (wg,), (wg,), xb, ob, cl.LocalMemory(4 * wg), np.int32(PROBE_N))
        got = np.full(1, -1, np.int32)
        cl.enqueue_copy(queue, got, ob)
        queue.finish()
    except cl.Error as e:
        if e.code == cl.status_code.BUILD_PROGRAM_FAILURE:
            return compiler_message(str(e)) or one_line(e)
        return one_line(e)
    want = int(x.sum())
    if int(got[0]) != want:
        return f"probe kernel gave a wrong answer ({int(got[0])} instead of {want})"
    return ""


VEC_SRC = r"""
#ifdef CLT_FP64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif
#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)
#define VT CAT(T, W)
kernel void cltune_vec(global const T *x, global T *out, uint n) {
    VT acc = (VT)(0), top = CAT(vload, W)(0, x);
    for (uint i = 0; i + W <= n; i += W) {
        VT v = CAT(convert_, VT)(CAT(vload, W)(0, x + i));
        acc += v;
        top = MAXF(top, v);
    }
    CAT(vstore, W)(acc, 0, out);
    CAT(vstore, W)(top, 0, out + W);
}
"""
#: (OpenCL type, lanes of 512 bits, numpy type, max builtin)
VEC_TYPES = (("float", 16, np.float32, "fmax"), ("int", 16, np.int32, "max"),
             ("double", 8, np.float64, "fmax"), ("long", 8, np.int64, "max"))


def vec512(ctx: cl.Context, queue: cl.CommandQueue, dev: cl.Device, info: DeviceInfo,
           src: str = "") -> str:
    for cl_type, lanes, np_type, maxf in VEC_TYPES:
        if np_type == np.float64 and not info.fp64:
            continue
        n = lanes * 7
        x = ((np.arange(n) * 37) % 23 - 11).astype(np_type)
        opts = [f"-DT={cl_type}", f"-DW={lanes}", f"-DMAXF={maxf}"]
        if np_type == np.float64:
            opts.append("-DCLT_FP64=1")
        mf = cl.mem_flags
        xb = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=x)
        got = np.zeros(2 * lanes, np_type)
        ob = cl.Buffer(ctx, mf.READ_WRITE, got.nbytes)
        try:
            knl = cl.Program(ctx, VEC_SRC).build(options=opts).cltune_vec
            knl(queue, (1,), (1,), xb, ob, np.uint32(n))
            cl.enqueue_copy(queue, got, ob)
            queue.finish()
        except cl.Error as e:
            return f"{cl_type}{lanes}: {compiler_message(str(e)) or one_line(e)}"
        rows = x.reshape(-1, lanes)
        want = np.concatenate([rows.sum(axis=0), rows.max(axis=0)]).astype(np_type)
        if not np.array_equal(got, want):
            return f"{cl_type}{lanes}: wrong answer"
    return ""


def expressions(ctx: cl.Context, queue: cl.CommandQueue, dev: cl.Device, info: DeviceInfo,
                src: str = "") -> str:
    """What a `cltune.ReductionKernel` serves untuned (its builtin or derived config), whole
    and along both axes, per dtype class, against numpy."""
    # lazy: the runtime's modules import devices, which import health (the worker only)
    ReductionKernel = family.entry("expr", "api").ReductionKernel  # noqa: N806

    rng = np.random.default_rng(7)
    for dt in ("float32", "int32", "int64") + (("float64",) if info.fp64 else ()):
        c = {"float32": "float", "int32": "int", "int64": "long", "float64": "double"}[dt]
        acc, acc_c = (np.dtype(dt), c) if dt.startswith("float") else (np.int64, "long")
        knl = ReductionKernel(ctx, acc, "0", "a+b", f"({acc_c})x[i]", f"__global const {c} *x")
        x = (rng.random((1009, 37)) * 100).astype(dt)
        xd = cla.to_device(queue, x)
        for axis in (None, 0, 1):
            got = knl(xd, axis=axis).get() if axis is not None else knl(xd).get()
            ref = x.astype(np.float64 if dt.startswith("float") else np.int64).sum(axis=axis)
            tol = 1e-4 if dt == "float32" else 1e-12 if dt == "float64" else 0
            if not np.allclose(got, ref, rtol=tol, atol=0):
                return f"expression sum of {dt} along axis {axis}: wrong answer"
    return ""


PROBES: dict[str, Callable[..., str]] = {"tree": tree, "vec512": vec512,
                                         "expressions": expressions}
