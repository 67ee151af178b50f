"""Expression reductions along an axis (kernels/expr_axis.cl, cltune.stats.api' `axis=`) as a
kernel family `expr_axis`.

Variant `<fingerprint>/<layout>`: the expression's fingerprint (expr_family) and the layout
the call runs, `rows` (the reduced axis is contiguous) or `cols` (strided). Size class
`2^ax2^b` as for the axis family: rows, a = log2 rows (outputs) and b = log2 row length;
cols, a = log2 of the reduced length and b = log2 of the outputs (outer x inner, the kept
elements). A shape is served by the tuned class nearest to it (shapes.nearest).

The database never holds an expression: only the fingerprint and configs (name -> value).

    >>> v = variant("0123456789abcdef01234567", "cols")
    >>> FAMILY.check_variant(v), FAMILY.check_size_class("2^20x2^4")
    ('', '')
    >>> view_key(1, 1 << 20, 16)
    ('cols', (20.0, 4.0))
"""

from __future__ import annotations

from collections.abc import Mapping

from cltune.core import family as registry
from cltune.core.family import Family, reason_of
from cltune.core.shapes import (  # noqa: F401
    MAX_LOG2,
    class_of_view,
    log2_key,
    shape_key_of,
    size_class,
    view_key,
)
from cltune.families.expr_axis.config import LAYOUTS, AxisExprConfig

NAME = "expr_axis"


def variant(fingerprint: str, layout: str) -> str:
    return f"{fingerprint}/{layout}"


def split_variant(text: str) -> tuple[str, str]:
    """(fingerprint, layout) of a variant; ValueError when the text names none."""
    fp, sep, layout = text.partition("/") if isinstance(text, str) else ("", "", "")
    if not sep or registry.get("expr").check_variant(fp) or layout not in LAYOUTS:
        raise ValueError(f"variant {text!r:.60} is not <expression fingerprint>/<layout> "
                         f"with layout in {LAYOUTS}")
    return fp, layout


def view_of(layout: str, key: tuple[int, int]) -> tuple[int, int, int]:
    """The (outer, r, inner) view a size class stands for (its tuning input)."""
    a, b = 1 << key[0], 1 << key[1]
    return (a, b, 1) if layout == "rows" else (1, a, b)


def parse_config(m: Mapping[str, object]) -> AxisExprConfig:
    return AxisExprConfig.from_mapping(m)


FAMILY = Family(NAME, parse_config, reason_of(split_variant), reason_of(shape_key_of),
                   kernel="expr_axis.cl", interface="cltune.families.expr_axis.api",
                   reference="cltune.families.expr_axis.reference",
                   target="cltune.families.expr_axis.target:ExprAxisTarget",
                api="cltune.families.expr_axis.api")
