"""cltune.tune_kernel / run_kernel / PythonKernel (#45): Kernel Tuner's OpenCL examples with
only the import changed (at shrunk sizes), each option, each kind of failure, the cache file,
the database and the runtime lookup."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest
from support.faults import injected

import cltune
from cltune.core.serving import CltuneWarning
from cltune.user.cachefile import CacheFileError
from cltune.user.run import KernelRunError
from cltune.user.source import KernelSourceError

DATA = Path(__file__).parent / "data" / "kernel_tuner"

VECTOR_ADD = """
__kernel void vector_add(__global float *c, __global const float *a, __global const float *b,
                         int n) {
    int i = get_global_id(0);
    if (i<n) {
        c[i] = a[i] + b[i];
    }
}
"""
KT_KEYS = ["time", "times", "compile_time", "verification_time", "benchmark_time", "timestamp",
           "strategy_time", "framework_time"]


def _vadd(n=10007, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.random(n, dtype=np.float32)
    b = rng.random(n, dtype=np.float32)
    return [np.zeros_like(a), a, b, np.int32(n)], a + b


def test_vector_add_as_in_kernel_tuners_readme(device, db_url):
    args, want = _vadd()
    tune_params = {"block_size_x": [32, 64, 128, 256]}
    results, env = cltune.tune_kernel("vector_add", VECTOR_ADD, 10007, args, tune_params,
                                      device=device[1], answer=[want, None, None, None],
                                      db=db_url, quiet=True)
    assert [r["block_size_x"] for r in results] == [32, 64, 128, 256]  # Kernel Tuner's order
    for r in results:
        assert list(r)[:1] == ["block_size_x"] and all(k in r for k in KT_KEYS)
        assert len(r["times"]) == 7 and r["time"] == pytest.approx(np.mean(r["times"]))
        assert r["compile_time"] > 0 and r["verification_time"] > 0
    assert env["best_config"]["time"] == min(r["time"] for r in results)
    assert env["device_name"] == device[1].name and env["iterations"] == 7
    assert env["failed"] == [] and env["searchspace_size"] == 4
    for k in ("platform_name", "platform_version", "device_version", "opencl_c_version",
              "driver_version", "compiler_options", "total_compile_time", "overhead_time"):
        assert k in env


def test_convolution_with_its_naive_kernel_as_the_answer(device):
    """Kernel Tuner's convolution_correct example, 64x48 instead of 4096x4096."""
    src = DATA / "convolution.cl"
    opts = ["-Dimage_height=48", "-Dimage_width=64"]
    problem_size = (64, 48)
    size = int(np.prod(problem_size))
    input_size = (problem_size[0] + 16) * (problem_size[1] + 16)
    rng = np.random.default_rng(1)
    output = np.zeros(size).astype(np.float32)
    inp = rng.standard_normal(input_size).astype(np.float32)
    filt = rng.standard_normal(17 * 17).astype(np.float32)
    args = [output, inp, filt]
    ref = cltune.run_kernel("convolution_naive", str(src), problem_size, args,
                            {"block_size_x": 16, "block_size_y": 16},
                            grid_div_y=["block_size_y"], grid_div_x=["block_size_x"],
                            compiler_options=opts, device=device[1])
    assert len(ref) == 3 and ref[0].any()
    # the naive kernel against numpy
    img = inp.reshape(problem_size[1] + 16, problem_size[0] + 16)
    want = np.zeros((48, 64))
    for j in range(17):
        for i in range(17):
            want += img[j:j + 48, i:i + 64].astype(np.float64) * filt[j * 17 + i]
    np.testing.assert_allclose(ref[0].reshape(48, 64), want, rtol=1e-4, atol=1e-3)
    # 8 points: every build unrolls the 17x17 filter (1-2 s each on PoCL)
    tune_params = {"block_size_x": [16, 32], "block_size_y": [2, 4], "tile_size_x": [1, 2],
                   "tile_size_y": [2]}
    results, env = cltune.tune_kernel("convolution_kernel", str(src), problem_size, args,
                                      tune_params, grid_div_y=["block_size_y", "tile_size_y"],
                                      grid_div_x=["block_size_x", "tile_size_x"],
                                      answer=[ref[0], None, None], atol=1e-3,
                                      compiler_options=opts, device=device[1], db=False,
                                      quiet=True)
    assert len(results) + env["failed_count"] == 8
    assert env["failed"] == [], env["failed"]


def test_matmul_with_its_restriction_answer_and_metrics(device, db_url):
    w = 64
    rng = np.random.default_rng(2)
    a = rng.standard_normal((w, w)).astype(np.float32)
    b = rng.standard_normal((w, w)).astype(np.float32)
    c = np.zeros_like(a)
    tune_params = {"block_size_x": [16, 32], "block_size_y": [1, 2, 4, 8, 16, 32],
                   "tile_size_x": [1, 2], "tile_size_y": [1, 2, 4]}
    metrics = {"GFLOP/s": lambda p: (2 * w ** 3 / 1e9) / (p["time"] / 1e3)}
    res, env = cltune.tune_kernel("matmul_kernel", str(DATA / "matmul.cl"), (w, w), [c, a, b],
                                  tune_params, grid_div_y=["block_size_y", "tile_size_y"],
                                  grid_div_x=["block_size_x", "tile_size_x"],
                                  restrictions=["block_size_x==block_size_y*tile_size_y"],
                                  answer=[a @ b, None, None], atol=1e-3, metrics=metrics,
                                  objective="GFLOP/s", compiler_options=[f"-DWIDTH={w}"],
                                  device=device[1], db=db_url, quiet=True)
    assert res and all(r["block_size_x"] == r["block_size_y"] * r["tile_size_y"] for r in res)
    assert env["searchspace_size"] == 2 * 2 * 3 - 2 + 2  # bx = by * ty: 6 of the 24 points
    assert all("GFLOP/s" in r for r in res)
    assert env["best_config"]["GFLOP/s"] == max(r["GFLOP/s"] for r in res)
    assert env["objective"] == "GFLOP/s" and env["objective_higher_is_better"] is True


