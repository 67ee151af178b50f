"""scripts/bench_compact.py runs end to end on the test device: its answers check against numpy
(the script asserts them) and it prints a timed line per case with cltune's and pyopencl's."""

from __future__ import annotations

import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "bench_compact.py"


def _script():
    spec = importlib.util.spec_from_file_location("bench_compact", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_bench_compact_prints_both_contenders(info, capsys):
    _script().main(["--device", str(info.index), "--sizes", "2^10,3000", "--segments", "7",
                    "--calls", "1", "--repeats", "1"])
    lines = capsys.readouterr().out.splitlines()
    rows = [ln for ln in lines if ": " in ln and " us (" in ln]
    seg = [ln for ln in rows if ln.lstrip().startswith("segments")]
    comp = [ln for ln in rows if ln.lstrip().startswith("copy_if")]
    assert len(seg) == 2 and len(comp) == 2, lines
    assert all("copy " in ln for ln in seg)
    assert all("cltune " in ln and "pyopencl " in ln for ln in seg + comp)


def test_bench_compact_one_segment_and_switches(info, capsys):
    _script().main(["--device", str(info.index), "--sizes", "100", "--segments", "1",
                    "--calls", "1", "--repeats", "1", "--no-compact"])
    out = capsys.readouterr().out
    assert "segments n=100 m=1:" in out and "copy_if" not in out
