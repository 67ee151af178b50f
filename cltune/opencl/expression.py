"""A custom expression reduction as values: the application's expressions (`ExprSpec`), their
fingerprint (the database key) and the OpenCL prelude generated from them; shared by the
families that run expressions (`expr` whole, `expr_axis` along an axis).

Trust model: the expressions, preamble and build options are code of the *application* (as
with pyopencl's ReductionKernel: they are compiled as given). They never come from the
database or an import file: those hold only the fingerprint, a hash, and configs, which
reach the compiler only as integer `-D` values of a validated config.

    >>> spec = ExprSpec.make(np.float32, "0", "a+b", "x[i]*y[i]",
    ...                      "__global const float *x, __global const float *y")
    >>> len(spec.fingerprint)
    24
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np
from pyopencl.tools import (
    ScalarArg,
    VectorArg,
    dtype_to_ctype,
    get_arg_list_scalar_arg_dtypes,
    get_arg_offset_adjuster_code,
    parse_arg_list,
)

#: hex digits of an expression's fingerprint
FINGERPRINT_HEX = 24
#: bytes of __local the expression kernels keep beside a work-group's tile
LOCAL_RESERVE = 64

#: bumped when the meaning of a fingerprint changes (stored results of older ones stop serving)
FINGERPRINT_VERSION = 1


def _normalise(code: str) -> str:
    """Whitespace-insensitive form for the fingerprint: lines stripped, inner runs of
    whitespace collapsed, empty lines dropped (line structure kept: preprocessor lines)."""
    lines = (" ".join(line.split()) for line in code.splitlines())
    return "\n".join(line for line in lines if line)


def _macro_body(code: str, what: str) -> str:
    """An expression as the body of a one-line macro (as pyopencl's _process_code_for_macro:
    its //CL// markers dropped, any other // comment refused)."""
    code = code.replace("//CL//", "\n")
    if "//" in code:
        raise ValueError(f"{what}: // comments are not allowed in expressions; use /* */")
    return code.replace("\n", " ")


def _dtype_desc(dt: np.dtype) -> object:
    """A dtype as JSON for the fingerprint: C name, size, and the fields with their offsets."""
    if dt.names:
        return [dtype_to_ctype(dt), dt.itemsize,
                [[n, _dtype_desc(dt.fields[n][0]), dt.fields[n][1]] for n in dt.names]]
    return [dt.str, dt.itemsize]


def _has_float(dt: np.dtype) -> bool:
    """Whether an accumulator of this dtype holds a floating-point value (a field of a struct
    too): only then does restarting accumulators (CLT_BLOCK) bound a rounding error."""
    if dt.names:
        return any(_has_float(dt.fields[n][0]) for n in dt.names)
    if dt.subdtype is not None:
        return _has_float(dt.subdtype[0])
    return dt.kind in "fc"


@dataclass(frozen=True)
class ExprSpec:
    """What an expression reduction computes; context-free (one spec, many devices).

    `finish_expr` (of `a`, the reduced value, of `n`, the element count, and of the scalar
    arguments) turns the reduced value into the result, of `dtype_result`; pyopencl's
    ReductionKernel has neither: by default the result is the reduced value.

    `fold_expr` (of `a`, an accumulator, `i`, an index, and the arguments) is the accumulator
    after element `i` is added to it; by default `reduce_expr(a, map_expr(i))`. Each
    accumulator receives its elements in increasing index order, starting from `neutral`;
    accumulators are then combined with `reduce_expr`. It lets an accumulator be cheaper per
    element than per combine (a shifted sum of squares instead of a Welford division, a
    compare instead of a struct pick).
    """

    dtype_out: np.dtype
    neutral: str
    reduce_expr: str
    map_expr: str
    arguments: tuple[Any, ...]  # pyopencl VectorArg / ScalarArg, vectors with offsets
    preamble: str = ""
    options: tuple[str, ...] = ()
    finish_expr: str = "a"
    dtype_result: np.dtype = field(default=None)  # type: ignore[assignment]
    fold_expr: str = ""

    def __post_init__(self) -> None:
        if self.dtype_result is None:
            object.__setattr__(self, "dtype_result", self.dtype_out)

    @classmethod
    def make(cls, dtype_out: Any, neutral: str, reduce_expr: str, map_expr: str | None,
             arguments: Any, preamble: str = "", options: Any = None,
             finish_expr: str | None = None, dtype_result: Any = None,
             fold_expr: str | None = None) -> ExprSpec:
        """Check and normalise pyopencl-style constructor arguments."""
        if arguments is None:
            raise ValueError("arguments must not be None")
        for what, v in (("neutral", neutral), ("reduce_expr", reduce_expr),
                        ("preamble", preamble), ("fold_expr", fold_expr or "")):
            if not isinstance(v, str):
                raise TypeError(f"{what} must be a string of OpenCL C, got {type(v).__name__}")
        if map_expr is None:
            map_expr = "in[i]"
        if not isinstance(map_expr, str):
            raise TypeError(f"map_expr must be a string, got {type(map_expr).__name__}")
        # no vector at all is allowed (as in pyopencl): the call then says `range=`
        args = tuple(parse_arg_list(arguments, with_offset=True))
        for a in args:
            if not isinstance(a, (VectorArg, ScalarArg)):
                raise TypeError(f"argument {a!r:.60} is neither a vector nor a scalar")
            # `a` and `b` are free, as in pyopencl (its get_dot_kernel names its vectors so):
            # reduce_expr, fold_expr and finish_expr see them as their own parameters
            if a.name.startswith("clt_") or a.name in ("n", "i"):
                raise ValueError(f"argument name {a.name!r} is reserved (clt_*, n, i)")
            if isinstance(a, VectorArg) and not a.with_offset:
                args = tuple(VectorArg(x.dtype, x.name, with_offset=True)
                             if isinstance(x, VectorArg) else x for x in args)
        if len({a.name for a in args}) != len(args):
            raise ValueError("argument names must be distinct")
        if options is None:
            opts: tuple[str, ...] = ()
        elif isinstance(options, str):
            opts = tuple(options.split())
        else:
            opts = tuple(str(o) for o in options)
        dt = np.dtype(dtype_out)
        return cls(dt, neutral, reduce_expr, map_expr, args, preamble, opts,
                   finish_expr or "a", np.dtype(dtype_result) if dtype_result is not None
                   else dt, fold_expr or "")

    # ---- identity -----------------------------------------------------------------------
    @property
    def fingerprint(self) -> str:
        return _fingerprint(self)

    @property
    def vector_args(self) -> tuple[Any, ...]:
        return tuple(a for a in self.arguments if isinstance(a, VectorArg))

    def scalar_arg_dtypes(self) -> list[Any]:
        """The user's arguments as pyopencl `set_scalar_arg_dtypes` entries (offsets int64)."""
        return list(get_arg_list_scalar_arg_dtypes(self.arguments))

    # ---- source -------------------------------------------------------------------------
    def prelude(self, fp64: bool) -> str:
        """The OpenCL C generated from the application's expressions (its trusted code)."""
        res = self.dtype_result
        res_c = "uchar" if res == np.bool_ else dtype_to_ctype(res)
        decl = " ".join(f"{a.declarator()}," for a in self.arguments)
        prep = get_arg_offset_adjuster_code(self.arguments).replace("\n", " ")
        head = ["#define PYOPENCL_DEFINE_CDOUBLE",
                "#pragma OPENCL EXTENSION cl_khr_fp64: enable"] if fp64 else []
        return "\n".join([
            "/* generated by cltune.families.expr.kernel from the application's expressions */",
            *head,
            "#include <pyopencl-complex.h>",
            self.preamble,
            "#define CLT_HAVE_USER 1",
            f"typedef {dtype_to_ctype(self.dtype_out)} clt_out_t;",
            f"typedef {res_c} clt_res_t;",
            f"#define CLT_NEUTRAL ({_macro_body(self.neutral, 'neutral')})",
            f"#define CLT_MAP(i) ({_macro_body(self.map_expr, 'map_expr')})",
            f"#define CLT_REDUCE(a, b) ({_macro_body(self.reduce_expr, 'reduce_expr')})",
            f"#define CLT_FINISH(a) (({res_c})({_macro_body(self.finish_expr, 'finish')}))",
            *([] if _has_float(self.dtype_out) else ["#define CLT_BLOCK 0"]),
            *([f"#define CLT_FOLD1(a, i) ({_macro_body(self.fold_expr, 'fold_expr')})"]
              if self.fold_expr else []),
            f"#define CLT_USER_ARGS {decl}",
            f"#define CLT_USER_PREP {prep}",
            "",
        ])


@lru_cache(maxsize=256)
def _fingerprint_of(blob: str) -> str:
    return hashlib.sha256(blob.encode()).hexdigest()[:FINGERPRINT_HEX]


def _fingerprint(spec: ExprSpec) -> str:
    """Hash of the normalised expressions, preamble, options, argument types and dtypes."""
    doc = {
        "v": FINGERPRINT_VERSION,
        "out": _dtype_desc(spec.dtype_out),
        "result": _dtype_desc(spec.dtype_result),
        "neutral": _normalise(spec.neutral),
        "reduce": _normalise(spec.reduce_expr),
        "map": _normalise(spec.map_expr),
        "finish": _normalise(spec.finish_expr),
        **({"fold": _normalise(spec.fold_expr)} if spec.fold_expr else {}),
        "preamble": _normalise(spec.preamble),
        "options": list(spec.options),
        "args": [["vector" if isinstance(a, VectorArg) else "scalar", a.name,
                  _dtype_desc(np.dtype(a.dtype))] for a in spec.arguments],
    }
    return _fingerprint_of(json.dumps(doc, sort_keys=True))
