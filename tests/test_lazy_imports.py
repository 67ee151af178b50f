"""What importing cltune loads, asked of a fresh interpreter (as Kernel Tuner's
test_lazy_imports.py does): `import cltune` and `import cltune.tuning_db` stay cheap, and the
application's path (`get_reducer`, `ReductionKernel`, the statistics) never loads the tuner."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.multiprocess


def _loaded(code: str) -> set[str]:
    """The top-level packages and cltune modules loaded after running `code`."""
    probe = (f"{code}\nimport json, sys\n"
             "print(json.dumps(sorted(m for m in sys.modules if '.' not in m "
             "or m.startswith('cltune.'))))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         timeout=120, check=True)
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


def test_import_cltune_loads_neither_opencl_nor_the_database_nor_the_tuner():
    mods = _loaded("import cltune")
    assert not {"pyopencl", "numpy", "sqlalchemy", "optuna"} & mods, mods
    assert not any(m.split(".")[:2] in (["cltune", "families"], ["cltune", "tuning"],
                                        ["cltune", "stats"]) for m in mods), sorted(mods)


def test_import_tuning_db_loads_no_opencl_and_no_sqlalchemy_until_a_store_is_opened():
    mods = _loaded("import cltune.tuning_db, cltune.tuning_db.answer, cltune.tuning_db.shipped")
    assert not {"pyopencl", "sqlalchemy", "optuna"} & mods, mods
    assert not any(m.startswith(("cltune.families", "cltune.opencl", "cltune.device.select"))
                   for m in mods), sorted(mods)


def test_the_public_api_loads_no_tuner_and_no_sqlalchemy():
    mods = _loaded("import cltune\n"
                   "for name in cltune.__all__:\n    getattr(cltune, name)")
    assert "pyopencl" in mods  # the API is loaded for real
    assert not {"optuna", "sqlalchemy"} & mods, mods
    assert not any(m.split(".")[:2] in (["cltune", "tuning"], ["cltune", "cli"])
                   for m in mods), sorted(mods)


def test_every_public_name_resolves_and_dir_lists_it():
    out = subprocess.run([sys.executable, "-c",
                          "import cltune\nmissing = [n for n in cltune.__all__ "
                          "if getattr(cltune, n, None) is None]\n"
                          "print(missing, set(cltune.__all__) <= set(dir(cltune)))"],
                         capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "[] True", out.stdout + out.stderr


def test_the_cli_help_loads_no_tuner():
    mods = _loaded("import cltune.cli.app")
    assert not {"optuna", "sqlalchemy"} & mods, mods
