"""T1 problem files (the autotuning benchmark suites' input format, Kernel Tuner's
`tune_kernel_T1`) run by `cltune tune --t1 FILE`, and T4 result files written from the run.

A T1 file names the kernel (`KernelSpecification`: `KernelName`, `KernelFile` — found beside
the cwd, the T1 file or its folder's parent —, `ProblemSize`, `GridDivX/Y/Z`, `Arguments`,
`CompilerOptions`), the space (`ConfigurationSpace`: `TuningParameters` with `Values` as a list
or a Python expression of one, `Conditions` as restriction expressions), and optionally the
search (`Search`: a strategy's name and attributes) and the budget (`Budget`:
`ConfigurationCount` or `TuningDuration` in seconds). The file's expressions are evaluated
by a small evaluator of literals, arithmetic, comparisons, `range`/`list` and list
comprehensions, nothing else (a problem file is data, not a program); arguments are float
vectors (random or constant) and float or int32 scalars, as Kernel Tuner supports them.
"""

from __future__ import annotations

import ast
import json
import operator
from pathlib import Path
from typing import Any

import numpy as np

from cltune.user.results import TIMING_KEYS


class T1Error(ValueError):
    """A T1 file cltune cannot run; the message says where."""


_BIN = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
        ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
        ast.Pow: operator.pow, ast.LShift: operator.lshift, ast.RShift: operator.rshift}
_CMP = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
        ast.Gt: operator.gt, ast.GtE: operator.ge}


def value_of(text: Any, names: dict | None = None) -> Any:  # noqa: ANN401
    """A T1 expression's value: literals, + - * / // % ** << >>, comparisons, lists and
    tuples, `range(...)`, `list(...)`, list comprehensions, and the given names."""
    if not isinstance(text, str):
        return text
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as e:
        raise T1Error(f"expression {text!r:.80}: {e.msg}") from None
    return _eval(tree.body, dict(names or {}), text)


def _eval(n: ast.AST, env: dict, text: str) -> Any:  # noqa: ANN401, PLR0911
    if isinstance(n, ast.Constant) and isinstance(n.value, (int, float, str, bool)):
        return n.value
    if isinstance(n, (ast.List, ast.Tuple)):
        return [_eval(e, env, text) for e in n.elts]
    if isinstance(n, ast.Name):
        if n.id in env:
            return env[n.id]
        raise T1Error(f"expression {text!r:.80}: unknown name {n.id!r}")
    if isinstance(n, ast.UnaryOp) and isinstance(n.op, (ast.USub, ast.UAdd)):
        v = _eval(n.operand, env, text)
        return -v if isinstance(n.op, ast.USub) else +v
    if isinstance(n, ast.BinOp) and type(n.op) in _BIN:
        a, b = _eval(n.left, env, text), _eval(n.right, env, text)
        if isinstance(n.op, ast.Pow) and abs(b) > 64:
            raise T1Error(f"expression {text!r:.80}: exponent too large")
        return _BIN[type(n.op)](a, b)
    if isinstance(n, ast.Compare) and len(n.ops) == 1 and type(n.ops[0]) in _CMP:
        return _CMP[type(n.ops[0])](_eval(n.left, env, text), _eval(n.comparators[0], env, text))
    if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in (
            "range", "list") and not n.keywords:
        args = [_eval(a, env, text) for a in n.args]
        out = list(range(*args)) if n.func.id == "range" else list(*args)
        if len(out) > 1_000_000:
            raise T1Error(f"expression {text!r:.80}: more than a million values")
        return out
    if isinstance(n, ast.ListComp) and len(n.generators) == 1:
        g = n.generators[0]
        if not isinstance(g.target, ast.Name) or g.is_async:
            raise T1Error(f"expression {text!r:.80}: only `for name in ...` comprehensions")
        out = []
        for v in _eval(g.iter, env, text):
            inner = {**env, g.target.id: v}
            if all(_eval(c, inner, text) for c in g.ifs):
                out.append(_eval(n.elt, inner, text))
        return out
    raise T1Error(f"expression {text!r:.80}: {type(n).__name__} is not allowed in a T1 file")


def _kernel_file(name: str, where: Path) -> Path:
    for p in (Path(name), where.parent / name, where.parent.parent / name):
        if p.is_file():
            return p
    raise T1Error(f"KernelFile {name!r:.120} is not beside the cwd, {where.parent} or its "
                  f"parent")


