"""The package under test is the installed cltune, whole, in this process and in the Pythons
that tests start: `pip install .` puts it in site-packages, `pip install -e .` maps cltune/,
kernels/ and tuning_db/ of the checkout to cltune, cltune.kernels and cltune.tuning_db. The
checkout's cltune/ directory is never picked up from sys.path by accident (tests/conftest.py)."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

import cltune
import cltune.kernels
import cltune.tuning_db

ROOT = Path(__file__).resolve().parent.parent
WHERE = ("import cltune, cltune.kernels, cltune.tuning_db; "
         "print(cltune.__file__, cltune.kernels.__file__, cltune.tuning_db.__file__)")


def _installed_init() -> Path:
    """Where the installed distribution's cltune/__init__.py is."""
    dist = importlib.metadata.distribution("cltune")
    direct = json.loads(dist.read_text("direct_url.json") or "{}")
    if direct.get("dir_info", {}).get("editable"):
        return Path(unquote(urlparse(direct["url"]).path)).resolve() / "cltune" / "__init__.py"
    return Path(dist.locate_file("cltune/__init__.py")).resolve()


def test_the_installed_package_is_under_test():
    assert Path(cltune.__file__).resolve() == _installed_init(), (cltune.__file__, sys.path)
    assert len(cltune.__path__) == 1, cltune.__path__
    assert (Path(cltune.kernels.__file__).parent / "reduce.cl").is_file()
    assert (Path(cltune.tuning_db.__file__).parent / "shipped").is_dir()
    from cltune.families.reduce.kernel import kernel_source

    assert "clt_stage1" in kernel_source()


def test_nothing_else_is_importable_through_the_package():
    for name in ("cltune.cltune", "cltune.tests", "kernels", "tuning_db"):
        assert importlib.util.find_spec(name) is None, name
    assert all(Path(p or ".").resolve() != ROOT for p in sys.path), sys.path


@pytest.mark.multiprocess
def test_child_pythons_started_from_the_checkout_import_the_same_package():
    """Subprocess tests start `python -m cltune` / `python -c` with the test run's working
    directory (in CI the repository root, whose cltune/ must not shadow the installed one)."""
    r = subprocess.run([sys.executable, "-c", WHERE], capture_output=True, text=True,
                       timeout=120, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == [cltune.__file__, cltune.kernels.__file__,
                                cltune.tuning_db.__file__]


@pytest.mark.multiprocess
def test_an_uninstalled_checkout_says_how_to_install_it(tmp_path):
    """A checkout's cltune/ imported without `pip install -e .` (e.g. `python -m cltune` from
    the repository root with a non-editable install) names the fix instead of failing later
    on a missing cltune.tuning_db."""
    import shutil

    shutil.copytree(ROOT / "cltune", tmp_path / "cltune")
    (tmp_path / "tuning_db").mkdir()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONSAFEPATH"}
    # -S: no site-packages, so no editable-install finder maps cltune.tuning_db either
    r = subprocess.run([sys.executable, "-S", "-c", "import cltune"], capture_output=True,
                       text=True, timeout=120, cwd=tmp_path, env=env)
    assert r.returncode == 1
    assert f"source checkout {tmp_path} without being installed" in r.stderr, r.stderr
    assert f"pip install -e {tmp_path}" in r.stderr


def test_every_subpackage_is_in_the_wheel():
    """pyproject.toml lists the packages by hand (the package-dir mapping of kernels/ and
    tuning_db/ rules out discovery): every folder of cltune/ with an __init__.py is listed, so a
    wheel (what CI and users install) carries it, not only an editable install."""
    import tomllib

    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
                 ["packages"])
    found = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "cltune").rglob(
        "__init__.py") if "__pycache__" not in p.parts}
    assert found <= listed, sorted(found - listed)
