"""Smoke-check the OpenCL implementations that .ci/opencl-env.sh exposes.

Usage (after ``source .ci/opencl-env.sh``, with the venv's python):

    python .ci/check_opencl.py            # report only; exit 1 on a wrong result
    python .ci/check_opencl.py --require  # also exit 1 unless Debian's PoCL and
                                          # Intel's CPU runtime are present and
                                          # work, and pyopencl's bundled PoCL is
                                          # present (working or not)

For every device it builds and runs a local-memory tree reduction and checks
the sum; on devices with sub-groups (Intel's CPU runtime) it also runs a
``sub_group_reduce_add`` kernel. pyopencl's bundled PoCL 3.0-rc2 (LLVM 14)
cannot compile on CPUs newer than LLVM 14 knows ("unknown target CPU
'generic'", e.g. AMD Zen 4): that is reported and tolerated, since cltune
names such a device unusable and skips it.  It prints one line per platform/device with
the version strings that tell the two PoCLs apart:

    Portable Computing Language | OpenCL 3.0 PoCL 3.1+debian ...   (Debian)
    Portable Computing Language | OpenCL 3.0 PoCL 3.0-rc2 ...      (pyopencl[pocl])
    Intel(R) OpenCL             | OpenCL 3.1 LINUX                  (intel-opencl-rt)
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

import numpy as np
import pyopencl as cl

TREE_SRC = r"""
__kernel void wg_sum(__global const float *x, __global float *partial,
                     __local float *scratch, const int n) {
    int lid = get_local_id(0), gid = get_global_id(0);
    scratch[lid] = gid < n ? x[gid] : 0.0f;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = get_local_size(0) / 2; s > 0; s >>= 1) {
        if (lid < s) scratch[lid] += scratch[lid + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0) partial[get_group_id(0)] = scratch[0];
}
"""

# Intel's CPU runtime (2026.x) does not list cl_khr_subgroups (it has the
# OpenCL 3.0 feature __opencl_c_subgroups instead) and warns "unsupported
# OpenCL extension 'cl_khr_subgroups' - ignoring" on the pragma, so the pragma
# is only emitted when the extension is advertised.
SG_SRC = r"""
__kernel void sg_sum(__global const float *x, __global float *partial, const int n) {
    int gid = get_global_id(0);
    float v = gid < n ? x[gid] : 0.0f;
    float s = sub_group_reduce_add(v);
    if (get_sub_group_local_id() == 0)
        partial[get_group_id(0) * get_num_sub_groups() + get_sub_group_id()] = s;
}
"""



def partials_sum_ok(q, buf, count: int, ref: float) -> tuple[bool, float]:  # noqa: ANN001
    """Read `count` float32 partials back; (their sum is within 1e-4 of ref, the sum)."""
    part = np.empty(count, np.float32)
    cl.enqueue_copy(q, part, buf)
    q.finish()
    total = float(part.sum())
    return abs(total - ref) <= 1e-4 * ref, total

#: must be present and work; OPTIONAL must be present but may fail to compile on this CPU
REQUIRED = {"pocl-debian", "intel"}
OPTIONAL = {"pocl-bundled"}


def classify(platform: cl.Platform) -> str:
    v = platform.version
    if "Oclgrind" in platform.name:
        return "oclgrind"
    if "Intel" in platform.name:
        return "intel"
    if "PoCL" in v:
        return "pocl-debian" if "debian" in v else "pocl-bundled"
    return "other"


def has_subgroups(dev: cl.Device) -> tuple[bool, bool]:
    """(supported, needs_pragma)."""
    exts = dev.extensions.split()
    if "cl_khr_subgroups" in exts:
        return True, True
    try:
        feats = dev.get_info(cl.device_info.OPENCL_C_FEATURES)
        names = {f[0] if isinstance(f, tuple) else getattr(f, "name", str(f)) for f in feats}
    except Exception:
        names = set()
    return "__opencl_c_subgroups" in names, False


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument(
        "--require",
        action="store_true",
        help="fail unless pocl-debian, pocl-bundled and intel are all present",
    )
    args = ap.parse_args()
    warnings.simplefilter("ignore", cl.CompilerWarning)

    print(f"OCL_ICD_VENDORS={os.environ.get('OCL_ICD_VENDORS')!r}")
    n, lsz = 100_003, 64
    gsz = (n + lsz - 1) // lsz * lsz
    x = np.random.default_rng(0).random(n, dtype=np.float32)
    ref = float(x.astype(np.float64).sum())
    seen: set[str] = set()
    broken: set[str] = set()
    ok = True
    for p in cl.get_platforms():
        kind = classify(p)
        seen.add(kind)
        print(f"platform [{kind}] {p.name!r} | {p.version} | {p.vendor}")
        for d in p.get_devices():
            print(
                f"  device {d.name!r} | {d.version} | driver {d.driver_version} | "
                f"{d.opencl_c_version} | type {cl.device_type.to_string(d.type)}"
            )
            ctx = cl.Context([d])
            q = cl.CommandQueue(ctx)
            mf = cl.mem_flags
            xb = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=x)
            t = time.perf_counter()
            try:
                prg = cl.Program(ctx, TREE_SRC).build()
            except cl.Error as e:
                lines = [ln for ln in str(e).splitlines() if "error" in ln.lower()]
                msg = lines[-1].strip() if lines else str(e).splitlines()[0]
                if kind in OPTIONAL:
                    print(f"    tree reduction: BUILD FAILED ({msg}): optional, tolerated")
                    seen.discard(kind)
                    broken.add(kind)
                    continue
                ok = False
                print(f"    tree reduction: BUILD FAILED ({msg})")
                continue
            pb = cl.Buffer(ctx, mf.READ_WRITE, size=4 * (gsz // lsz))
            prg.wg_sum(q, (gsz,), (lsz,), xb, pb, cl.LocalMemory(4 * lsz), np.int32(n))
            good, total = partials_sum_ok(q, pb, gsz // lsz, ref)
            ok &= good
            print(
                f"    tree reduction: {'OK' if good else 'WRONG'} "
                f"(sum {total:.3f}, expected {ref:.3f}, {time.perf_counter() - t:.2f}s)"
            )
            sg, pragma = has_subgroups(d)
            if not sg:
                print("    sub-group reduction: not supported by this device")
                if kind == "intel":
                    ok = False
                continue
            pragma_line = "#pragma OPENCL EXTENSION cl_khr_subgroups : enable\n"
            src = (pragma_line if pragma else "") + SG_SRC
            t = time.perf_counter()
            try:
                knl = cl.Program(ctx, src).build().sg_sum
                nsg = knl.get_sub_group_info(
                    d, cl.kernel_sub_group_info.SUB_GROUP_COUNT_FOR_NDRANGE, (lsz,)
                )
                sgsz = knl.get_sub_group_info(
                    d, cl.kernel_sub_group_info.MAX_SUB_GROUP_SIZE_FOR_NDRANGE, (lsz,)
                )
                pb2 = cl.Buffer(ctx, mf.READ_WRITE, size=4 * (gsz // lsz) * nsg)
                knl(q, (gsz,), (lsz,), xb, pb2, np.int32(n))
                good, _ = partials_sum_ok(q, pb2, (gsz // lsz) * nsg, ref)
                ok &= good
                print(
                    f"    sub-group reduction: {'OK' if good else 'WRONG'} (sub-group size "
                    f"{sgsz}, {nsg} per work-group, {time.perf_counter() - t:.2f}s)"
                )
            except cl.Error as e:
                ok = False
                print(f"    sub-group reduction: FAILED {e}")
    missing = (REQUIRED - seen) | (OPTIONAL - seen - broken)
    if missing:
        print(f"missing or not working: {sorted(missing)}")
        if args.require:
            ok = False
    if broken:
        print(f"present but unusable on this CPU (tolerated): {sorted(broken)}")
    print("check_opencl:", "OK" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
