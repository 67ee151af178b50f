"""A kernel's source as Kernel Tuner prepares it: a string, a file name or a list of them
(`kernel_source`), the tunable parameters put in front as `#define` lines, parameter names in
the kernel's name and in text values replaced token by token, and the check of the host
arguments against the kernel's parameter list (a warning, as Kernel Tuner gives).

The values reach the compiler only as `#define` lines built here, each one checked first
(`family.check_value`): numbers, booleans and short tokens. Kernel Tuner's kernels rely on
these exact lines (`grid_size_x`, `block_size_x`, ..., every parameter, `kernel_tuner 1`, then
`#line 1` so the compiler's messages name the user's lines), which `-D` options could not give
for text values with spaces; that is why this module writes text in front of the user's source
(and nowhere else in it), unlike cltune's own kernels (house rule 2).

    >>> prefix({"block_size_x": 128, "tile": 2}, (4, 1, 1), (128, 1, 1))[:40]
    '#define grid_size_x 4\\n#define grid_size_y 1\\n'
"""

from __future__ import annotations

import hashlib
import re
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from cltune.user.family import KernelConfigError, check_value

DEFAULT_BLOCK_NAMES = ("block_size_x", "block_size_y", "block_size_z")
GRID_NAMES = ("grid_size_x", "grid_size_y", "grid_size_z")
_TOKENS = re.compile(r"([a-zA-Z0-9_]+)")


class KernelSourceError(ValueError):
    """A kernel source, name or option that cannot be used as given."""


def looks_like_a_filename(text: object) -> bool:
    """Kernel Tuner's rule: a short string without code characters that names a .c*, .opencl
    or .F* file (so `k.cl` is a file name, `k.ocl` code)."""
    if not isinstance(text, str) or len(text) > 250:
        return False
    if any(c in text for c in "();{}\\"):
        return False
    if any(s in text for s in ("__global__ ", "__kernel ", "void ", "float ")):
        return False
    return any(s in text for s in (".c", ".opencl", ".F"))


def replace_params(text: str, params: Mapping[str, object]) -> str:
    """Every whole token of `text` that names a parameter replaced by its value."""
    return "".join(str(params[p]) if p in params else p for p in _TOKENS.split(text))


@dataclass(frozen=True)
class Source:
    """The kernel's text as read (`text`), the file it came from (None: a string), and the
    secondary files of a list (read with it, put beside it by `files`); or a code generator
    (`generator`: a function of the params dict that returns the kernel's text, as Kernel
    Tuner takes one; `text` is then empty)."""

    text: str
    path: Path | None = None
    others: tuple[tuple[str, str], ...] = ()  # (name as given, text)
    generator: Callable[[dict], str] | None = None

    def text_for(self, params: Mapping[str, object]) -> str:
        """The kernel's text for one set of params (the generator's answer, checked)."""
        if self.generator is None:
            return self.text
        try:
            text = self.generator(dict(params))
        except Exception as e:  # noqa: BLE001 - the application's generator: say which params
            raise KernelSourceError(f"kernel_source: the code generator failed for "
                                    f"{dict(params)!r:.200}: {type(e).__name__}: "
                                    f"{str(e)[:200]}") from None
        if not isinstance(text, str) or not text.strip():
            raise KernelSourceError(f"kernel_source: the code generator returned "
                                    f"{type(text).__name__} {text!r:.60} for "
                                    f"{dict(params)!r:.200}, not a kernel's text")
        return text

    def digest(self, kernel_name: str, compiler_options: Sequence[str] | None,
               defines: Mapping[str, object] | None) -> str:
        """The hash that names this kernel in the database: source, secondary files, name,
        compiler options and defines (a function's bytecode standing for itself)."""
        h = hashlib.sha256()
        gen = _code_text(self.generator) if self.generator is not None else ""
        for part in (kernel_name, self.text, gen, *(t for _, t in self.others),
                     repr(list(compiler_options or ())), _defines_text(defines)):
            h.update(part.encode("utf-8", "surrogatepass"))
            h.update(b"\0")
        return h.hexdigest()[:16]


def _defines_text(defines: Mapping[str, object] | None) -> str:
    if defines is None:
        return "default"
    out = []  # (a function's bytecode stands for it: the stored kernels' names keep it)
    for k, v in defines.items():
        code = getattr(v, "__code__", None)
        out.append(f"{k}={code.co_code.hex() if code is not None else repr(v)}")
    return ";".join(out)


def _code_text(fn: Callable) -> str:
    """A code generator as its qualified name, bytecode and constants (what names its
    kernel in the database)."""
    code = getattr(fn, "__code__", None)
    if code is None:  # a callable object: its class
        return f"{type(fn).__qualname__}:{type(fn).__module__}"
    return f"{getattr(fn, '__qualname__', '')}:{code.co_code.hex()}:{code.co_consts!r}"


def read_source(kernel_source: Any) -> Source:  # noqa: ANN401 - str, Path or a list
    """The kernel's text from `kernel_source` as Kernel Tuner takes it: code in a string, a
    file name (`looks_like_a_filename`) or a Path, or a list whose first entry is the kernel
    and whose others are files it includes (by the name given)."""
    if callable(kernel_source):  # a code generator: the text comes per set of params
        return Source("", generator=kernel_source)
    if isinstance(kernel_source, (list, tuple)):
        if not kernel_source:
            raise KernelSourceError("kernel_source: an empty list")
        first = read_source(kernel_source[0])
        others = []
        for f in kernel_source[1:]:
            # Kernel Tuner's rule, or a file that exists (its rule refuses `header.h`)
            if not (isinstance(f, Path) or looks_like_a_filename(f)
                    or (isinstance(f, str) and Path(f).is_file())):
                raise KernelSourceError("When passing multiple kernel sources, the secondary "
                                        "entries must be filenames")
            others.append((str(f), _read(Path(f))))
        return Source(first.text, first.path, tuple(others), first.generator)
    if isinstance(kernel_source, Path) or looks_like_a_filename(kernel_source):
        p = Path(kernel_source)
        return Source(_read(p), p)
    if isinstance(kernel_source, str):
        if not kernel_source.strip():
            raise KernelSourceError("kernel_source is empty")
        return Source(kernel_source)
    raise KernelSourceError("Error kernel_source is not a string nor a callable function")


