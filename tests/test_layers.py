"""The import graph of cltune/ and tuning_db/, built from the source (`ast`; nothing is
imported): it is acyclic, imports inside functions are deliberate (each one commented), and the
layer rules of docs/architecture.md hold by package -- no hand-kept list of modules.

Modules are named as they install: cltune/a/b.py is `cltune.a.b`, tuning_db/x.py is
`cltune.tuning_db.x`. Every import statement counts, at any nesting (function-level imports
included); imports under `if TYPE_CHECKING:` never run and do not count.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

@dataclass(frozen=True)
class Imp:
    file: str
    line: int
    module: str  # absolute; for `from m import n`, `m.n` when that is a project module
    name: str  # the name taken by `from m import name`, else ""
    typing_only: bool
    in_function: bool = False
    commented: bool = False  # a comment on the import's line (or the line before it)

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

    lines = path.read_text().splitlines()

    def commented(node: ast.stmt) -> bool:
        here = lines[node.lineno - 1:node.end_lineno]
        return any("#" in line for line in here) or (
            node.lineno >= 2 and lines[node.lineno - 2].strip().startswith("#"))

    def visit(node: ast.AST, typing_only: bool, depth: int = 0) -> None:
        fn = depth > 0
        if isinstance(node, ast.Import):
            out.extend(Imp(rel, node.lineno, a.name, "", typing_only, fn, commented(node))
                       for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                pkg = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(pkg + ([node.module] if node.module else []))
            for a in node.names:
                sub = f"{base}.{a.name}"
                out.append(Imp(rel, node.lineno, sub if sub in FILES else base, a.name,
                               typing_only, fn, commented(node)))
        inner = depth + isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        for child in ast.iter_child_nodes(node):
            visit(child, typing_only or (isinstance(node, ast.If)
                                         and _is_type_checking(node.test)
                                         and child in node.body), inner)

    visit(ast.parse(path.read_text(), rel), False)
    return out


IMPORTS = {m: _imports(m) for m in FILES}


def _hits(module: str, target: str) -> bool:
    return module == target or module.startswith(target + ".")




def _package(mod: str) -> str:
    """The layer a module belongs to: `cltune.families.<family>` for a family's folder, else
    the first subpackage (`cltune.core`, `cltune.tuning_db`, ...; `cltune` for the top)."""
    parts = mod.split(".")
    if parts[:2] == ["cltune", "families"] and len(parts) >= 4:
        return ".".join(parts[:3])
    return ".".join(parts[:2])


def _edges() -> list[tuple[str, Imp]]:
    return [(m, i) for m, imps in IMPORTS.items() for i in imps
            if not i.typing_only and i.module in FILES and i.module != m]


FAMILIES = sorted({_package(m) for m in FILES if m.startswith("cltune.families.")
                   and m.count(".") >= 3})


def test_the_modules_are_found():
    assert {"cltune.families.reduce.api", "cltune.tuning_db.store", "cltune.cli.app"} <= set(FILES)
    assert {"cltune.families.reduce", "cltune.families.axis", "cltune.families.expr",
            "cltune.families.expr_axis"} <= set(FAMILIES)


def test_the_import_graph_is_acyclic():
    graph: dict[str, set[str]] = {m: set() for m in FILES}
    for m, i in _edges():
        if not m.startswith(i.module + "."):  # a package's own __init__ is no edge
            graph[m].add(i.module)
    state: dict[str, int] = {}
    stack: list[str] = []

    def walk(m: str) -> list[str] | None:
        state[m] = 1
        stack.append(m)
        for n in sorted(graph[m]):
            if state.get(n) == 1:
                return stack[stack.index(n):] + [n]
            if n not in state:
                found = walk(n)
                if found:
                    return found
        stack.pop()
        state[m] = 2
        return None

    for m in sorted(graph):
        if m not in state:
            cycle = walk(m)
            assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_imports_inside_functions_are_deliberate_and_commented():
    """Only an optional dependency or import-time cost is a reason (house rule 18); the
    comment on the line says which."""
    bad = [f"{i.where()}: import of {i.module} inside a function without a comment saying why"
           for imps in IMPORTS.values() for i in imps if i.in_function and not i.commented]
    assert not bad, "\n".join(bad)


def test_no_module_outside_a_subpackage():
    flat = [m for m in FILES if m.count(".") == 1 and m.startswith("cltune.")
            and not FILES[m].name == "__init__.py"
            and m not in ("cltune.__main__", "cltune.version", "cltune.tuning_db",
                          "cltune.kernels")]
    assert not flat, f"modules at cltune/ top level (put each in its subpackage): {flat}"


def _rule(check, why: str) -> None:  # noqa: ANN001
    bad = [f"{i.where()}: {_package(m)} imports {i.module}: {why}"
           for m, i in _edges() if check(m, i)]
    assert not bad, "\n".join(bad)


def test_nothing_imports_the_cli():
    _rule(lambda m, i: _hits(i.module, "cltune.cli") and not _hits(m, "cltune.cli")
          and m != "cltune.__main__", "nothing but cltune/__main__.py imports the CLI")


def test_a_family_imports_no_other_family():
    """Families meet only below them (core, opencl, device, isolation, families.base) or
    through the registry (`core.family.entry`), so adding one never edits another."""
    _rule(lambda m, i: _package(m) in FAMILIES and _package(i.module) in FAMILIES
          and _package(i.module) != _package(m), "another family's module")


def test_families_never_import_stats_or_cli_and_reach_tuning_only_lazily_from_their_api():
    """A family's api may offer tuning (`knl.tune`, first-use tuning): that import is inside
    the function (the tuner loads optuna) and never at module level."""
    _rule(lambda m, i: _hits(m, "cltune.families") and _package(i.module) in (
        "cltune.stats", "cltune.cli"), "families sit below the statistics and the CLI")
    _rule(lambda m, i: _hits(m, "cltune.families") and _hits(i.module, "cltune.tuning")
          and not (m.endswith(".api") and i.in_function),
          "only a family's api, inside a function, may reach the tuner")


def test_the_tuner_reaches_families_only_through_the_registry():
    _rule(lambda m, i: _hits(m, "cltune.tuning") and _package(i.module) in FAMILIES,
          "the tuning driver names no family (core.family / families.base only)")


def test_shared_layers_import_no_family_statistics_tuner_or_cli():
    shared = ("cltune.core", "cltune.opencl", "cltune.device", "cltune.isolation",
              "cltune.families.base")
    _rule(lambda m, i: any(_hits(m, s) for s in shared) and (
        _package(i.module) in FAMILIES or _package(i.module) in (
            "cltune.stats", "cltune.tuning", "cltune.cli")),
        "the shared layers sit below every family (a family is reached through the registry)")


def test_core_imports_only_core():
    _rule(lambda m, i: _hits(m, "cltune.core") and not _hits(i.module, "cltune.core"),
          "core holds value types and the registry; it imports nothing else of cltune")


def test_tuning_db_imports_only_core():
    _rule(lambda m, i: _hits(m, "cltune.tuning_db") and not (
        _hits(i.module, "cltune.tuning_db") or _hits(i.module, "cltune.core")),
        "the store knows families only through core (value types, the registry)")


def test_no_private_name_is_imported_from_another_project_module():
    bad = [f"{i.where()}: imports private {i.name} from {i.module}"
           for m, imps in IMPORTS.items() for i in imps
           if i.name.startswith("_") and not i.name.endswith("__")
           and _hits(i.module, "cltune") and i.module != m]
    assert not bad, "\n".join(bad)


#: the fixed shape of a family folder (house rule 16): the same role in the same file name
ROLES = ("family", "config", "kernel", "launch", "reference", "defaults", "target", "serve",
         "api")


def test_every_family_folder_has_the_same_roles():
    for fam in FAMILIES:
        have = {m.rsplit(".", 1)[1] for m in FILES if m.startswith(fam + ".")}
        assert set(ROLES) <= have, f"{fam} lacks {sorted(set(ROLES) - have)}"
        assert f"{fam}.family" in FILES and "FAMILY = Family(" in FILES[
            f"{fam}.family"].read_text(), f"{fam}/family.py defines no FAMILY descriptor"


def test_every_family_folder_is_in_the_registry():
    registry = (ROOT / "cltune" / "core" / "family.py").read_text()
    for fam in FAMILIES:
        assert f'"{fam}.family"' in registry, f"{fam} is not in core.family.BUILTIN"


def test_every_package_is_in_the_wheel():
    """pyproject's package list names every folder of cltune/ with an __init__.py (a new
    subpackage left out installs without it: `No module named ...` only on a fresh install)."""
    import tomllib

    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
                 ["packages"])
    found = {".".join(p.parent.relative_to(ROOT).parts)
             for p in (ROOT / "cltune").rglob("__init__.py")}
    assert not found - listed, f"not in pyproject's packages: {sorted(found - listed)}"
