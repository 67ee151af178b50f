"""Import rules between the layers, checked on the source text (`ast`; nothing is imported).

The rules and the layers are described in docs/architecture.md. Modules are named as they
install: cltune/x.py is `cltune.x`, tuning_db/x.py is `cltune.tuning_db.x`. Every import
statement counts, at any nesting (function-level imports included); imports under
`if TYPE_CHECKING:` count too, except when asking what a module loads at run time (rule c).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: Rule (b): what the runtime (get_reducer and the Reducer) must never load, even indirectly.
RUNTIME_FORBIDDEN = ("cltune.tuning.tuner", "cltune.families.reduce.reference", "cltune.opencl.measure", "optuna")
#: Rule (c): the only cltune modules tuning_db may import: value types, no OpenCL.
VALUE_MODULES = {"cltune.families.reduce.config", "cltune.core.ops", "cltune.core.family"}
#: Rule (c), known violations to remove: (module, imported cltune module). None today.
KNOWN_HEAVY_IMPORTS: set[tuple[str, str]] = set()
#: Rule (d), known violations to remove: (module, imported private name). None today.
KNOWN_PRIVATE_IMPORTS: set[tuple[str, str]] = set()


@dataclass(frozen=True)
class Imp:
    file: str
    line: int
    module: str  # absolute; for `from m import n`, `m.n` when that is a project module
    name: str  # the name taken by `from m import name`, else ""
    typing_only: bool

    def where(self) -> str:
        return f"{self.file}:{self.line}"


def _name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[0] == "tuning_db":
        parts.insert(0, "cltune")
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


FILES = {_name(p): p for d in ("cltune", "tuning_db") for p in sorted((ROOT / d).rglob("*.py"))}


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(mod: str) -> list[Imp]:
    path = FILES[mod]
    rel = str(path.relative_to(ROOT))
    package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
    out: list[Imp] = []

    def visit(node: ast.AST, typing_only: bool) -> None:
        if isinstance(node, ast.Import):
            out.extend(Imp(rel, node.lineno, a.name, "", typing_only) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                pkg = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(pkg + ([node.module] if node.module else []))
            for a in node.names:
                sub = f"{base}.{a.name}"
                out.append(Imp(rel, node.lineno, sub if sub in FILES else base, a.name,
                               typing_only))
        for child in ast.iter_child_nodes(node):
            visit(child, typing_only or (isinstance(node, ast.If)
                                         and _is_type_checking(node.test)
                                         and child in node.body))

    visit(ast.parse(path.read_text(), rel), False)
    return out


IMPORTS = {m: _imports(m) for m in FILES}


def _loads(start: str) -> dict[str, list[Imp]]:
    """Every module `start` loads at run time (project modules followed, package __init__
    side effects not), each with the chain of imports that reaches it."""
    seen: dict[str, list[Imp]] = {start: []}
    todo = [start]
    while todo:
        mod = todo.pop()
        for imp in IMPORTS[mod]:
            if not imp.typing_only and imp.module not in seen:
                seen[imp.module] = [*seen[mod], imp]
                if imp.module in FILES:
                    todo.append(imp.module)
    return seen


def _chain(chain: list[Imp]) -> str:
    return " -> ".join(f"{i.where()} imports {i.module}" for i in chain)


def _hits(module: str, target: str) -> bool:
    return module == target or module.startswith(target + ".")


def test_the_modules_are_found():
    assert {"cltune.families.reduce.api", "cltune.tuning_db.store", "cltune.cli.app"} <= set(FILES)


def test_a_nothing_imports_the_cli():
    bad = [f"{i.where()}: rule (a) imports {i.module}: only cltune/__main__.py may"
           for m, imps in IMPORTS.items() if m != "cltune.__main__"
           for i in imps if _hits(i.module, "cltune.cli.app")]
    assert not bad, "\n".join(bad)


def test_b_the_runtime_never_loads_the_tuner_or_measurement():
    loads = _loads("cltune.families.reduce.api")
    bad = [f"rule (b) cltune/families/reduce/api.py loads {m}: {_chain(chain)}"
           for m, chain in loads.items() if any(_hits(m, f) for f in RUNTIME_FORBIDDEN)]
    bad += [f"{i.where()}: rule (b) cltune/families/reduce/api.py imports {i.module}"
            for i in IMPORTS["cltune.families.reduce.api"] if any(_hits(i.module, f)
                                                      for f in RUNTIME_FORBIDDEN)]
    assert not bad, "\n".join(bad)


def test_c_tuning_db_imports_only_value_modules_of_cltune():
    bad = [f"{i.where()}: rule (c) tuning_db imports {i.module}; allowed from cltune: "
           f"{sorted(VALUE_MODULES)}"
           for m, imps in IMPORTS.items() if _hits(m, "cltune.tuning_db") for i in imps
           if _hits(i.module, "cltune") and not _hits(i.module, "cltune.tuning_db")
           and i.module not in VALUE_MODULES and (m, i.module) not in KNOWN_HEAVY_IMPORTS]
    assert not bad, "\n".join(bad)


def test_c_the_value_modules_load_no_opencl():
    bad = [f"rule (c) {v} loads {m}: {_chain(chain)}" for v in sorted(VALUE_MODULES)
           for m, chain in _loads(v).items() if _hits(m, "pyopencl")]
    assert not bad, "\n".join(bad)


def test_d_no_private_name_is_imported_from_another_project_module():
    bad, seen = [], set()
    for m, imps in IMPORTS.items():
        for i in imps:
            if (i.name.startswith("_") and not i.name.endswith("__")
                    and _hits(i.module, "cltune") and i.module != m):
                key = (m, f"{i.module}.{i.name}")
                seen.add(key)
                if key not in KNOWN_PRIVATE_IMPORTS:
                    bad.append(f"{i.where()}: rule (d) imports private {i.name} from {i.module}")
    assert not bad, "\n".join(bad)
    gone = KNOWN_PRIVATE_IMPORTS - seen
    assert not gone, f"fixed, drop from KNOWN_PRIVATE_IMPORTS in tests/test_layers.py: {gone}"


#: Rule (e): the family-agnostic drivers reach a family only through its descriptor and target
FAMILY_AGNOSTIC = ("cltune.tuning.tuner", "cltune.tuning.reverify", "cltune.families.base")
FAMILY_MODULES = ("cltune.core.ops", "cltune.families.reduce.config", "cltune.core.strategies", "cltune.families.reduce.space",
                  "cltune.families.reduce.launch", "cltune.opencl.build", "cltune.families.reduce.plan", "cltune.families.reduce.reference",
                  "cltune.families.reduce.seeds", "cltune.families.reduce.defaults", "cltune.families.reduce.kernel",
                  "cltune.families.reduce.family", "cltune.families.reduce.target", "cltune.families.axis.family",
                  "cltune.families.axis.target", "cltune.families.axis.launch", "cltune.families.axis.kernel",
                  "cltune.families.axis.reference", "cltune.families.expr.family", "cltune.families.expr.target",
                  "cltune.families.expr.kernel", "cltune.families.expr.launch")


def test_e_tuner_and_verify_import_no_family_module():
    bad = [f"{i.where()}: rule (e) {m} imports {i.module}"
           for m in FAMILY_AGNOSTIC for i in IMPORTS[m]
           if any(_hits(i.module, f) for f in FAMILY_MODULES)]
    assert not bad, "\n".join(bad)
