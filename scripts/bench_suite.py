"""Run a fixed set of cltune's benchmarks on one device and keep each result as JSON (#43).

Each command of the preset (`cltune bench ... --json`, `scripts/call_floor.py --json`,
optionally `scripts/bench_tuner.py --json`) runs in its own process under a timeout; its JSON
is written to `docs/results/<device-slug>/<family>-<case>.json` with what made it added: the
command line, the date (UTC), the git commit, the host's CPU model and cltune's version. A
command that fails or times out is recorded as such (its file holds `error`), and the suite
goes on. `scripts/bench_tables.py --write` turns the files into docs/benchmarks.md.

    python scripts/bench_suite.py --device 1 --preset cpu              # PoCL on the CI box
    python scripts/bench_suite.py --device 0 --preset cpu              # Intel's CPU runtime
    python scripts/bench_suite.py --device NVIDIA --preset gpu         # with torch on CUDA
    python scripts/bench_suite.py --device 1 --preset cpu --families sort,topk --list
    python scripts/bench_tables.py --write

The device slug names what the device is, never which CPU model a runtime was built for:
the platform's vendor, then the device type (`pocl-cpu`, `intel-cpu`) or, for a GPU, its
model (`nvidia-h100`). `own-kernels` (bench_tuner.py: cltune.tune_kernel beside Kernel
Tuner) runs only when asked for by `--families` or `--kt-python`.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.metadata
import json
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "docs" / "results"
FAMILIES = ("reduce", "axis", "segments", "statistics", "many", "scan", "compaction",
            "histogram", "topk", "sort", "call-floor", "own-kernels")
OPTIONAL = ("own-kernels",)  # only when asked for (--families or --kt-python)


@dataclass(frozen=True)
class Command:
    family: str
    case: str
    args: str  # options after `cltune bench --device D` (for scripts: after the script)
    tool: str = "bench"  # bench, call-floor or tuner
    timeout_s: float = 300.0


def _bench(family: str, case: str, args: str, timeout_s: float = 300.0) -> Command:
    return Command(family, case, args, "bench", timeout_s)


#: The commands of each preset, in the order they run (9 interleaved samples, cltune bench's
#: default). `cpu`: sizes a 2-core CPU measures in about five minutes; `gpu`: the same
#: families at GPU sizes (torch rows on CUDA).
PRESETS: dict[str, tuple[Command, ...]] = {
    "cpu": (
        _bench("reduce", "sum", "--op sum --sizes 2^16,2^20,2^24"),
        _bench("axis", "sum", "--op sum --axis both --shapes "
               "4096x4096,65536x256,256x65536,2^20x16"),
        _bench("segments", "sum", "--op sum --segments --shapes 65536x256,4096x4096"),
        _bench("statistics", "var", "--op var --sizes 2^24"),
        _bench("statistics", "argmax", "--op argmax --sizes 2^24"),
        _bench("statistics", "norm", "--op norm --sizes 2^24"),
        _bench("statistics", "mean-axis", "--op mean --axis both --shapes 4096x4096,65536x256"),
        _bench("many", "sum", "--op sum --many 64 --sizes 2^12,2^16"),
        _bench("many", "norm", "--op norm --many 64 --sizes 2^12,2^16"),
        _bench("scan", "cumsum", "--op cumsum --sizes 2^16,2^20,2^24"),
        _bench("scan", "cumsum-axis", "--op cumsum --axis both --shapes 4096x4096"),
        _bench("compaction", "copy_if", "--op copy_if --sizes 2^20,2^24"),
        _bench("compaction", "nonzero", "--op nonzero --sizes 2^20,2^24"),
        _bench("histogram", "bincount", "--op bincount --dtype int32 --sizes 2^24 "
               "--bins 256,4096"),
        _bench("histogram", "histogram", "--op histogram --sizes 2^24 --bins 256,4096"),
        _bench("topk", "topk", "--op topk --sizes 2^24 --k 10,1000"),
        _bench("topk", "topk-rows", "--op topk --shapes 4096x4096 --k 10"),
        _bench("sort", "sort", "--op sort --sizes 2^20,2^24"),
        _bench("sort", "sort-rows", "--op sort --shapes 4096x4096"),
        Command("call-floor", "warm-calls", "--calls 1000 --blocks 9", "call-floor", 600),
        Command("own-kernels", "kernel-tuner",
                "--cases vector_add,stencil --seeds 20 --table-rounds 3", "tuner", 600),
    ),
    "gpu": (
        _bench("reduce", "sum", "--op sum --sizes 2^20,2^24,2^27"),
        _bench("axis", "sum", "--op sum --axis both --shapes "
               "4096x4096,65536x256,256x65536,2^22x16"),
        _bench("segments", "sum", "--op sum --segments --shapes 65536x256,4096x4096"),
        _bench("statistics", "var", "--op var --sizes 2^27"),
        _bench("statistics", "argmax", "--op argmax --sizes 2^27"),
        _bench("statistics", "norm", "--op norm --sizes 2^27"),
        _bench("statistics", "mean-axis", "--op mean --axis both --shapes 4096x4096,65536x256"),
        _bench("many", "sum", "--op sum --many 64 --sizes 2^12,2^16"),
        _bench("many", "norm", "--op norm --many 64 --sizes 2^12,2^16"),
        _bench("scan", "cumsum", "--op cumsum --sizes 2^20,2^24,2^27"),
        _bench("scan", "cumsum-axis", "--op cumsum --axis both --shapes 4096x4096"),
        _bench("compaction", "copy_if", "--op copy_if --sizes 2^24,2^27"),
        _bench("compaction", "nonzero", "--op nonzero --sizes 2^24,2^27"),
        _bench("histogram", "bincount", "--op bincount --dtype int32 --sizes 2^27 "
               "--bins 256,4096"),
        _bench("histogram", "histogram", "--op histogram --sizes 2^27 --bins 256,4096"),
        _bench("topk", "topk", "--op topk --sizes 2^27 --k 10,1000"),
        _bench("topk", "topk-rows", "--op topk --shapes 4096x4096 --k 10"),
        _bench("sort", "sort", "--op sort --sizes 2^24,2^26", 600),  # numpy's: seconds a call
        _bench("sort", "sort-rows", "--op sort --shapes 4096x4096"),
        Command("call-floor", "warm-calls", "--calls 1000 --blocks 9 --device-time",
                "call-floor", 600),
        Command("own-kernels", "kernel-tuner", "--sizes gpu-cut --cases "
                "vector_add,convolution,matmul,stencil --seeds 25", "tuner", 600),
    ),
}


# ---------------------------------------------------------------- what the device and host are

VENDORS = (("nvidia", "nvidia"), ("pocl", "pocl"), ("portable computing", "pocl"),
           ("rusticl", "rusticl"), ("mesa", "mesa"), ("advanced micro", "amd"), ("amd", "amd"),
           ("intel", "intel"), ("apple", "apple"), ("arm", "arm"), ("qualcomm", "qualcomm"))
#: words of a GPU's name that say nothing of its model (vendor, memory size and kind, form)
NOISE = re.compile(r"^(nvidia|geforce|tesla|amd|intel|\(r\)|\(tm\)|graphics|\d+gb|hbm\d*e?|"
                   r"gddr\d*x?|pcie|sxm\d*|nvl|-)$")


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def device_slug(platform_vendor: str, platform_name: str, device_type: str,
                device_name: str) -> str:
    """`<vendor>-<type>` (`pocl-cpu`, `intel-cpu`) or, for a GPU, `<vendor>-<model>`
    (`nvidia-h100`): what the device is, never which CPU a runtime names itself after."""
    both = f"{platform_vendor} {platform_name}".lower()
    vendor = next((v for key, v in VENDORS if key in both), "") or \
        _slug(platform_vendor).split("-")[0] or "unknown"
    if device_type != "gpu":
        return f"{vendor}-{device_type}"
    words = [w for w in re.split(r"[\s_]+", device_name.lower().replace("(r)", " ")
                                 .replace("(tm)", " ")) if w and not NOISE.match(w)]
    return f"{vendor}-{_slug(' '.join(words)) or 'gpu'}"


def device_kind(selector: str) -> dict[str, Any]:
    """The selected device as the suite names it (cltune's selector, as every command takes)."""
    import pyopencl as cl  # lazy: --help and --list need no OpenCL

    from cltune.device.select import select

    info, dev = select(selector)
    t = dev.type
    kind = ("gpu" if t & cl.device_type.GPU else "cpu" if t & cl.device_type.CPU else
            "accelerator" if t & cl.device_type.ACCELERATOR else "device")
    return {"slug": device_slug(dev.platform.vendor, dev.platform.name, kind, dev.name),
            "type": kind, "name": dev.name, "vendor": dev.platform.vendor,
            "platform_device": f"{info.platform_index}:{info.device_index}"}


def host_cpu() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform

    return platform.processor() or platform.machine() or "unknown"


def git_commit() -> str:
    """HEAD's short hash, `+dirty` when cltune's code (not its docs) differs from it."""
    def git(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)
    head = git("rev-parse", "--short=12", "HEAD")
    if head.returncode != 0:
        return "unknown"
    dirty = git("diff", "--quiet", "HEAD", "--", "cltune", "kernels", "tuning_db").returncode
    return head.stdout.strip() + ("+dirty" if dirty else "")


def cltune_version() -> str:
    try:
        return importlib.metadata.version("cltune")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


# ---------------------------------------------------------------- running the commands

def argv_of(cmd: Command, selector: str, dev: dict[str, Any], out: Path,
            kt_python: str | None) -> tuple[list[str], str]:
    """(what runs, the command line as recorded: paths relative to the repo, no temp files)."""
    opts = shlex.split(cmd.args)
    if cmd.tool == "bench":
        shown = ["cltune", "bench", "--device", selector, *opts, "--json"]
        exe = shutil.which("cltune")  # else the module, run outside the checkout (see run_one)
        return [*([exe] if exe else [sys.executable, "-m", "cltune"]), *shown[1:]], \
            shlex.join(shown)
    if cmd.tool == "call-floor":
        shown = ["python", "scripts/call_floor.py", "--device", selector, *opts, "--json"]
        return ([sys.executable, str(ROOT / "scripts" / "call_floor.py"), "--device", selector,
                 *opts, "--json", str(out)], shlex.join([*shown, "OUT.json"]))
    kt = ["--kt-python", kt_python] if kt_python else []
    shown = ["python", "scripts/bench_tuner.py", "--device", dev["platform_device"], *opts, *kt,
             "--json"]
    return ([sys.executable, str(ROOT / "scripts" / "bench_tuner.py"), "--device",
             dev["platform_device"], *opts, *kt, "--json", str(out)],
            shlex.join([*shown, "OUT.json"]))


def _tail(text: str, lines: int = 6) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])[-1500:]


