"""`pip install 'cltune[intel]'` gives a working CPU device without environment variables:
`import cltune` registers the pip-installed Intel runtime for pyopencl's ICD loader."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
from support.require import need

from cltune.device import icd

LIST = textwrap.dedent("""
    import json, os
    import cltune, pyopencl as cl
    from cltune.device.select import device_health, list_devices
    print(json.dumps({"vendors": os.environ.get("OCL_ICD_VENDORS"),
                      "devices": [[i.platform, device_health(i).ok] for i in list_devices()]}))
""")


def _clean_env(tmp_path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("OCL_ICD_VENDORS", "LD_LIBRARY_PATH", "CLTUNE_NO_ICD_SETUP")}
    return {**env, "CLTUNE_CACHE_DIR": str(tmp_path), **extra}


@pytest.mark.multiprocess
def test_intel_runtime_from_pip_works_without_environment_variables(tmp_path):
    need(icd.intel_cpu_library() is not None,
         "Intel's CPU runtime from pip (pip install 'cltune[intel]')")
    r = subprocess.run([sys.executable, "-c", LIST], capture_output=True, text=True,
                       timeout=300, env=_clean_env(tmp_path))
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    assert got["vendors"] and got["vendors"].startswith(str(tmp_path)), got
    intel = [ok for plat, ok in got["devices"] if plat.startswith("Intel")]
    assert intel == [True], got
    folder = os.listdir(got["vendors"])
    system = [f for f in os.listdir(icd.SYSTEM_VENDORS)] if icd.SYSTEM_VENDORS.is_dir() else []
    assert "cltune-intel-cpu.icd" in folder and set(system) <= set(folder), (folder, system)


@pytest.mark.multiprocess
def test_a_users_own_setting_is_left_alone(tmp_path):
    mine = tmp_path / "mine"
    mine.mkdir()
    r = subprocess.run([sys.executable, "-c", LIST], capture_output=True, text=True,
                       timeout=300, env=_clean_env(tmp_path, OCL_ICD_VENDORS=str(mine)))
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["vendors"] == str(mine)
    r = subprocess.run([sys.executable, "-c", LIST], capture_output=True, text=True,
                       timeout=300, env=_clean_env(tmp_path, CLTUNE_NO_ICD_SETUP="1"))
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["vendors"] is None


def test_folder_is_written_once_per_content(tmp_path, monkeypatch):
    lib = icd.intel_cpu_library()
    need(lib is not None, "Intel's CPU runtime from pip (pip install 'cltune[intel]')")
    monkeypatch.setenv("CLTUNE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("CLTUNE_NO_ICD_SETUP", raising=False)
    folders = []
    for _ in range(2):
        monkeypatch.setenv("OCL_ICD_VENDORS", "")  # unset for register(), restored afterwards
        monkeypatch.delenv("OCL_ICD_VENDORS")
        folders.append(icd.register())
        assert os.environ["OCL_ICD_VENDORS"] == str(folders[-1])
    a, b = folders
    assert a == b and a.parent == tmp_path / "cache"
    assert (a / "cltune-intel-cpu.icd").read_text() == f"{lib}\n"
    assert not [p for p in (tmp_path / "cache").iterdir() if p.name.startswith(".icd-")]
