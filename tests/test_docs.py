"""The docs cover the CLI: every command appears in the README with its example."""

from pathlib import Path

from cltune.cli.app import COMMANDS

README = Path(__file__).resolve().parent.parent / "README.md"


def test_every_command_in_readme():
    text = README.read_text()
    for name in COMMANDS:
        assert f"cltune {name}" in text, f"README does not show `cltune {name}`"


def test_readme_names_the_test_command():
    assert "python -m pytest -q" in README.read_text()