def test_stencil_on_a_2d_grid(device):
    problem_size = (64, 32)
    x_old = np.random.default_rng(3).standard_normal(64 * 32).astype(np.float32)
    x_new = np.copy(x_old)
    g = x_old.reshape(32, 64).astype(np.float64)
    want = x_old.reshape(32, 64).copy()
    want[1:-1, 1:-1] = ((g[1:-1, 1:-1] + g[1:-1, :-2] + g[1:-1, 2:] + g[2:, 1:-1] + g[:-2, 1:-1])
                        / 5.0)
    tune_params = {"block_size_x": [32, 64], "block_size_y": [1, 2, 4]}
    res, env = cltune.tune_kernel("stencil_kernel", str(DATA / "stencil.cl"), problem_size,
                                  [x_new, x_old], tune_params, grid_div_x=["block_size_x"],
                                  grid_div_y=["block_size_y"], answer=[want.ravel(), None],
                                  atol=1e-5, compiler_options=["-Ddomain_width=64",
                                                               "-Ddomain_height=32"],
                                  device=device[1], db=False, quiet=True)
    assert len(res) == 6 and not env["failed"]


def test_reduction_with_a_parameter_as_the_problem_size_and_its_own_verify(device):
    size = 80000
    x = np.random.default_rng(4).random(size).astype(np.float32)
    tune_params = {"block_size_x": [32, 64], "vector": [1, 2, 4], "num_blocks": [32, 64],
                   "loop_unroll_factor": [0, 8]}
    sum_x = np.zeros(max(tune_params["num_blocks"])).astype(np.float32)

    def verify_partial_reduce(cpu_result, gpu_result, atol=None):
        return np.isclose(cpu_result[0], np.sum(gpu_result[0]), atol=atol)

    res, env = cltune.tune_kernel("sum_floats", str(DATA / "reduction.cl"), "num_blocks",
                                  [sum_x, x, np.int32(size)], tune_params, grid_div_x=[],
                                  answer=[np.sum(x), None, None], atol=1e-1,
                                  verify=verify_partial_reduce, device=device[1], db=False,
                                  quiet=True)
    # `#pragma unroll 0` (Kernel Tuner's example tunes it) is refused by PoCL's clang: those
    # twelve are failed builds there, and the search went on; Intel's compiler takes them
    assert sum(r["loop_unroll_factor"] == 8 for r in res) == 12
    assert len(res) + len(env["failed"]) == 24
    assert {(f["loop_unroll_factor"], f["step"]) for f in env["failed"]} <= {(0, "build")}
    if device[1].platform.name.lower() == "portable computing language":
        assert len(res) == 12 and len(env["failed"]) == 12
    # one launch per config: global size = num_blocks * block_size_x, 1-D
    assert {(r["num_blocks"], r["block_size_x"]) for r in res} == {
        (nb, bx) for nb in (32, 64) for bx in (32, 64)}

    def first_32_blocks(cpu_result, gpu_result, atol=None):  # wrong where 64 blocks ran
        return np.isclose(cpu_result[0], np.sum(gpu_result[0][:32]), atol=atol)

    res, env = cltune.tune_kernel("sum_floats", str(DATA / "reduction.cl"), "num_blocks",
                                  [sum_x, x, np.int32(size)],
                                  {**tune_params, "loop_unroll_factor": [8]}, grid_div_x=[],
                                  answer=[np.sum(x), None, None], atol=1e-1,
                                  verify=first_32_blocks, device=device[1], db=False,
                                  quiet=True)
    assert {r["num_blocks"] for r in res} == {32}
    assert {(f["num_blocks"], f["step"]) for f in env["failed"]} == {(64, "validate")}
    assert "verify returned False" in env["failed"][0]["reason"]


FAULTY = """
__kernel void k(__global float *c, __global const float *a, int n) {
#if block_size_x == 64
    this does not compile;
#endif
    int i = get_global_id(0);
    if (i < n) c[i] = (block_size_x == 128 && i == 5) ? -1.0f : 2.0f * a[i];
}
"""


@pytest.mark.parametrize("prebuild", ["0", "1"], ids=["alone", "next-built-ahead"])
def test_every_kind_of_failure_is_a_failed_config_and_the_search_goes_on(device, monkeypatch,
                                                                          tmp_path, prebuild):
    """Also with the next config built in a thread while one is checked and timed (what
    GPUs do): a build error found ahead is still that config's, a crash still its own."""
    monkeypatch.setenv("CLTUNE_KERNEL_PREBUILD", prebuild)
    n = 1000
    a = np.arange(n, dtype=np.float32)
    args = [np.zeros(n, np.float32), a, np.int32(n)]
    with injected(monkeypatch, tmp_path, "abort:family=kernel,block_size_x=16;"
                                         "hang:family=kernel,block_size_x=8;"
                                         "segv:family=kernel,block_size_x=512;"
                                         "wrong:family=kernel,block_size_x=256"):
        monkeypatch.setenv("CLTUNE_DEADLINE_S", "3")
        from cltune.user import session
        monkeypatch.setattr(session.Session, "deadline", lambda self: 3.0)
        res, env = cltune.tune_kernel("k", FAULTY, n, args,
                                      {"block_size_x": [8, 16, 32, 64, 128, 256, 512,
                                                        1024]},
                                      answer=[2 * a, None, None], device=device[1], db=False,
                                      quiet=True)
    assert [r["block_size_x"] for r in res] == [32, 1024]
    why = {f["block_size_x"]: (f["step"], f["__error__"], f["reason"]) for f in env["failed"]}
    assert set(why) == {8, 16, 64, 128, 256, 512} and env["failed_count"] == 6
    assert why[512][0] == "crashed" and "SIGSEGV" in why[512][2]
    assert why[256][0] == "validate" and "injected" in why[256][2]
    assert why[8][0] == "hung" and "no answer" in why[8][2]
    assert why[16][0] == "crashed" and "SIGABRT" in why[16][2]
    assert why[64][:2] == ("build", "CompileError") and "build failed" in why[64][2]
    assert why[128][0] == "validate" and "index 5" in why[128][2]


