"""A kernel family's tuning target, made from its descriptor (`family.Family.target`), so that
the tuner and `cltune verify` name no family's modules."""

from __future__ import annotations

import importlib
from typing import Any

import pyopencl as cl

from cltune.core.family import get
from cltune.device.info import DeviceInfo

#: `space=LATER`: the target is made without its space, which the caller sets afterwards (the
#: tuner takes it from the worker, where the 1-D family's probe builds run)
LATER = object()


def make_target(family: str, ctx: cl.Context, dev: cl.Device, info: DeviceInfo, variant: str,
                **options: Any) -> Any:
    """The family's target for one variant on one device (e.g. `ReduceTarget`)."""
    module, _, name = get(family).target.partition(":")
    return getattr(importlib.import_module(module), name)(ctx, dev, info, variant, **options)
