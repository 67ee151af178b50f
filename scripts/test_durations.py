"""Write tests/durations.json from a pytest run's JUnit XML: each test's seconds (setup + call +
teardown), which tests/conftest.py reads to run the longest tests first and to mark every test
that takes more than `SLOW_S` as `slow` (so the README's quick set stays quick).

    python -m pytest -q -p no:cacheprovider --junitxml=/tmp/junit.xml
    python scripts/test_durations.py /tmp/junit.xml            # writes tests/durations.json

Measure on a 2-core machine (the CI's class) with the suite's own -n; the figures are a
schedule, not a benchmark: only their order and the slow threshold matter.
"""

from __future__ import annotations

import argparse
import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "tests" / "durations.json"


def durations(junit: Path) -> dict[str, float]:
    """nodeid -> seconds, for every test case of the run (`tests.test_x` -> tests/test_x.py)."""
    out: dict[str, float] = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        cls, name = case.get("classname", ""), case.get("name", "")
        if not cls or not name:
            continue
        parts = cls.split(".")
        # a test class adds itself to the classname: tests.test_x.TestY
        mod = [p for p in parts if p.startswith("test_")][:1] or parts[-1:]
        i = parts.index(mod[0])
        nodeid = "/".join(parts[:i + 1]) + ".py::" + "::".join([*parts[i + 1:], name])
        out[nodeid] = round(out.get(nodeid, 0.0) + float(case.get("time", 0) or 0), 2)
    return out


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("junit", type=Path, help="the JUnit XML of a whole run")
    ap.add_argument("-o", "--out", type=Path, default=OUT)
    ap.add_argument("--keep-larger", action="store_true",
                    help="merge with the file already there, keeping each test's larger figure "
                         "(runs with different skips, or machines of one class)")
    a = ap.parse_args(argv)
    try:
        got = durations(a.junit)
    except (OSError, ET.ParseError) as e:
        print(f"error: cannot read {a.junit}: {e}", file=sys.stderr)
        return 1
    if not got:
        print(f"error: no test cases in {a.junit}", file=sys.stderr)
        return 1
    if a.keep_larger and a.out.exists():
        old = json.loads(a.out.read_text())
        got = {k: max(got.get(k, 0.0), float(old.get(k, 0.0))) for k in {*got, *old}}
    a.out.write_text(json.dumps(dict(sorted(got.items())), indent=0) + "\n")
    print(f"{len(got)} tests, {sum(got.values()):.0f} s in all -> {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