def test_a_missing_kernel_name_and_bad_input_are_one_clear_error(device):
    args, _ = _vadd(100)
    with pytest.raises(KernelSourceError, match="no kernel named 'vector_sub'"):
        cltune.tune_kernel("vector_sub", VECTOR_ADD, 100, args, {"block_size_x": [32]},
                           device=device[1], db=False, quiet=True)
    with pytest.raises(TypeError, match="should be of type np.ndarray"):
        cltune.tune_kernel("vector_add", VECTOR_ADD, 100, [*args[:3], 100],
                           {"block_size_x": [32]}, device=device[1], db=False, quiet=True)
    with pytest.raises(TypeError, match="do not match"):
        cltune.tune_kernel("vector_add", VECTOR_ADD, 100, args, {"block_size_x": [32]},
                           answer=[None], device=device[1], db=False, quiet=True)
    with pytest.raises(ValueError, match="Unkown strategy"):
        cltune.tune_kernel("vector_add", VECTOR_ADD, 100, args, {"block_size_x": [32]},
                           strategy="nope", device=device[1], db=False, quiet=True)
    with pytest.raises(ValueError, match="Unrecognized option"):
        cltune.tune_kernel("vector_add", VECTOR_ADD, 100, args, {"block_size_x": [32]},
                           strategy="random_sample", strategy_options={"bogus": 1},
                           device=device[1], db=False, quiet=True)
    with pytest.raises(ValueError, match="forbidden name"):
        cltune.tune_kernel("vector_add", VECTOR_ADD, 100, args, {"time": [32]},
                           device=device[1], db=False, quiet=True)
    with pytest.raises(ValueError, match="OpenCL"):
        cltune.tune_kernel("vector_add", VECTOR_ADD, 100, args, {"block_size_x": [32]},
                           lang="CUDA", device=device[1], db=False, quiet=True)
    with pytest.raises(NotImplementedError, match="constant memory"):
        cltune.tune_kernel("vector_add", VECTOR_ADD, 100, args, {"block_size_x": [32]},
                           cmem_args={}, device=device[1], db=False, quiet=True)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        cltune.tune_kernel("vector_add", VECTOR_ADD, 100,
                           [args[0], args[1].astype(np.float64), args[2], args[3]],
                           {"block_size_x": [32]}, device=device[1], db=False, quiet=True)
    assert any("does not match" in str(x.message) for x in w)


def _vadd_generator(params):
    """Kernel Tuner's vector_add_codegen example's generator (the block size in the text)."""
    return """
    __kernel void vector_add(__global float *c, __global const float *a,
                             __global const float *b, int n) {
        int i = get_local_id(0) + get_group_id(0) * %s;
        if (i<n) {
            c[i] = a[i] + b[i];
        }
    }
    """ % params["block_size_x"]  # noqa: UP031 - the example's own formatting


def test_a_code_generator_as_kernel_tuners_vector_add_codegen(device, db_url):
    """kernel_source a function of the params (Kernel Tuner's vector_add_codegen example, at
    10007 elements): each config's text from it, checked, stored under the generator's own
    name; a generator that fails or returns no text is one clear error."""
    args, want = _vadd()
    tune_params = {"block_size_x": [64, 128, 192]}
    results, env = cltune.tune_kernel("vector_add", _vadd_generator, 10007, args, tune_params,
                                      lang="OpenCL", device=device[1],
                                      answer=[want, None, None, None], db=db_url, quiet=True)
    assert [r["block_size_x"] for r in results] == [64, 128, 192] and env["failed"] == []
    # (a wrong block size in the text would index past the answer: verified per config)
    k = cltune.PythonKernel("vector_add", _vadd_generator, 10007, args, device=device[1],
                            db=db_url)
    assert k.params["block_size_x"] == env["best_config"]["block_size_x"]
    with pytest.raises(KernelSourceError, match="the code generator failed for"):
        cltune.tune_kernel("vector_add", lambda p: 1 / 0, 100, _vadd(100)[0],
                           {"block_size_x": [32]}, device=device[1], db=False, quiet=True)
    with pytest.raises(KernelSourceError, match="not a kernel's text"):
        cltune.tune_kernel("vector_add", lambda p: None, 100, _vadd(100)[0],
                           {"block_size_x": [32]}, device=device[1], db=False, quiet=True)


