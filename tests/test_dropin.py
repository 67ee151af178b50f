"""One switch for a whole pyopencl application (#42 item 2, cltune.dropin): within
`cltune.use_in_pyopencl()`, globally, by CLTUNE_PYOPENCL=1 or under `python -m cltune.dropin`,
pyopencl's reductions (ReductionKernel and the getters behind pyopencl.array's sum, dot, vdot,
min, max, subset_*, any, all) and scans are cltune's, with pyopencl's answers; the switch nests
and puts pyopencl's classes back."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pyopencl.algorithm as alg
import pyopencl.array as cla
import pyopencl.reduction as pred
import pyopencl.scan as pscan
import pytest

import cltune
from cltune.dropin import switch
from cltune.families.expr.api import ReductionKernel
from cltune.families.scan.generic import GenericScanKernel


def _theirs() -> dict[str, object]:
    return {"rk": pred.ReductionKernel, "scan": pscan.GenericScanKernel,
            "alg_scan": alg.GenericScanKernel, "radix": alg.RadixSort.__init__.__defaults__,
            "radix_class": alg.RadixSort,
            "inner": pscan.ScanTemplate.build_inner.__defaults__}


def test_the_switch_swaps_nests_and_restores():
    before = _theirs()
    assert not switch.is_on() and before["rk"] is not ReductionKernel
    outer = cltune.use_in_pyopencl()
    with outer:
        assert switch.is_on()
        assert pred.ReductionKernel is ReductionKernel
        assert pscan.GenericScanKernel is GenericScanKernel
        assert alg.GenericScanKernel is GenericScanKernel
        assert alg.RadixSort is cltune.RadixSort  # and one built before runs on our scan:
        assert GenericScanKernel in before["radix_class"].__init__.__defaults__
        with cltune.use_in_pyopencl():  # nested: the inner end keeps the outer block's swap
            pass
        assert pred.ReductionKernel is ReductionKernel
        with pytest.raises(RuntimeError, match="already entered"):
            outer.__enter__()
    assert _theirs() == before and not switch.is_on()
    with pytest.raises(TypeError, match="globally must be True or False"):
        cltune.use_in_pyopencl(globally=1)
    try:
        with cltune.use_in_pyopencl():
            raise KeyError("inside")
    except KeyError:
        pass
    assert _theirs() == before and not switch.is_on()

    @cltune.use_in_pyopencl()
    def inside(depth: int) -> bool:  # a decorated function, recursive: a block each call
        return switch.is_on() and (depth == 0 or inside(depth - 1))

    assert inside(2) and not switch.is_on() and _theirs() == before


def test_pyopencl_array_reductions_and_scans_run_on_cltune_with_pyopencls_answers(ctx, queue):
    """The getters pyopencl.array calls build cltune's kernels under the switch (their
    memoized kernels are dropped on the way in and out), and every answer is pyopencl's."""
    rng = np.random.default_rng(42)
    n = 100003
    host = {"x": rng.random(n).astype(np.float32), "y": rng.random(n).astype(np.float32),
            "z": (rng.random(n) + 1j * rng.random(n)).astype(np.complex64),
            "i": rng.integers(-100, 100, n).astype(np.int32),
            "lut": rng.integers(0, n, 999).astype(np.int32),
            "b": (rng.random(n) > 0.999).astype(np.int8)}

    def run():
        d = {k: cla.to_device(queue, v) for k, v in host.items()}
        x, y, z, i, lut, b = d["x"], d["y"], d["z"], d["i"], d["lut"], d["b"]
        return {"sum": cla.sum(x), "isum": cla.sum(i), "csum": cla.sum(z),
                "dot": cla.dot(x, y), "vdot": cla.vdot(z, z),
                "subset_dot": cla.subset_dot(lut, x, y),
                "min": cla.min(x), "imax": cla.max(i), "subset_min": cla.subset_min(lut, x),
                "subset_max": cla.subset_max(lut, i), "any": b.any(), "all": b.all(),
                "cumsum": cla.cumsum(i)}

    want = {k: v.get() for k, v in run().items()}
    with cltune.use_in_pyopencl():
        k = pred.get_sum_kernel(ctx, np.dtype(np.float32), np.dtype(np.float32))
        assert isinstance(k, ReductionKernel)
        got = {k: v.get() for k, v in run().items()}
    assert not isinstance(pred.get_sum_kernel(ctx, np.dtype(np.float32),
                                              np.dtype(np.float32)), ReductionKernel)
    for name, w in want.items():
        if w.dtype.kind in "iub":
            np.testing.assert_array_equal(got[name], w, err_msg=name)
        else:
            np.testing.assert_allclose(got[name], w, rtol=2e-5, err_msg=name)


def _python(code: str, env: dict[str, str] | None = None,
            args: list[str] | None = None) -> subprocess.CompletedProcess:
    e = dict(os.environ)
    e.pop(switch.ENV, None)
    e.update(env or {})
    return subprocess.run([sys.executable, *(args or ["-c", code])], capture_output=True,
                          text=True, env=e, timeout=120, cwd=os.path.dirname(__file__) or ".")


PROBE = textwrap.dedent("""
    import sys
    import pyopencl.reduction as pred
    print(pred.ReductionKernel.__module__, sys.argv[1:])
""")


def test_the_environment_variable_turns_it_on_for_the_process():
    on = _python("import cltune\n" + PROBE, {switch.ENV: "1"})
    assert on.returncode == 0 and on.stdout.startswith("cltune.families.expr.api"), on.stderr
    off = _python("import cltune\n" + PROBE, {switch.ENV: "0"})
    assert off.returncode == 0 and off.stdout.startswith("pyopencl.reduction"), off.stderr
    bad = _python("import cltune\n" + PROBE, {switch.ENV: "maybe"})
    assert bad.returncode == 0 and bad.stdout.startswith("pyopencl.reduction")
    assert "CLTUNE_PYOPENCL='maybe' is not 1/0" in bad.stderr
    # the switch cannot be made (here: pyopencl.algorithm unimportable): one warning, and
    # `import cltune` still works with pyopencl's own kernels
    broken = _python("import sys; sys.modules['pyopencl.algorithm'] = None\nimport cltune\n"
                     + PROBE, {switch.ENV: "1"})
    assert broken.returncode == 0 and broken.stdout.startswith("pyopencl.reduction"), \
        broken.stderr
    assert "CLTUNE_PYOPENCL is set but pyopencl's kernels stay pyopencl's" in broken.stderr
    assert "Traceback" not in broken.stderr


def test_an_unchanged_script_runs_under_python_m_cltune_dropin(tmp_path):
    app = tmp_path / "app.py"
    app.write_text(PROBE)
    res = _python("", args=["-m", "cltune.dropin", str(app), "--flag", "x"])
    assert res.returncode == 0, res.stderr
    assert res.stdout.split()[0] == "cltune.families.expr.api" and "'--flag', 'x'" in res.stdout
    missing = _python("", args=["-m", "cltune.dropin", str(tmp_path / "nope.py")])
    assert missing.returncode == 2 and "no such script" in missing.stderr
    usage = _python("", args=["-m", "cltune.dropin"])
    assert usage.returncode == 2 and "usage: python -m cltune.dropin" in usage.stderr
    (tmp_path / "appmod.py").write_text(PROBE)
    mod = _python("", args=["-m", "cltune.dropin", "-m", "appmod", "a"],
                  env={"PYTHONPATH": str(tmp_path)})
    assert mod.returncode == 0 and mod.stdout.split()[0] == "cltune.families.expr.api", \
        mod.stderr