def _read(p: Path) -> str:
    try:
        return p.read_text()
    except OSError as e:
        raise KernelSourceError(f"kernel_source: cannot read {str(p)!r:.200}: "
                                f"{e.strerror or e}") from None


def prefix(params: Mapping[str, object], grid: tuple[int, int, int],
           block: tuple[int, int, int], block_names: Sequence[str] = DEFAULT_BLOCK_NAMES,
           defines: Mapping[str, object] | None = None) -> str:
    """The `#define` lines Kernel Tuner puts in front of the kernel: grid and block sizes,
    every parameter, `kernel_tuner 1` and `#line 1` — or exactly `defines` when given
    (values: constants, text with parameter names replaced, or functions of the params)."""
    if defines is None:
        d: dict[str, object] = dict(zip(GRID_NAMES, grid, strict=False))
        d.update(zip(block_names, block, strict=False))
        d.update(params)
        d["kernel_tuner"] = 1
    else:
        d = {}
        for k, v in defines.items():
            if callable(v):
                v = v(params)
            elif isinstance(v, str):
                v = replace_params(v, params)
            d[k] = v
    lines = []
    for k, v in d.items():
        if not (isinstance(k, str) and k.isidentifier()):
            raise KernelSourceError(f"name is not a valid identifier: {k!r:.40}")
        try:
            v = check_value(k, v.item() if isinstance(v, np.generic) else v)
        except KernelConfigError as e:
            raise KernelSourceError(str(e)) from None
        lines.append(f"#define {k} {v}\n")
    return "".join(lines) + ("#line 1\n" if lines else "")


def files_beside(src: Source, text: str, folder: Path, head: str) -> str:
    """The secondary files written into `folder` with the same `#define` head, and `text`
    with their names pointing at those copies (Kernel Tuner's rule for a list of files)."""
    for i, (name, other) in enumerate(src.others):
        dest = folder / f"part{i}{Path(name).suffix or '.cl'}"
        dest.write_text(head + other)
        text = text.replace(name, str(dest))
    return text


#: numpy dtype name -> the OpenCL C spellings that match it (Kernel Tuner's table)
_CTYPES = {"bool": ("bool",), "uint8": ("uchar", "unsigned char", "uint8_t"),
           "int8": ("char", "int8_t"), "uint16": ("ushort", "unsigned short", "uint16_t"),
           "int16": ("short", "int16_t"), "uint32": ("uint", "unsigned int", "uint32_t"),
           "int32": ("int", "int32_t"), "uint64": ("ulong", "unsigned long", "uint64_t"),
           "int64": ("long", "int64_t"), "float16": ("half",), "float32": ("float",),
           "float64": ("double",), "complex64": ("float2",), "complex128": ("double2",)}


def check_arguments(kernel_name: str, text: str, arguments: Sequence[object]) -> None:
    """Kernel Tuner's check of the host arguments against the kernel's parameters: a type it
    cannot pass is an error; a count or type that does not match the kernel's declaration
    is a warning (the first mismatch of the best-matching declaration)."""
    for i, a in enumerate(arguments):
        if not isinstance(a, (np.ndarray, np.generic)) and not _is_device_array(a):
            raise TypeError(f"Argument at position {i} of type: {type(a)} should be of type "
                            f"np.ndarray or numpy scalar")
    errors = []
    for m in re.finditer(re.escape(kernel_name) + r"[ \n\t]*\(", text):
        decl = text[m.end():text.find(")", m.end())]
        params = [p.strip() for p in decl.split(",")] if decl.strip() else []
        if len(params) != len(arguments):
            errors.append("Kernel and host argument lists do not match in size.")
            continue
        why = ""
        for i, (a, p) in enumerate(zip(arguments, params, strict=False)):
            dt = getattr(a, "dtype", None)
            is_ptr = isinstance(a, np.ndarray) or _is_device_array(a)
            if is_ptr and "*" not in p:
                why = f"Argument at position {i} of type: {type(a).__name__} should be a " \
                      f"pointer in {p}."
                break
            names = _CTYPES.get(str(dt), ())
            if not any(_has_word(p, n) for n in names):
                why = f"Argument at position {i} of dtype: {dt} does not match {p}."
                break
        if not why:
            return
        errors.append(why)
    if errors:
        warnings.warn(errors[0], UserWarning, stacklevel=4)


def _has_word(decl: str, ctype: str) -> bool:
    return re.search(r"(?<![A-Za-z0-9_])" + re.escape(ctype) + r"(?![A-Za-z0-9_])",
                     decl) is not None


def _is_device_array(a: object) -> bool:
    return type(a).__module__.startswith("pyopencl") and hasattr(a, "data")


def kernel_name_of(kernel_name: str, params: Mapping[str, object]) -> str:
    name = replace_params(kernel_name, params)
    if not name.isidentifier():
        raise KernelSourceError(f"kernel name {name!r:.60} is not an identifier")
    return name


def files_folder() -> str:
    """A fresh folder for the secondary files of one config (removed by the caller)."""
    import tempfile  # lazy: only kernels made of several files need it

    return tempfile.mkdtemp(prefix="cltune-kernel-")
