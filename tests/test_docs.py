"""The docs cover the CLI (every command appears in the README with its example), the API
reference covers every public name, and the README's Python examples run."""

from pathlib import Path

import pytest

from cltune.cli.app import COMMANDS

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"


def test_every_command_in_readme():
    text = README.read_text()
    for name in COMMANDS:
        assert f"cltune {name}" in text, f"README does not show `cltune {name}`"


def test_readme_names_the_test_command():
    assert "python -m pytest -q" in README.read_text()


def test_architecture_names_every_module():
    """docs/architecture.md places every module of cltune/ and tuning_db/ (by its path; a
    family's module by its folder and its role's file name)."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    top = {"cltune/__init__.py", "cltune/__main__.py", "cltune/version.py"}
    missing = []
    for d in ("cltune", "tuning_db"):
        for p in sorted((ROOT / d).rglob("*.py")):
            rel = p.relative_to(ROOT).as_posix()
            if p.name == "__init__.py" and rel not in top:
                continue
            parts = p.relative_to(ROOT).parts
            if parts[:2] == ("cltune", "families") and len(parts) == 4:
                # a family's module is placed by its folder and its role's file name
                if f"{parts[2]}/" in text and f"`{parts[3]}`" in text:
                    continue
            if rel not in text:
                missing.append(rel)
    assert not missing, f"docs/architecture.md does not place: {missing}"


def test_the_api_reference_documents_every_public_name():
    """docs/api/ renders each name of cltune.__all__ once, from the module it is defined in
    (cltune's names are imported lazily, so the static reference names their home), and
    mkdocs.yml's navigation holds every page of it (`mkdocs build --strict` in CI)."""
    import re

    import cltune

    pages = sorted((ROOT / "docs" / "api").glob("*.md"))
    found: dict[str, list[str]] = {}
    for p in pages:
        for target in re.findall(r"^::: ([\w.]+)$", p.read_text(), re.M):
            mod, _, name = target.rpartition(".")
            found.setdefault(name, []).append(mod)
    public = {n: m for n, m in cltune._API.items() if n in cltune.__all__}
    assert set(public) == set(cltune.__all__) - {"__version__"}
    assert {n: [m] for n, m in public.items()} == found
    nav = (ROOT / "mkdocs.yml").read_text()
    assert all(f"api/{p.name}" in nav for p in pages)


#: the pages whose Python examples a test runs (each page in one namespace, in order), and
#: how many examples each has at least
EXAMPLES = {"README.md": 8, "docs/devices.md": 1, "docs/tuning.md": 2, "docs/reducer.md": 4,
            "docs/axes.md": 4, "docs/statistics.md": 4, "docs/many.md": 3,
            "docs/expressions.md": 1, "docs/scans.md": 4, "docs/selection.md": 3,
            "docs/sort.md": 3, "docs/own-kernels.md": 1}


@pytest.mark.slow
@pytest.mark.multiprocess
@pytest.mark.parametrize("page", list(EXAMPLES))
def test_the_examples_run(page, ctx, monkeypatch, tmp_path):
    """Every Python example of the README and the guides runs on the test device, in order
    and in one namespace a page, as a reader pasting them into one session would run them
    (`cl.create_some_context` answers the test device's context; what they tune goes to a
    database of the test's own)."""
    import re

    import pyopencl as cl

    blocks = re.findall(r"```python\n(.*?)```", (ROOT / page).read_text(), re.S)
    assert len(blocks) >= EXAMPLES[page]
    monkeypatch.setattr(cl, "create_some_context", lambda *a, **k: ctx)
    monkeypatch.setenv("CLTUNE_DB", f"sqlite:///{tmp_path / 'examples.db'}")
    ns: dict = {}
    for i, code in enumerate(blocks, 1):
        try:
            exec(compile(code, f"<{page} python example {i}>", "exec"), ns)  # noqa: S102
        except Exception as e:  # noqa: BLE001 - the example's own error, named
            pytest.fail(f"{page}'s python example {i} failed: {type(e).__name__}: {e}\n{code}")


def test_every_page_with_python_examples_is_run():
    pages = [p for p in [README, *sorted((ROOT / "docs").glob("*.md"))]
             if "```python" in p.read_text()]
    assert sorted(p.relative_to(ROOT).as_posix() for p in pages) == sorted(EXAMPLES)


def test_every_script_is_named_by_a_doc():
    """scripts/ holds the tools the docs name (#43): every script there and under
    scripts/experiments/ is named by the README or a page under docs/ (the history and the
    measurement logs under docs/logs/ included), but for modules the scripts import (their
    shared helpers)."""
    import re

    scripts = ROOT / "scripts"
    texts = [README.read_text(), *(p.read_text() for p in (ROOT / "docs").rglob("*.md")),
             *(p.read_text() for p in (ROOT / "docs" / "logs").glob("*.txt"))]
    names = sorted(p for p in [*scripts.glob("*.py"), *scripts.glob("*.sh"),
                               *(scripts / "experiments").glob("*.py")])
    sources = "\n".join(p.read_text() for p in names)
    imported = set(re.findall(r"^\s*from (\w+) import|^\s*import (\w+)$", sources, re.M))
    helpers = {n for pair in imported for n in pair if n}
    uncited = [p.relative_to(ROOT).as_posix() for p in names
               if p.stem not in helpers and not any(p.name in t for t in texts)]
    assert not uncited, f"scripts no doc names (name them, or let them leave the tree): {uncited}"