def test_observers_hook_every_timed_launch_and_feed_the_metrics(device):
    """Kernel Tuner's benchmark observers: their hooks around each timed launch (in the
    worker), get_results() in each result, the metrics reading it; an observer that raises
    fails its configs with the reason; anything else is one clear error."""

    class Counting:
        """A benchmark observer in Kernel Tuner's shape, counting its hooks per config
        (defined here: sent to the worker by value, as a script's own class is)."""

        def __init__(self):
            self.dev, self.params, self.seen = None, None, []

        def register_device(self, dev):
            self.dev = dev

        def register_configuration(self, params):
            self.params = params

        def before_start(self):
            self.seen.append("before")

        def after_finish(self):
            self.seen.append("after")

        def get_results(self):
            n = self.seen.count("after")
            self.seen = []
            return {"launches": n, "bx_seen": self.params["block_size_x"],
                    "device_known": int(self.dev is not None)}

    class Broken(Counting):
        def after_finish(self):
            raise RuntimeError("sensor unplugged")

    args, _ = _vadd(1000)
    results, env = cltune.tune_kernel(
        "vector_add", VECTOR_ADD, 1000, args, {"block_size_x": [32, 64]}, iterations=5,
        observers=[Counting()], metrics={"per_launch": lambda p: p["time"] / p["launches"]},
        device=device[1], db=False, quiet=True)
    for r in results:
        assert r["launches"] == 5 and r["bx_seen"] == r["block_size_x"]
        assert r["device_known"] == 1 and r["per_launch"] == pytest.approx(r["time"] / 5)
    results, env = cltune.tune_kernel(
        "vector_add", VECTOR_ADD, 1000, args, {"block_size_x": [32, 64]}, observers=[Broken()],
        device=device[1], db=False, quiet=True)
    assert results == [] and len(env["failed"]) == 2
    assert all("sensor unplugged" in f["reason"] for f in env["failed"]), env["failed"]
    with pytest.raises(ValueError, match="benchmark observers"):
        cltune.tune_kernel("vector_add", VECTOR_ADD, 1000, args, {"block_size_x": [32]},
                           observers=[object()], device=device[1], db=False, quiet=True)


RESTRICTED = {"block_size_x": [16, 32, 64], "tile": [1, 2, 4]}


@pytest.mark.parametrize("restriction", [
    "block_size_x*tile <= 64",
    ["block_size_x*tile <= 64", "tile != 3"],
    lambda p: p["block_size_x"] * p["tile"] <= 64,
    [lambda bx, t: bx * t <= 64],
    (lambda bx, t: bx * t <= 64, ["block_size_x", "tile"]),
], ids=["string", "list", "lambda", "values", "tuple"])
def test_restrictions_in_every_form(restriction):
    from cltune.user.space import Space

    s = Space(RESTRICTED, restriction, max_threads=None)
    assert [(c["block_size_x"], c["tile"]) for c in s.configs] == [
        (16, 1), (16, 2), (16, 4), (32, 1), (32, 2), (64, 1)]


def test_the_work_group_limit_removes_configs_silently():
    from cltune.user.space import Space

    s = Space({"block_size_x": [64, 128], "block_size_y": [1, 2, 4]}, None, max_threads=256)
    assert len(s) == 5 and s.removed_by_threads == 1


def test_kernel_tuners_defines_grid_and_problem_size_rules():
    from cltune.user import grid, source

    p = {"block_size_x": 128, "tile": 2}
    assert grid.grid_dims(grid.problem_dims(1000, p), p, (None, None, None)) == (8, 1, 1)
    assert grid.grid_dims(grid.problem_dims((1000, "tile*3"), p), p,
                          (["block_size_x", "tile"], None, None)) == (4, 6, 1)
    assert grid.grid_dims((1000, 1, 1), p, (lambda q: q["block_size_x"] / 2, None, None)) == (
        16, 1, 1)
    assert grid.grid_dims((1000, 1, 1), {"tile": 2}, (None, None, None)) == (1000, 1, 1)
    assert grid.block_dims({"tile": 2}) == (256, 1, 1)  # an untuned x: 256
    head = source.prefix(p, (8, 1, 1), (128, 1, 1))
    assert head.splitlines() == ["#define grid_size_x 8", "#define grid_size_y 1",
                                 "#define grid_size_z 1", "#define block_size_x 128",
                                 "#define block_size_y 1", "#define block_size_z 1",
                                 "#define tile 2", "#define kernel_tuner 1", "#line 1"]
    assert source.prefix(p, (8, 1, 1), (128, 1, 1), defines={}) == ""
    assert source.prefix(p, (8, 1, 1), (128, 1, 1), defines={"N": "tile*4", "M": lambda q: 7}) \
        == "#define N 2*4\n#define M 7\n#line 1\n"
    with pytest.raises(KernelSourceError, match="#define"):
        source.prefix({"x": "a\nb"}, (1, 1, 1), (1, 1, 1))
    assert source.looks_like_a_filename("k.cl") and not source.looks_like_a_filename("k.ocl")


def test_the_cache_file_is_kernel_tuners_and_a_rerun_measures_nothing(device, tmp_path):
    args, want = _vadd(5003)
    cache = tmp_path / "vadd"
    kw = dict(device=device[1], db=False, quiet=True, cache=str(cache))
    first, _ = cltune.tune_kernel("vector_add", VECTOR_ADD, 5003, args,
                                  {"block_size_x": [32, 64, 128]}, **kw)
    text = (tmp_path / "vadd.json").read_text()
    data = json.loads(text)
    assert text.endswith("}\n}") and data["kernel_name"] == "vector_add"
    assert data["tune_params_keys"] == ["block_size_x"] and data["objective"] == ["time"]
    assert set(data["cache"]) == {"32", "64", "128"}
    assert data["cache"]["64"]["times"] == first[1]["times"]
    again, _ = cltune.tune_kernel("vector_add", VECTOR_ADD, 5003, args,
                                  {"block_size_x": [32, 64, 128]}, **kw)
    assert [r["time"] for r in again] == [r["time"] for r in first]
    assert all(r["compile_time"] == 0 for r in again)
    # a file cut off mid-run (a killed process) is read and appended to
    (tmp_path / "vadd.json").write_text(text[:text.rindex('"128"')].rstrip() )
    more, _ = cltune.tune_kernel("vector_add", VECTOR_ADD, 5003, args,
                                 {"block_size_x": [32, 64, 128]}, **kw)
    assert [r["compile_time"] > 0 for r in more] == [False, False, True]
    assert set(json.loads((tmp_path / "vadd.json").read_text())["cache"]) == {"32", "64", "128"}
    with pytest.raises(CacheFileError, match="different kernel"):
        cltune.tune_kernel("vector_add2", VECTOR_ADD.replace("vector_add", "vector_add2"), 5003,
                           args, {"block_size_x": [32]}, **kw)
    with pytest.raises(CacheFileError, match="different tunable parameters"):
        cltune.tune_kernel("vector_add", VECTOR_ADD, 5003, args,
                           {"block_size_x": [32], "u": [1]}, **kw)