def read_t1(path: str | Path) -> dict:
    """tune_kernel's arguments (as keywords) of a T1 file."""
    p = Path(path)
    try:
        doc = json.loads(p.read_text())
        spec = doc["KernelSpecification"]
        space = doc["ConfigurationSpace"]
    except (OSError, ValueError) as e:
        raise T1Error(f"{path}: not a T1 file: {e}") from None
    except (KeyError, TypeError) as e:
        raise T1Error(f"{path}: not a T1 file: no {e}") from None
    lang = str(spec.get("Language", "OpenCL"))
    if lang.upper() != "OPENCL":
        raise T1Error(f"{path}: Language {lang!r:.20}: cltune runs OpenCL kernels")
    tune_params: dict[str, list] = {}
    for i, tp in enumerate(space.get("TuningParameters", ())):
        vals = value_of(tp.get("Values"))
        if not isinstance(vals, list) or not vals:
            raise T1Error(f"{path}: TuningParameters[{i}] Values is not a list of values")
        tune_params[str(tp.get("Name"))] = vals
    restrictions = [str(c["Expression"]) for c in space.get("Conditions", ())
                    if isinstance(c, dict) and "Expression" in c]
    problem_size = spec.get("ProblemSize")
    if isinstance(problem_size, list):
        problem_size = tuple(problem_size)
    args = []
    for i, a in enumerate(spec.get("Arguments", ())):
        kind, typ = a.get("MemoryType"), a.get("Type")
        if kind == "Vector":
            if typ != "float":
                raise T1Error(f"{path}: Arguments[{i}]: vectors of {typ!r:.20} are not supported "
                              f"(float only, as in Kernel Tuner)")
            size = value_of(a.get("Size"), {"ProblemSize": problem_size})
            if isinstance(size, bool) or not isinstance(size, int) or not 0 < size <= 1 << 34:
                raise T1Error(f"{path}: Arguments[{i}]: Size {size!r:.40} is not a size")
            if a.get("FillType") == "Random":
                args.append(np.random.default_rng(i).standard_normal(size).astype(np.float32))
            elif a.get("FillType") == "Constant":
                args.append(np.full(size, float(a.get("FillValue", 0.0)), np.float32))
            else:
                raise T1Error(f"{path}: Arguments[{i}]: FillType {a.get('FillType')!r:.20}")
        elif kind == "Scalar":
            conv = {"float": np.float32, "int32": np.int32}.get(typ)
            if conv is None:
                raise T1Error(f"{path}: Arguments[{i}]: scalars of {typ!r:.20} are not supported")
            args.append(conv(a.get("FillValue", 0)))
        else:
            raise T1Error(f"{path}: Arguments[{i}]: MemoryType {kind!r:.20}")
    kw: dict[str, Any] = {
        "kernel_name": str(spec.get("KernelName")),
        "kernel_source": str(_kernel_file(str(spec.get("KernelFile")), p)),
        "problem_size": problem_size, "arguments": args, "tune_params": tune_params,
        "restrictions": restrictions or None,
        "compiler_options": [str(o) for o in spec.get("CompilerOptions", ())] or None}
    for axis in "XYZ":
        div = spec.get(f"GridDiv{axis}")
        kw[f"grid_div_{axis.lower()}"] = div if div else None
    search = doc.get("Search") or {}
    if search.get("Name"):
        kw["strategy"] = str(search["Name"])
        kw["strategy_options"] = {str(x["Name"]): x["Value"]
                                  for x in search.get("Attributes", ())}
    for b in (doc.get("Budget") or ())[:1]:
        so = kw.setdefault("strategy_options", {})
        if b.get("Type") == "ConfigurationCount":
            so["max_fevals"] = int(b["BudgetValue"])
        elif b.get("Type") == "TuningDuration":
            so["time_limit"] = float(b["BudgetValue"])
        else:
            raise T1Error(f"{path}: Budget type {b.get('Type')!r:.30} is not supported")
    return kw


def t4_document(results: list[dict], failed: list[dict], tune_params: dict,
                objective: str = "time") -> dict:
    """The T4 results document of a run: every config, valid or not."""
    names = list(tune_params)
    skip = set(names) | set(TIMING_KEYS) | {"timestamp", "times", "strategy_time",
                                            "framework_time", "step", "reason"}
    invalid = {"CompilationFailedConfig": "compile", "CompileError": "compile",
               "RuntimeFailedConfig": "runtime", "InvalidConfig": "constraints"}
    out = []
    for r in [*results, *failed]:
        err = r.get("__error__")
        out.append({
            "timestamp": r.get("timestamp", ""),
            "configuration": {k: r[k] for k in names if k in r},
            "times": {"compilation": r.get("compile_time", 0),
                      "benchmark": r.get("benchmark_time", 0),
                      "framework": r.get("framework_time", 0),
                      "search_algorithm": r.get("strategy_time", 0),
                      "validation": r.get("verification_time", 0),
                      "runtimes": r.get("times", [])},
            "invalidity": invalid.get(str(err), "runtime") if err else "correct",
            "correctness": 0 if r.get("step") == "validate" else 1,
            "measurements": [{"name": k, "value": v if not isinstance(v, float) else float(v),
                              "unit": "ms" if k.startswith("time") else ""}
                             for k, v in r.items() if k not in skip and k != "__error__"],
            "objectives": [objective]})
    return {"results": out, "schema_version": "1.0.0",
            "metadata": {"timeunit": "milliseconds"}}
