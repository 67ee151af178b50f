"""pyopencl errors as one line a user can read: the status code, the call, and for a failed
build the compiler's own first error line instead of the whole log."""

from __future__ import annotations

import re

import pyopencl as cl

_NOISE = re.compile(r"^(Build on <|\(options:|Device .* failed to build|clBuildProgram failed)")


def compiler_message(text: str) -> str:
    """The line of a build log that says what went wrong: the first `error:` line, else the
    last line that is not pyopencl's framing; '' for an empty log."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for ln in lines:
        if re.search(r"\berror\b\s*:", ln, re.IGNORECASE) and not _NOISE.match(ln):
            return ln
    rest = [ln for ln in lines if not _NOISE.match(ln)]
    return rest[-1] if rest else (lines[0] if lines else "")


def one_line(e: BaseException) -> str:
    """`e` on one line. pyopencl errors: 'OpenCL <routine> failed: <CODE>: <compiler line>'."""
    if isinstance(e, cl.Error):
        routine = getattr(e, "routine", "") or "call"
        code = getattr(e, "code", None)
        try:
            name = cl.status_code.to_string(code) if code is not None else ""
        except Exception:  # noqa: BLE001 - an unknown code is still worth printing
            name = str(code)
        what = str(e)
        detail = compiler_message(what) if code == cl.status_code.BUILD_PROGRAM_FAILURE else ""
        if not detail:
            first = what.splitlines()[0] if what else ""
            # pyopencl repeats "<routine> failed: <CODE>" - keep only what it adds
            detail = re.sub(rf"^({re.escape(routine)} failed: {re.escape(name)}\s*-?\s*)+", "",
                            first).strip()
        text = f"OpenCL {routine} failed: {name}" + (f": {detail}" if detail else "")
    else:
        text = str(e) or type(e).__name__
    return " ".join(text.split())
