"""cltune.tune_kernel beside Kernel Tuner's own tune_kernel on Kernel Tuner's OpenCL examples:
the same device, the same spaces, one run (#45).

For each case, each tool runs in a fresh process (its wall time includes what a user waits
for: cltune's evaluation worker and Kernel Tuner's context) with cold driver caches: brute
force over the whole space (which valid configs each found, the best time, the wall time).
Then, with a budget of a fifth of the space, cltune's model-based search against Kernel
Tuner's strategies (`--kt-strategies`) over `--seeds` seeds, both in their simulation mode on
the cache file of cltune's exhaustive run (Kernel Tuner's format, which both read): the config
each search picks, scored by its time in that table as a fraction of the table's best (so
the score is the strategy's, not one measurement's noise, and seeds cost no device time).

    python scripts/bench_tuner.py --device 0:0 --kt-python /path/to/kt-venv/bin/python
    python scripts/bench_tuner.py --device 0:0 --sizes gpu --cases convolution,matmul
    TMPDIR=DIR python scripts/bench_tuner.py --simulations-only --cases matmul --max-threads 1024
        (the searches again on DIR/bench-tuner-matmul.json, a table from a GPU, on this host)

`--device P:D` is a platform and device index (pyopencl's order), as both tools take them (or
a part of a platform's name: its first device).
Kernel Tuner is imported from `--kt-python` (a Python where `pip install kernel_tuner pyopencl`
was run; default: this one).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "kernel_tuner"

#: problem sizes: `cpu` shrunk for a 2-core CPU (and the convolution's space cut to 96 points),
#: `gpu` the examples' own
SIZES = {"cpu": {"vector_add": 1 << 22, "convolution": 512, "matmul": 256,
                 "stencil": (1024, 512), "reduction": 1 << 24},
         "gpu": {"vector_add": 10_000_000, "convolution": 4096, "matmul": 4096,
                 "stencil": (4096, 2048), "reduction": 80_000_000}}
#: the examples' own sizes with the convolution's space cut as on the CPU (96 points: a build
#: takes 0.35-1.4 s on NVIDIA's driver, and its builds do not overlap in threads)
SIZES["gpu-cut"] = SIZES["gpu"]


def case(name: str, sizes: str):  # noqa: ANN201 - (args to tune_kernel, kwargs)
    s = SIZES[sizes][name]
    rng = np.random.default_rng(0)
    if name == "vector_add":
        src = ("__kernel void vector_add(__global float *c, __global const float *a, "
               "__global const float *b, int n) {\n int i = get_global_id(0);\n"
               " if (i<n) { c[i] = a[i] + b[i]; }\n}\n")
        a = rng.random(s, dtype=np.float32)
        b = rng.random(s, dtype=np.float32)
        tp = {"block_size_x": [32 * i for i in range(1, 33)]}
        return ("vector_add", src, s, [np.zeros_like(a), a, b, np.int32(s)], tp), {
            "answer": [a + b, None, None, None]}
    if name == "convolution":
        ps = (s, s)
        inp = rng.standard_normal((s + 16) * (s + 16)).astype(np.float32)
        filt = rng.standard_normal(17 * 17).astype(np.float32)
        img = inp.reshape(s + 16, s + 16).astype(np.float64)
        want = np.zeros((s, s))
        for j in range(17):
            for i in range(17):
                want += img[j:j + s, i:i + s] * filt[j * 17 + i]
        tp = {"block_size_x": [16 * i for i in range(1, 9)],
              "block_size_y": [2 ** i for i in range(6)],
              "tile_size_x": [2 ** i for i in range(3)], "tile_size_y": [2 ** i for i in range(3)]}
        if sizes in ("cpu", "gpu-cut"):  # a build takes 1-2 s on a CPU: 96 of the 432 points
            tp.update(block_size_x=[16, 32, 48, 64], tile_size_x=[1, 2], tile_size_y=[1, 2])
        return ("convolution_kernel", str(DATA / "convolution.cl"), ps,
                [np.zeros(s * s, np.float32), inp, filt], tp), {
            "grid_div_x": ["block_size_x", "tile_size_x"],
            "grid_div_y": ["block_size_y", "tile_size_y"],
            "answer": [want.astype(np.float32).ravel(), None, None], "atol": 1e-2,
            "compiler_options": [f"-Dimage_height={s}", f"-Dimage_width={s}"]}
    if name == "matmul":
        a = rng.standard_normal((s, s)).astype(np.float32)
        b = rng.standard_normal((s, s)).astype(np.float32)
        tp = {"block_size_x": [16 * 2 ** i for i in range(3)],
              "block_size_y": [2 ** i for i in range(6)],
              "tile_size_x": [2 ** i for i in range(4)], "tile_size_y": [2 ** i for i in range(4)]}
        return ("matmul_kernel", str(DATA / "matmul.cl"), (s, s), [np.zeros_like(a), a, b], tp), {
            "grid_div_x": ["block_size_x", "tile_size_x"],
            "grid_div_y": ["block_size_y", "tile_size_y"],
            "restrictions": ["block_size_x==block_size_y*tile_size_y"],
            "answer": [a @ b, None, None], "atol": 1e-2, "compiler_options": [f"-DWIDTH={s}"]}
    if name == "stencil":
        w, h = s
        x_old = rng.standard_normal(w * h).astype(np.float32)
        g = x_old.reshape(h, w).astype(np.float64)
        want = x_old.reshape(h, w).copy()
        want[1:-1, 1:-1] = (g[1:-1, 1:-1] + g[1:-1, :-2] + g[1:-1, 2:] + g[2:, 1:-1]
                            + g[:-2, 1:-1]) / 5.0
        tp = {"block_size_x": [32 * i for i in range(1, 9)],
              "block_size_y": [2 ** i for i in range(6)]}
        return ("stencil_kernel", str(DATA / "stencil.cl"), (w, h), [np.copy(x_old), x_old],
                tp), {"grid_div_x": ["block_size_x"], "grid_div_y": ["block_size_y"],
                      "answer": [want.astype(np.float32).ravel(), None], "atol": 1e-4,
                      "compiler_options": [f"-Ddomain_width={w}", f"-Ddomain_height={h}"]}
    if name == "reduction":
        x = rng.random(s, dtype=np.float32)
        tp = {"block_size_x": [2 ** i for i in range(5, 11)], "vector": [2 ** i for i in range(3)],
              "num_blocks": [2 ** i for i in range(5, 11)],
              "loop_unroll_factor": [0, 1, 8, 16, 32]}
        return ("sum_floats", str(DATA / "reduction.cl"), "num_blocks",
                [np.zeros(1024, np.float32), x, np.int32(s)], tp), {"grid_div_x": []}
    raise SystemExit(f"unknown case {name}")


def simulate(tool: str, name: str, sizes: str, platform: int, device: int, strategy: str,
             budget: int, seeds: int, cache: str) -> dict:
    """`seeds` searches of one tool in simulation mode over the cache file of an exhaustive
    run (both tools read Kernel Tuner's format): the config each search would pick."""
    if tool == "cltune":
        import cltune as kt
    else:
        import kernel_tuner as kt
    (kname, src, ps, args, tp), kw = case(name, sizes)
    kw.pop("answer", None)
    # Kernel Tuner's simulation knows no device: the work-group limit the exhaustive run
    # applied is said as a restriction (for both tools alike)
    import pyopencl as cl

    limit = int(os.environ.get("BENCH_TUNER_MAX_THREADS") or
                cl.get_platforms()[platform].get_devices()[device].max_work_group_size)
    blocks = [b for b in ("block_size_x", "block_size_y", "block_size_z") if b in tp]
    if blocks:
        kw["restrictions"] = [*kw.get("restrictions", ()), "*".join(blocks) + f"<={limit}"]
    picks = []
    for seed in range(1, seeds + 1):
        extra = {"db": False, "seed": seed} if tool == "cltune" else {}
        np.random.seed(seed)
        import random
        random.seed(seed)
        res, _ = kt.tune_kernel(kname, src, ps, args, tp, platform=platform, device=device,
                                strategy=strategy, strategy_options={"max_fevals": budget},
                                quiet=True, verbose=False, cache=cache, simulation_mode=True,
                                **kw, **extra)
        ok = [r for r in res if "__error__" not in r and isinstance(r.get("time"), float)]
        best = min(ok, key=lambda r: r["time"]) if ok else None
        picks.append(",".join(str(best[k]) for k in tp) if best else None)
    return {"tool": tool, "case": name, "strategy": strategy, "budget": budget,
            "picks": picks}


def run_one(tool: str, name: str, sizes: str, platform: int, device: int, strategy: str,
            budget: int | None, seed: int, cache: str | None = None) -> dict:
    """One tuning run of one tool in this process: its results as plain data."""
    if tool == "cltune":
        import cltune as kt
        extra = {"db": False, "seed": seed}
        if cache:
            extra["cache"] = cache
    else:
        import kernel_tuner as kt
        extra = {}
    (kname, src, ps, args, tp), kw = case(name, sizes)
    opts = {"max_fevals": budget} if budget else None
    if tool == "cltune" and strategy != "brute_force":
        extra["seed"] = seed
    if tool == "kernel_tuner" and strategy != "brute_force":
        np.random.seed(seed)
        import random
        random.seed(seed)
    t0 = time.perf_counter()
    res, env = kt.tune_kernel(kname, src, ps, args, tp, platform=platform, device=device,
                              strategy=strategy, strategy_options=opts, quiet=True,
                              verbose=False, **kw, **extra)
    wall = time.perf_counter() - t0
    ok = [r for r in res if "__error__" not in r and isinstance(r.get("time"), float)]
    keys = sorted(",".join(str(r[k]) for k in tp) for r in ok)
    best = min(ok, key=lambda r: r["time"]) if ok else None
    failed = [(",".join(str(f[k]) for k in tp), f.get("step", f.get("__error__")))
              for f in env.get("failed", ())]
    return {"tool": tool, "case": name, "strategy": strategy, "seed": seed, "wall_s": wall,
            "failed": failed,
            "valid": keys, "times": {",".join(str(r[k]) for k in tp): r["time"] for r in ok},
            "best": ",".join(str(best[k]) for k in tp) if best else None,
            "best_ms": best["time"] if best else None, "device": env.get("device_name")}


def spawn(python: str, tool: str, name: str, a: argparse.Namespace, strategy: str,
          budget: int | None, seed: int, cache: str = "", sim: bool = False) -> dict:
    cmd = [python, __file__, "--one", tool, "--cases", name, "--sizes", a.sizes, "--device",
           a.device, "--strategy", strategy, "--seed", str(seed), "--seeds", str(a.seeds)]
    if budget:
        cmd += ["--budget", str(budget)]
    if cache:
        cmd += ["--cache", cache]
    if sim:
        cmd += ["--simulate"]
    # every run compiles cold: no driver (PoCL's, NVIDIA's compute cache) or pyopencl cache
    # left by the other tool's run (both put the same #define lines in front of one source)
    import tempfile

    env = {**os.environ, "PYOPENCL_NO_CACHE": "1", "CUDA_CACHE_DISABLE": "1",
           "POCL_CACHE_DIR": tempfile.mkdtemp(prefix="bench-tuner-pocl-")}
    t0 = time.perf_counter()
    try:  # a simulation takes seconds; one that runs on (a strategy looping) is stopped
        p = subprocess.run(cmd, capture_output=True, text=True,
                           timeout=min(a.timeout, 300) if sim else a.timeout,
                           cwd=os.environ.get("TMPDIR", "/tmp"), env=env)
    except subprocess.TimeoutExpired as e:
        return {"tool": tool, "case": name, "error": [f"no answer within {e.timeout:.0f} s"]}
    import shutil

    shutil.rmtree(env["POCL_CACHE_DIR"], ignore_errors=True)
    lines = [ln for ln in p.stdout.strip().splitlines() if ln.startswith("{")]
    if not lines:
        return {"tool": tool, "case": name, "error": p.stderr.strip().splitlines()[-1:]}
    out = json.loads(lines[-1])
    if p.returncode != 0:  # it printed its results, then died (a driver at exit, say)
        out["exit"] = f"exit status {p.returncode} after its results: " \
                      f"{(p.stderr.strip().splitlines() or [''])[-1][:160]}"
        print(f"  ({tool} {name}: {out['exit']})", flush=True)
    out["process_s"] = time.perf_counter() - t0
    return out


def random_ceiling(table: dict, budget: int) -> str:
    """What the table allows a search that knows nothing of it: how many configs are within
    5 % of the best, the chance that `budget` distinct configs drawn at random include one,
    and the median quality of such a draw (exact, by the hypergeometric law) — on a table
    whose times are mostly noise no strategy's median beats that by much."""
    from math import comb

    times = sorted(table.values())
    n, best = len(times), times[0]
    near = sum(t <= best / 0.95 for t in times)
    p = 1 - comb(n - near, budget) / comb(n, budget)
    # the median of the best quality in a random draw: the r-th best config with
    # P(best of the draw is at rank <= r) >= 1/2
    r = next(r for r in range(1, n + 1) if 1 - comb(n - r, budget) / comb(n, budget) >= 0.5)
    return (f"{near} of {n} within 5 % of the best; random draws of {budget} reach one with "
            f"p = {p:.2f}, median quality {best / times[r - 1]:.3f}")


def simulations(name: str, a: argparse.Namespace, table: dict, cache: str,
                rows: list) -> None:
    """The budgeted searches of both tools, simulated on the exhaustive run's cache file."""
    ex_best = min(table.values())
    budget = max(1, len(table) // 5)

    def quality(r: dict, table: dict = table, ex_best: float = ex_best) -> float:
        t = table.get(r.get("best") or "")
        return ex_best / t if t else 0.0

    line = [f"  {name}: budget {budget} of {len(table)} ({a.seeds} seeds, simulated on "
            f"cltune's exhaustive table; {random_ceiling(table, budget)}):"]
    for tool, strat, py in [("cltune", a.cltune_strategy, sys.executable),
                            *[("kernel_tuner", s, a.kt_python)
                              for s in a.kt_strategies.split(",") if s]]:
        r = spawn(py, tool, name, a, strat, budget, 0, cache, sim=True)
        rows.append(r)
        if "error" in r:
            line.append(f"{tool} {strat}: {r['error']}")
            continue
        qs = [quality({"best": p}) for p in r["picks"]]
        line.append(f"{tool} {strat} median {statistics.median(qs):.3f} "
                    f"(min {min(qs):.3f}, mean {statistics.mean(qs):.3f})")
    print("; ".join(line), flush=True)


def median_table(name: str, a: argparse.Namespace, cache: str, first: dict,
                 rows: list) -> dict:
    """The exhaustive table as the median of `--table-rounds` brute-force runs of cltune (the
    first one's and more, each cold): one run's time of a config on a shared host is one
    draw of its noise, and a search scored on one draw is scored partly on that noise. The
    cache file the simulations read gets the medians."""
    runs = [first]
    for r in range(1, a.table_rounds):
        extra = str(Path(cache).with_suffix(f".round{r}.json"))
        Path(extra).unlink(missing_ok=True)
        c = spawn(sys.executable, "cltune", name, a, "brute_force", None, 0, extra)
        rows.append({**c, "round": r})
        if "error" in c:
            print(f"  {name}: round {r + 1} failed: {c['error']}")
            continue
        runs.append(c["times"])
    table = {k: statistics.median(t[k] for t in runs if k in t) for k in first}
    data = json.loads(Path(cache).read_text())
    tp = case(name, a.sizes)[0][4]
    for e in data["cache"].values():
        if "__error__" not in e:
            key = ",".join(str(e[p]) for p in tp)
            if key in table:
                e["time"] = table[key]
    Path(cache).write_text(json.dumps(data))
    moved = statistics.median(abs(first[k] / table[k] - 1) for k in table)
    best1, bestm = min(first, key=first.get), min(table, key=table.get)
    print(f"  {name}: table = the median of {len(runs)} exhaustive runs (a config's time moved "
          f"{100 * moved:.1f} % in the median from the first run's; best {best1} -> {bestm})",
          flush=True)
    return table


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="0:0", help="P:D (platform, device index)")
    ap.add_argument("--cases", default="vector_add,convolution,matmul,stencil,reduction")
    ap.add_argument("--sizes", choices=tuple(SIZES), default="cpu")
    ap.add_argument("--kt-python", default=sys.executable)
    ap.add_argument("--kt-strategies", default="random_sample,genetic_algorithm,greedy_ils")
    ap.add_argument("--cltune-strategy", default="bayes_opt")
    ap.add_argument("--seeds", type=int, default=25)
    ap.add_argument("--no-budget", action="store_true", help="brute force only")
    ap.add_argument("--timeout", type=float, default=3000)
    ap.add_argument("--json", default="")
    ap.add_argument("--table-rounds", type=int, default=1,
                    help="exhaustive runs of cltune whose per-config median is the table the "
                         "budgeted searches are simulated and scored on (1: the first run's)")
    ap.add_argument("--max-threads", type=int, default=0,
                    help="with --simulations-only: the work-group limit of the device the "
                    "table was made on (default: this device's)")
    ap.add_argument("--simulations-only", action="store_true",
                    help="only the budgeted searches, on the cache files of an earlier run")
    ap.add_argument("--one", default="", help=argparse.SUPPRESS)
    ap.add_argument("--strategy", default="brute_force", help=argparse.SUPPRESS)
    ap.add_argument("--budget", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--cache", default="", help=argparse.SUPPRESS)
    ap.add_argument("--simulate", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if ":" not in a.device:  # a platform name's part: its first device
        import pyopencl as cl

        found = [i for i, p in enumerate(cl.get_platforms()) if a.device.lower() in p.name.lower()]
        if not found:
            raise SystemExit(f"no OpenCL platform named like {a.device!r}")
        a.device = f"{found[0]}:0"
    plat, dev = (int(v) for v in a.device.split(":"))
    if a.one:
        if a.simulate:
            print(json.dumps(simulate(a.one, a.cases, a.sizes, plat, dev, a.strategy,
                                      a.budget, a.seeds, a.cache)))
        else:
            print(json.dumps(run_one(a.one, a.cases, a.sizes, plat, dev, a.strategy,
                                     a.budget or None, a.seed, a.cache or None)))
        return 0
    if a.max_threads:  # the simulations' processes read it (simulate)
        os.environ["BENCH_TUNER_MAX_THREADS"] = str(a.max_threads)
    rows = []
    for name in a.cases.split(","):
        cache = str(Path(os.environ.get("TMPDIR", "/tmp")) / f"bench-tuner-{name}.json")
        if a.simulations_only:  # the exhaustive table of an earlier run's cache file
            entries = json.loads(Path(cache).read_text())["cache"].values()
            table = {",".join(str(e[p]) for p in case(name, a.sizes)[0][4]): e["time"]
                     for e in entries if "__error__" not in e}
            simulations(name, a, table, cache, rows)
            continue
        Path(cache).unlink(missing_ok=True)
        c = spawn(sys.executable, "cltune", name, a, "brute_force", None, 0, cache)
        k = spawn(a.kt_python, "kernel_tuner", name, a, "brute_force", None, 0)
        rows += [c, k]
        if "error" in c:
            print(f"{name}: cltune failed: {c.get('error')}")
            continue
        if "error" in k:
            print(f"{name} on {c['device']}: cltune {len(c['valid'])} valid configs, best "
                  f"{c['best_ms']:.4f} ms ({c['best']}), wall {c['wall_s']:.1f} s, failed "
                  f"configs {c['failed']}; kernel_tuner stopped: {k.get('error')}", flush=True)
        else:
            same = c["valid"] == k["valid"]
            only_c = sorted(set(c["valid"]) - set(k["valid"]))
            only_k = sorted(set(k["valid"]) - set(c["valid"]))
            if c["device"] != k["device"]:
                print(f"  (devices differ: cltune {c['device']}, kernel_tuner {k['device']})")
            print(f"{name} on {c['device']}: valid configs cltune {len(c['valid'])} / "
                  f"kernel_tuner {len(k['valid'])} ({'the same' if same else 'differ'}"
                  f"{'' if same else f': only cltune {only_c[:4]}, only KT {only_k[:4]}'}); "
                  f"best {c['best_ms']:.4f} ms ({c['best']}) / {k['best_ms']:.4f} ms "
                  f"({k['best']}); wall {c['wall_s']:.1f} s / {k['wall_s']:.1f} s = "
                  f"{c['wall_s'] / k['wall_s']:.2f}x (processes {c['process_s']:.1f} / "
                  f"{k['process_s']:.1f} s)", flush=True)
        if a.no_budget:
            continue
        table = c["times"]
        if a.table_rounds > 1:
            table = median_table(name, a, cache, table, rows)
        c["scored_times"] = table  # what the searches are scored on (bench_tables.py too)
        simulations(name, a, table, cache, rows)
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