def test_strategies_keep_to_their_budget_and_find_the_best(device):
    args, _ = _vadd(3001)
    space = {"block_size_x": [16, 32, 64, 128], "u": [1, 2, 3, 4, 5]}
    kw = dict(device=device[1], db=False, quiet=True)
    res, env = cltune.tune_kernel("vector_add", VECTOR_ADD, 3001, args, space,
                                  strategy="random_sample", strategy_options={"fraction": 0.25},
                                  seed=1, **kw)
    assert len(res) == 5 and env["strategy"] == "random_sample"
    res2, _ = cltune.tune_kernel("vector_add", VECTOR_ADD, 3001, args, space,
                                 strategy="random_sample", strategy_options={"max_fevals": 3},
                                 seed=1, **kw)
    assert len(res2) == 3
    res3, env3 = cltune.tune_kernel("vector_add", VECTOR_ADD, 3001, args, space,
                                    strategy="genetic_algorithm",
                                    strategy_options={"max_fevals": 8, "popsize": 10}, seed=2,
                                    **kw)
    keys = [(r["block_size_x"], r["u"]) for r in res3]
    assert len(keys) == 8 == len(set(keys))


def test_the_database_serves_the_best_in_a_new_process(device, db_url, tmp_path):
    args, want = _vadd(20011)
    src = tmp_path / "vadd.cl"
    src.write_text(VECTOR_ADD)
    res, env = cltune.tune_kernel("vector_add", str(src), 20011, args,
                                  {"block_size_x": [32, 64, 128]}, answer=[want, None, None, None],
                                  device=device[1], db=db_url, quiet=True)
    best = env["best_config"]["block_size_x"]
    again, _ = cltune.tune_kernel("vector_add", str(src), 20011, args,
                                  {"block_size_x": [32, 64, 128]}, device=device[1], db=db_url,
                                  quiet=True)
    assert all(r.get("from_database") for r in again)  # a rerun resumes from the database
    script = textwrap.dedent(f"""
        import sys, warnings, numpy as np, pyopencl as cl
        import cltune
        dev = [d for p in cl.get_platforms() for d in p.get_devices()
               if d.name == {device[1].name!r}
               and d.platform.version == {device[1].platform.version!r}][0]
        n = int(sys.argv[1])
        a = np.arange(n, dtype=np.float32); b = np.ones(n, np.float32); c = np.zeros_like(a)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            k = cltune.PythonKernel("vector_add", {str(src)!r}, n, [c, a, b, np.int32(n)],
                                    device=dev, db={db_url!r})
        out = k(c, a, b, np.int32(n))
        assert np.array_equal(out[0], a + b)
        told = [x for x in w if "not tuned" in str(x.message)]
        print(k.params.get("block_size_x"), k.level, len(told))
        print(k.explain())
    """)
    for n, level in ((20011, "exact"), (777, "exact")):
        got = subprocess.run([sys.executable, "-c", script, str(n)], capture_output=True,
                             text=True, cwd=tmp_path, timeout=120)
        assert got.returncode == 0, got.stderr[-2000:]
        line, why = got.stdout.splitlines()[:2]
        assert line == f"{best} {level} 0", got.stdout
        assert ("nearest to 777" in why) == (n == 777)
    with pytest.warns(CltuneWarning, match="not tuned"):
        k = cltune.PythonKernel("vector_add", VECTOR_ADD + "\n", 100, args, device=device[1],
                                db=db_url)
    assert k.level == "defaults" and k.params == {}


def test_run_kernel_returns_every_argument(device):
    args, want = _vadd(999)
    out = cltune.run_kernel("vector_add", VECTOR_ADD, 999, args, {"block_size_x": 64},
                            device=device[1])
    assert np.array_equal(out[0], want) and out[3] == np.int32(999)
    assert np.array_equal(out[1], args[1]) and not args[0].any()  # the caller's arrays untouched
    with pytest.raises(KernelRunError, match="build|compile|BUILD"):
        cltune.run_kernel("vector_add", VECTOR_ADD.replace("a[i]", "a[i)"), 999, args,
                          {"block_size_x": 64}, device=device[1])


def test_show_export_and_import_know_kernel_results(device, db_url, tmp_path):
    from typer.testing import CliRunner

    from cltune.cli.app import app

    args, _ = _vadd(3001)
    _, env = cltune.tune_kernel("vector_add", VECTOR_ADD, 3001, args,
                                {"block_size_x": [32, 64]}, device=device[1], db=db_url,
                                quiet=True)
    r = CliRunner().invoke(app, ["show", "--db", db_url, "--json"])
    assert r.exit_code == 0, r.output
    rows = [x for x in json.loads(r.output) if x["family"] == "kernel"]
    assert [x["variant"] for x in rows] == [env["kernel_variant"]]
    assert rows[0]["size_class"] == "3001" and rows[0]["config"] == {
        "block_size_x": env["best_config"]["block_size_x"]}
    out = tmp_path / "ex.json"
    assert CliRunner().invoke(app, ["export", "--db", db_url, "-o", str(out)]).exit_code == 0
    other = f"sqlite:///{tmp_path / 'other.db'}"
    r = CliRunner().invoke(app, ["import", "--db", other, str(out)])
    assert r.exit_code == 0 and "1 new result" in r.output, r.output
    # a parameter value that could smuggle text to the compiler is refused, file and all
    data = json.loads(out.read_text())
    data["results"][0]["config"]["block_size_x"] = "1\n#include </etc/passwd>"
    out.write_text(json.dumps(data))
    r = CliRunner().invoke(app, ["import", "--db", f"sqlite:///{tmp_path / 'x.db'}", str(out)])
    assert r.exit_code != 0 and "block_size_x" in r.output and "Traceback" not in r.output


