"""Print a pytest run's wall time and its slowest tests (setup + call + teardown) from the
JUnit XML that `--junitxml` wrote: `python .ci/slowest.py results.xml [N]`."""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
from test_durations import durations  # noqa: E402  (scripts/ is not a package)


def main(argv: list[str]) -> int:
    path, top = Path(argv[1]), int(argv[2]) if len(argv) > 2 else 10
    try:
        root = ET.parse(path).getroot()
        took = durations(path)
    except (OSError, ET.ParseError) as e:
        print(f"slowest: no test results to read ({e})")
        return 0
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    wall = sum(float(s.get("time", 0)) for s in suites)
    cases = sorted(((t, name) for name, t in took.items()), reverse=True)
    print(f"tests: {len(cases)} in {wall:.0f} s wall ({sum(took.values()):.0f} s of test time "
          f"over the workers); the {min(top, len(cases))} slowest:")
    for t, name in cases[:top]:
        print(f"  {t:7.1f} s  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