def run_one(cmd: Command, selector: str, dev: dict[str, Any], meta: dict[str, Any],
            kt_python: str | None, order: int = 0) -> dict[str, Any]:
    """Run one command; its JSON with `meta` and what made it, or `error` where it failed."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out.json"
        argv, shown = argv_of(cmd, selector, dev, out, kt_python)
        rec: dict[str, Any] = {"family": cmd.family, "case": cmd.case, "command": shown,
                               "date": datetime.datetime.now(datetime.timezone.utc)
                               .strftime("%Y-%m-%dT%H:%M:%SZ"), "order": order, **meta}
        t0 = time.monotonic()
        try:
            # cltune runs outside the checkout (its source tree there is not the installed
            # package); the scripts run from the repo root, as their docstrings say
            p = subprocess.run(argv, cwd=tmp if cmd.tool == "bench" else ROOT,
                               capture_output=True, text=True, timeout=cmd.timeout_s)
        except subprocess.TimeoutExpired:
            rec.update(error=f"timed out after {cmd.timeout_s:.0f} s", elapsed_s=round(
                time.monotonic() - t0, 1))
            return rec
        except OSError as e:
            rec.update(error=f"could not run: {e}", elapsed_s=0.0)
            return rec
        rec["elapsed_s"] = round(time.monotonic() - t0, 1)
        rec["returncode"] = p.returncode
        text = out.read_text() if cmd.tool != "bench" and out.exists() else p.stdout
        try:
            data = json.loads(text)
        except ValueError:
            rec["error"] = (f"exit code {p.returncode}, no JSON: {_tail(p.stderr or p.stdout)}"
                            if text.strip() or p.returncode else "no JSON written")
            return rec
    if cmd.tool == "tuner":
        data = {"rows": data}
    if not isinstance(data, dict):
        rec["error"] = f"exit code {p.returncode}, JSON of type {type(data).__name__}"
        return rec
    clash = sorted(set(data) & set(rec))
    if clash:
        rec["error"] = f"the command's JSON has the suite's keys {clash}"
        return rec
    if p.returncode != 0:  # cltune bench exits 1 after a wrong answer: its JSON is kept
        rec["stderr_tail"] = _tail(p.stderr)
    return {**rec, **data}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", required=True, help="cltune's device selector (index, P:D, "
                    "name), passed to every command")
    ap.add_argument("--preset", choices=sorted(PRESETS), required=True)
    ap.add_argument("--families", help="comma-separated: only these (of "
                    f"{', '.join(FAMILIES)})")
    ap.add_argument("--kt-python", help="bench_tuner.py's Python with Kernel Tuner (runs the "
                    "own-kernels family)")
    ap.add_argument("--timeout", type=float, help="seconds per command (default: the "
                    "preset's, 300 for a benchmark)")
    ap.add_argument("--out", type=Path, default=RESULTS, help="results folder (default: "
                    "docs/results)")
    ap.add_argument("--commit", help="the commit to record where git cannot tell (a copy of "
                    "the tree without .git, on a lent machine)")
    ap.add_argument("--cases", help="comma-separated FAMILY-CASE names (as --list prints them): "
                    "only these of the chosen families")
    ap.add_argument("--list", action="store_true", help="print the commands, run nothing")
    a = ap.parse_args(argv)
    chosen = FAMILIES if a.families is None else tuple(
        f.strip() for f in a.families.split(",") if f.strip())
    unknown = sorted(set(chosen) - set(FAMILIES))
    if unknown:
        ap.error(f"unknown families {unknown}; known: {', '.join(FAMILIES)}")
    cmds = [c for c in PRESETS[a.preset] if c.family in chosen and (
        c.family not in OPTIONAL or a.families is not None or a.kt_python)]
    if a.cases:
        names = {n.strip() for n in a.cases.split(",") if n.strip()}
        missing = sorted(names - {f"{c.family}-{c.case}" for c in cmds})
        if missing:
            ap.error(f"no such cases among the chosen families: {missing}")
        cmds = [c for c in cmds if f"{c.family}-{c.case}" in names]
    if a.timeout:
        cmds = [Command(c.family, c.case, c.args, c.tool, a.timeout) for c in cmds]
    if a.list:
        for c in cmds:
            print(f"{c.family}-{c.case}: {c.tool} {c.args} (timeout {c.timeout_s:.0f} s)")
        return 0
    dev = device_kind(a.device)
    meta = {"device_slug": dev["slug"], "device_type": dev["type"],
            "platform_vendor": dev["vendor"], "host_cpu": host_cpu(),
            "cltune_version": cltune_version(), "commit": a.commit or git_commit(),
            "preset": a.preset}
    folder = a.out / dev["slug"]
    folder.mkdir(parents=True, exist_ok=True)
    print(f"# {dev['name']} ({dev['vendor']}, {dev['type']}) -> {folder}", flush=True)
    t0 = time.monotonic()
    failed = 0
    order = {(c.family, c.case): i for i, c in enumerate(PRESETS[a.preset])}
    for c in cmds:
        rec = run_one(c, a.device, dev, meta, a.kt_python, order[c.family, c.case])
        path = folder / f"{c.family}-{c.case}.json"
        path.write_text(json.dumps(rec, indent=1) + "\n")
        wrong = sorted({k for e in rec.get("sizes", rec.get("cases", [])) for k in e["wrong"]})
        state = (f"FAILED: {rec['error']}" if "error" in rec else
                 f"wrong answers: {', '.join(wrong)}" if wrong else "ok")
        failed += "error" in rec
        print(f"{c.family}-{c.case}: {rec.get('elapsed_s', 0):.1f} s, {state}", flush=True)
    print(f"# {len(cmds)} commands, {failed} failed, {time.monotonic() - t0:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