def test_python_kernel_launches_on_device_arrays_in_the_applications_context(device,
                                                                             db_url):
    import pyopencl as cl
    import pyopencl.array as cla

    args, want = _vadd(4099)
    cltune.tune_kernel("vector_add", VECTOR_ADD, 4099, args, {"block_size_x": [32, 64]},
                       device=device[1], db=db_url, quiet=True)
    ctx = cl.Context([device[1]])
    q = cl.CommandQueue(ctx)
    k = cltune.PythonKernel("vector_add", VECTOR_ADD, 4099, args, db=db_url, queue=q)
    assert k.level == "exact" and k.ctx == ctx
    c, a, b = (cla.to_device(q, v) for v in args[:3])
    gate = cl.UserEvent(ctx)
    ev = k.launch(c, a, b, np.int32(4099), wait_for=[gate])
    assert not c.get(queue=cl.CommandQueue(ctx)).any()  # gated: not run yet
    gate.set_status(cl.command_execution_status.COMPLETE)
    ev.wait()
    assert np.array_equal(c.get(), want)
    # a scalar that changes between warm launches is set again; new buffers each call
    c2 = cla.zeros_like(c)
    k.launch(c2, b, a, np.int32(100)).wait()
    got = c2.get()
    assert np.array_equal(got[:100], want[:100]) and not got[100:].any()
    k.launch(c2, a, b, np.int32(4099)).wait()
    assert np.array_equal(c2.get(), want)
    with pytest.raises(TypeError, match="takes 4 arguments"):
        k.launch(c2, a, b)


def test_simulation_mode_serves_the_cache_file_only(device, tmp_path):
    args, _ = _vadd(2001)
    kw = dict(device=device[1], db=False, quiet=True, cache=str(tmp_path / "c.json"))
    first, _ = cltune.tune_kernel("vector_add", VECTOR_ADD, 2001, args,
                                  {"block_size_x": [32, 64]}, **kw)
    sim, env = cltune.tune_kernel("vector_add", VECTOR_ADD, 2001, args,
                                  {"block_size_x": [32, 64, 128]}, simulation_mode=True, **kw)
    assert [r["time"] for r in sim] == [r["time"] for r in first]  # 128 was never measured
    with pytest.raises(ValueError, match="requires an existing cachefile"):
        cltune.tune_kernel("vector_add", VECTOR_ADD, 2001, args, {"block_size_x": [32]},
                           simulation_mode=True, device=device[1], db=False, quiet=True,
                           cache=str(tmp_path / "none.json"))


def test_an_unusable_database_is_said_once_and_the_run_goes_on(device, tmp_path):
    args, _ = _vadd(1001)
    bad = tmp_path / "not-a-db.db"
    bad.write_text("this is not SQLite")
    with pytest.warns(CltuneWarning, match="not stored"):
        res, _ = cltune.tune_kernel("vector_add", VECTOR_ADD, 1001, args,
                                    {"block_size_x": [32, 64]}, device=device[1],
                                    db=f"sqlite:///{bad}", quiet=True)
    assert len(res) == 2 and bad.read_text() == "this is not SQLite"


def test_kernel_tuner_files_in_and_out(device, db_url, tmp_path):
    """Kernel Tuner's own cache file imported as this device's results (the kernel's source
    names it), served by PythonKernel (run once in the worker first: cltune never ran it),
    then written back as Kernel Tuner's store_results file."""
    from typer.testing import CliRunner

    from cltune.cli.app import app

    src = tmp_path / "vector_add.cl"
    src.write_text(VECTOR_ADD)
    cache = DATA / "test_cache_file.json"
    r = CliRunner().invoke(app, ["import", "--db", db_url, str(cache)])
    assert r.exit_code == 1 and "--kernel-source" in r.output
    r = CliRunner().invoke(app, ["import", "--db", db_url, str(cache), "--kernel-source",
                                 str(src), "--device", device[1].name])
    assert r.exit_code == 0 and "1 new result" in r.output, r.output
    stored = json.loads(cache.read_text())["cache"]
    fastest = min(stored.values(), key=lambda e: e["time"])["block_size_x"]
    args, want = _vadd(100)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CltuneWarning)
        k = cltune.PythonKernel("vector_add", str(src), 100, args, device=device[1], db=db_url)
    assert k.params == {"block_size_x": fastest} and not k.ran_here
    assert np.array_equal(k(*args)[0], want)
    out = tmp_path / "results.json"
    r = CliRunner().invoke(app, ["export", "--db", db_url, "-o", str(out), "--format",
                                 "kernel-tuner"])
    assert r.exit_code == 0, r.output
    doc = json.loads(out.read_text())
    assert doc["version_number"] == "1.0" and doc["kernel_name"] == "vector_add"
    assert doc["tunable_parameters"] == ["block_size_x"]
    assert [d["tunable_parameters"] for d in doc["data"]] == [{"block_size_x": fastest}]
    assert doc["data"][0]["problem_size"] == "100"
    # and Kernel Tuner's PythonKernel reading rule, as cltune's results_file implements it
    k2 = cltune.PythonKernel("vector_add", str(src), 100, args, device=device[1],
                             results_file=str(out), db=False)
    assert k2.params == {"block_size_x": fastest} and k2.level == "results_file"


