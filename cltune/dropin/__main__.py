"""`python -m cltune.dropin app.py [args...]` (or `-m package.module [args...]`): run a pyopencl
application with its reductions and scans on cltune's kernels, no line of it changed."""

from __future__ import annotations

import runpy
import sys

from cltune.dropin.switch import use_in_pyopencl

USAGE = "usage: python -m cltune.dropin SCRIPT.py [ARGS...] | -m MODULE [ARGS...]"


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help") or (argv[0] == "-m" and len(argv) < 2):
        print(USAGE, file=sys.stderr if not argv or argv[0] == "-m" else sys.stdout)
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    use_in_pyopencl(globally=True)
    if argv[0] == "-m":
        sys.argv = argv[1:]
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
    else:
        sys.argv = argv
        try:
            runpy.run_path(argv[0], run_name="__main__")
        except FileNotFoundError as e:
            if e.filename == argv[0]:
                print(f"cltune.dropin: no such script: {argv[0]}", file=sys.stderr)
                return 2
            raise
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
