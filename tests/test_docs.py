"""The docs cover the CLI: every command appears in the README with its example."""

from pathlib import Path

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