T1_PROBLEM = {
    "General": {"BenchmarkName": "vector_add", "OutputFormat": "JSON"},
    "ConfigurationSpace": {
        "TuningParameters": [{"Name": "block_size_x", "Type": "int",
                              "Values": "[32+32*i for i in range(8)]", "Default": 64}],
        "Conditions": [{"Expression": "block_size_x != 96", "Parameters": ["block_size_x"]}]},
    "Budget": [{"Type": "ConfigurationCount", "BudgetValue": 4}],
    "Search": {"Name": "random_sample", "Attributes": []},
    "KernelSpecification": {
        "Language": "OpenCL", "KernelName": "vector_add", "KernelFile": "vadd.cl",
        "ProblemSize": 5000, "GridDivX": ["block_size_x"],
        "Arguments": [
            {"Name": "c", "Type": "float", "MemoryType": "Vector", "FillType": "Constant",
             "Size": "ProblemSize", "FillValue": 0.0},
            {"Name": "a", "Type": "float", "MemoryType": "Vector", "FillType": "Random",
             "Size": 5000},
            {"Name": "b", "Type": "float", "MemoryType": "Vector", "FillType": "Random",
             "Size": 5000},
            {"Name": "n", "Type": "int32", "MemoryType": "Scalar", "FillValue": 5000}]}}


def test_a_t1_problem_file_runs_and_writes_t4_results(device, db_url, tmp_path):
    from typer.testing import CliRunner

    from cltune.cli.app import app
    from cltune.user.t1 import T1Error, value_of

    (tmp_path / "vadd.cl").write_text(VECTOR_ADD)
    (tmp_path / "p.json").write_text(json.dumps(T1_PROBLEM))
    t4 = tmp_path / "t4.json"
    dev = f"{device[0].platform_index}:{device[0].device_index}"
    r = CliRunner().invoke(app, ["tune", "--device", dev, "--t1", str(tmp_path / "p.json"),
                                 "--t4", str(t4), "--db", db_url])
    assert r.exit_code == 0 and "4 config(s) ran right" in r.output, r.output
    doc = json.loads(t4.read_text())
    assert doc["schema_version"] == "1.0.0" and len(doc["results"]) == 4
    for res in doc["results"]:
        assert res["configuration"]["block_size_x"] in range(32, 257, 32)
        assert res["configuration"]["block_size_x"] != 96  # the condition held
        assert res["invalidity"] == "correct" and len(res["times"]["runtimes"]) == 7
        assert res["measurements"][0]["name"] == "time"
    # the file's expressions are data: no calls but range/list, no names but its own
    assert value_of("[2**i for i in range(6) if i > 1]") == [4, 8, 16, 32]
    for bad in ('__import__("os").system("true")', "open('/etc/passwd')", "().__class__"):
        with pytest.raises(T1Error, match="not allowed|unknown name"):
            value_of(bad)
    bad = json.loads(json.dumps(T1_PROBLEM))
    bad["ConfigurationSpace"]["TuningParameters"][0]["Values"] = "exec('1')"
    (tmp_path / "bad.json").write_text(json.dumps(bad))
    r = CliRunner().invoke(app, ["tune", "--device", dev, "--t1", str(tmp_path / "bad.json")])
    assert r.exit_code == 1 and "not allowed" in r.output and "Traceback" not in r.output


def test_first_use_tuning_serves_the_best_once_it_finished(device, db_url):
    args, want = _vadd(6007)
    with pytest.warns(CltuneWarning, match="not tuned"):
        k = cltune.PythonKernel("vector_add", VECTOR_ADD, 6007, args, device=device[1],
                                db=db_url, tune="first-use",
                                tune_params={"block_size_x": [32, 64, 128]},
                                answer=[want, None, None, None])
    assert k.level == "defaults" and "background" in k.explain()
    assert np.array_equal(k(*args)[0], want)  # the defaults serve meanwhile
    assert k.wait_tuned(120) and k.level == "tuned"
    assert k.params["block_size_x"] in (32, 64, 128)
    assert np.array_equal(k(*args)[0], want)
    again = cltune.PythonKernel("vector_add", VECTOR_ADD, 6007, args, device=device[1],
                                db=db_url)
    assert again.level == "exact" and again.params == k.params


def test_verify_says_it_leaves_kernel_results_alone(device, db_url):
    from typer.testing import CliRunner

    from cltune.cli.app import app

    args, _ = _vadd(1001)
    cltune.tune_kernel("vector_add", VECTOR_ADD, 1001, args, {"block_size_x": [32]},
                       device=device[1], db=db_url, quiet=True)
    dev = f"{device[0].platform_index}:{device[0].device_index}"
    r = CliRunner().invoke(app, ["verify", "--device", dev, "--db", db_url])
    text = " ".join(r.output.split())
    assert "1 stored kernel result(s) not re-run" in text and "resume=False" in text, r.output


NAMED = """
__kernel void scale(__global float *y, __global const float *x, int n) {
    int i = get_global_id(0);
    if (i < n) y[i] = FACTOR * x[i] + OFFSET;
}
"""


def test_block_size_names_iterations_defines_and_verbose(device, capsys):
    n = 3001
    x = np.arange(n, dtype=np.float32)
    args = [np.zeros(n, np.float32), x, np.int32(n)]
    res, env = cltune.tune_kernel("scale", NAMED, n, args, {"wg": [16, 48], "f": [2, 3]},
                                  block_size_names=["wg"], iterations=3, verbose=True,
                                  defines={"FACTOR": "f", "OFFSET": lambda p: p["wg"] // 16},
                                  answer=None, device=device[1], db=False)
    printed = capsys.readouterr().out
    assert "Searchspace has 4 configurations after restrictions." in printed
    assert "Using: " + device[1].name in printed and "BEST PERFORMING" in printed
    assert len(res) == 4 and all(len(r["times"]) == 3 for r in res) and env["iterations"] == 3
    for r in res:  # the work-group from `wg`, the values through the defines
        out = cltune.run_kernel("scale", NAMED, n, args, {"wg": r["wg"], "f": r["f"]},
                                block_size_names=["wg"],
                                defines={"FACTOR": "f", "OFFSET": lambda p: p["wg"] // 16},
                                device=device[1])
        assert np.array_equal(out[0], r["f"] * x + r["wg"] // 16)
    with pytest.raises(ValueError, match="at most 3"):
        cltune.tune_kernel("scale", NAMED, n, args, {"wg": [16]},
                           block_size_names=["a", "b", "c", "d"], device=device[1], db=False)


def test_pyopencl_arrays_as_arguments(device):
    import pyopencl as cl
    import pyopencl.array as cla

    args, want = _vadd(2049)
    ctx = cl.Context([device[1]])  # kept: Intel's CPU runtime frees a context nobody holds
    q = cl.CommandQueue(ctx)
    dargs = [cla.to_device(q, a) for a in args[:3]] + [args[3]]
    res, env = cltune.tune_kernel("vector_add", VECTOR_ADD, 2049, dargs,
                                  {"block_size_x": [32, 64]}, answer=[want, None, None, None],
                                  device=device[1], db=False, quiet=True)
    assert len(res) == 2 and not env["failed"]
    assert not dargs[0].get().any()  # the application's arrays are not written


def test_a_kernel_made_of_several_files(device, tmp_path, monkeypatch):
    """Kernel Tuner's list of files: the first is the kernel, the others files it includes
    by the name given; each gets the parameters' #define lines."""
    (tmp_path / "header.h").write_text("#define SCALE (2.0f * tile)\n")
    (tmp_path / "main.cl").write_text(
        '#include "header.h"\n'
        "__kernel void k(__global float *y, __global const float *x, int n) {\n"
        "    int i = get_global_id(0);\n"
        "    if (i < n) y[i] = SCALE * x[i];\n}\n")
    monkeypatch.chdir(tmp_path)
    x = np.arange(1000, dtype=np.float32)
    args = [np.zeros_like(x), x, np.int32(1000)]
    res, env = cltune.tune_kernel("k", ["main.cl", "header.h"], 1000, args,
                                  {"block_size_x": [32, 64], "tile": [1, 3]},
                                  answer=None, device=device[1], db=False, quiet=True)
    assert len(res) == 4 and not env["failed"]
    out = cltune.run_kernel("k", ["main.cl", "header.h"], 1000, args,
                            {"block_size_x": 32, "tile": 3}, device=device[1])
    assert np.array_equal(out[0], 6 * x)
    with pytest.raises(KernelSourceError, match="secondary entries must be filenames"):
        cltune.tune_kernel("k", ["main.cl", "int x;"], 1000, args, {"block_size_x": [32]},
                           device=device[1], db=False, quiet=True)


def test_an_untuned_kernel_runs_the_first_config_of_its_space(device, db_url):
    args, want = _vadd(3001)
    with pytest.warns(CltuneWarning, match="not tuned"):
        k = cltune.PythonKernel("vector_add", VECTOR_ADD, 3001, args, device=device[1],
                                db=db_url, tune_params={"block_size_x": [4096 * 4, 96, 128]},
                                restrictions=["block_size_x != 96"])
    assert k.params == {"block_size_x": 128} and k.level == "defaults"  # within the limits
    assert "space default" in k.explain()
    assert np.array_equal(k(*args)[0], want)


def test_a_kernel_without_a_queue_runs_on_every_usable_device(db_url):
    """PythonKernel makes its own context and queue where none is given, and keeps the
    context (Intel's CPU runtime frees a context whose last handle was dropped, queues or
    not: `queue.context` then failed with INVALID_CONTEXT)."""
    import gc

    from cltune.device.select import device_health, list_devices
    args, want = _vadd(1001)
    ran = 0
    for info in list_devices():
        if not device_health(info).ok:
            continue
        with pytest.warns(CltuneWarning, match="not tuned"):
            k = cltune.PythonKernel("vector_add", VECTOR_ADD, 1001, args, device=info.cl_device(),
                                    db=db_url, tune_params={"block_size_x": [64, 128]})
        gc.collect()
        assert np.array_equal(k(*args)[0], want), info.name
        assert k.queue.context == k.ctx
        ran += 1
    assert ran


def test_a_work_group_the_driver_refuses_is_a_failed_launch_and_the_rest_are_tuned(device):
    """A work-group past the kernel's CL_KERNEL_WORK_GROUP_SIZE is launched, not skipped
    (NVIDIA's driver reports 256 for kernels it runs at 1024); a driver that refuses it makes
    that config a failed launch, with the sizes in its reason, and the others are tuned."""
    src = ("__kernel __attribute__((reqd_work_group_size(64, 1, 1)))\n"
           "void twice(__global float *y, __global const float *x, int n) {\n"
           "  int i = get_global_id(0); if (i < n) y[i] = 2.0f * x[i]; }\n")
    n = 1000
    x = np.arange(n, dtype=np.float32)
    res, env = cltune.tune_kernel("twice", src, n, [np.zeros(n, np.float32), x, np.int32(n)],
                                  {"block_size_x": [32, 64, 128]}, answer=[2 * x, None, None],
                                  device=device[1], db=False, quiet=True)
    assert [r["block_size_x"] for r in res] == [64]
    why = {f["block_size_x"]: (f["step"], f["__error__"], f["reason"]) for f in env["failed"]}
    assert set(why) == {32, 128}
    for wg, (step, err, reason) in why.items():
        assert step == "launch" and "launch failed" in reason, (wg, step, reason)
        assert err in ("RuntimeFailedConfig", "InvalidConfig")
    # (InvalidConfig where the driver's reported limit was passed: PoCL reports its device
    # maximum for this kernel too, so both are runtime failures here)
