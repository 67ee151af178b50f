"""A hostile database or import file cannot change what a custom expression compiles to:
stored configs are validated (a weird value is rejected before any build), build options are
integer `-D` values only, variants are fingerprints (never code), and an expression cannot be
tuned or run from the database alone."""

from __future__ import annotations

import json
import re
import sqlite3

import numpy as np
import pyopencl.array as cla
import pytest

from cltune import ReductionKernel
from cltune.core.family import get
from cltune.families.expr import kernel as es
from cltune.families.expr import kernel as expr_kernel
from cltune.families.expr.config import ExprConfig, ExprConfigError
from cltune.families.expr.target import ExprTarget
from cltune.tuning_db import Store
from cltune.tuning_db.exchange import parse_export
from cltune.tuning_db.rows import Measurement

ARGS = dict(neutral="0", reduce_expr="a+b", map_expr="x[i]*2",
            arguments="__global const float *x")
HOSTILE = [
    {"layout": "strided", "wg": "64 -DCLT_PASSES=7", "items": 4, "groups_per_cu": 8,
     "passes": 2},
    {"layout": "strided\n#define CLT_MAP(i) 0", "wg": 64, "items": 4, "groups_per_cu": 8,
     "passes": 2},
    {"layout": "strided", "wg": 64, "items": 4, "groups_per_cu": 8, "passes": 2,
     "preamble": "__kernel void evil() {}"},
    {"layout": "strided", "wg": 96, "items": 4, "groups_per_cu": 8, "passes": 2},
    {"layout": "strided", "wg": 64, "items": True, "groups_per_cu": 8, "passes": 2},
    {"layout": "strided", "wg": 64, "items": 4, "groups_per_cu": 8, "passes": 2.0},
]


@pytest.mark.parametrize("m", HOSTILE)
def test_config_rejects_every_hostile_mapping(m):
    with pytest.raises(ExprConfigError):
        ExprConfig.from_mapping(m)


def test_build_options_are_integer_defines_only():
    for cfg in (ExprConfig(), ExprConfig("contiguous", 1, 16, 0, 1)):
        opts = es.build_options(cfg, unit_step=False, nv_ptx=True)
        assert all(re.fullmatch(r"-DCLT_[A-Z_]+=\d+", o) for o in opts), opts
    with pytest.raises(TypeError):
        es.build_options({"wg": 64}, unit_step=True, nv_ptx=False)  # type: ignore[arg-type]


def _store_best(db_url, info, fingerprint, config: dict) -> None:
    store = Store.open(db_url)
    try:
        dev_id = store.upsert_device(info.fingerprint_parts(), info.fingerprint,
                                     info.hardware_key, info.name)
        key = "f" * 16
        rid = store.record(dev_id, Measurement("expr", fingerprint, "2^10", config, key, "ok",
                                               1024, "test", "test", "", 1e-5, 10.0))
        store.set_best(dev_id, rid)
    finally:
        store.close()


def test_hostile_stored_config_is_never_built(ctx, queue, device, db_url, tmp_path,
                                              monkeypatch):
    info, _ = device
    knl = ReductionKernel(ctx, np.float32, **ARGS, db=db_url)
    good = ExprConfig("strided", 4, 2, 1, 2).to_dict()
    _store_best(db_url, info, knl.fingerprint, good)
    # rewrite the stored config behind the store's back, as a hostile file would
    path = db_url.removeprefix("sqlite:///")
    with sqlite3.connect(path) as con:
        con.execute("UPDATE cltune_results SET config_json = ?",
                    (json.dumps(HOSTILE[0]),))
    built: list[tuple] = []
    real_build = es.build

    def spy(*a, **kw):
        built.append(a[4])
        return real_build(*a, **kw)

    monkeypatch.setattr("cltune.families.expr.launch.build", spy)
    again = ReductionKernel(ctx, np.float32, **ARGS, db=db_url)
    assert again.explain(1024).level in ("builtin", "derived")
    x = cla.to_device(queue, np.ones(1024, np.float32))
    assert again(x).get() == 2048
    assert built and all(isinstance(c, ExprConfig) for c in built)
    assert HOSTILE[0]["wg"] not in [c.wg for c in built]


def test_import_file_with_hostile_expr_record_is_rejected(device):
    info, _ = device
    d = {k: getattr(info, k) for k in ("fingerprint", "hardware_key", "vendor", "type",
                                       "model", "name", "compute_units", "local_mem",
                                       "max_wg", "platform", "platform_version", "driver",
                                       "opencl_c")}
    rec = {"device": d, "family": "expr", "variant": "0123456789abcdef01234567",
           "size_class": "2^20", "config": ExprConfig().to_dict(), "median_s": 1e-4,
           "gbps": 10.0, "max_rel_error": None, "n_measured": 1 << 20, "cltune_version": "x",
           "source_hash": "0" * 16}
    ok = parse_export({"format": "cltune-results", "version": 2, "results": [rec]})
    assert ok[0].config == ExprConfig()
    for bad in ({"config": HOSTILE[1]}, {"variant": "x[i]; system(\"rm -rf /\")"},
                {"variant": "0123456789ABCDEF01234567"}, {"size_class": "2^20 -DX=1"}):
        with pytest.raises(ValueError):
            parse_export({"format": "cltune-results", "version": 2,
                          "results": [{**rec, **bad}]})


def test_family_checks_and_no_tuning_from_the_database_alone(ctx, device):
    info, dev = device
    fam = get("expr")
    assert fam.check_variant("0123456789abcdef01234567") == ""
    assert fam.check_variant("__kernel void f(){}") != ""
    with pytest.raises(ValueError, match="kernel object"):
        ExprTarget(ctx, dev, info, "0123456789abcdef01234567")
    knl = ReductionKernel(ctx, np.float32, **ARGS)
    with pytest.raises(ValueError, match="not this kernel's fingerprint"):
        ExprTarget(ctx, dev, info, "0" * 24, kernel=knl)


def test_generated_source_depends_only_on_the_application(ctx):
    knl = ReductionKernel(ctx, np.float32, **ARGS)
    src = expr_kernel.source(knl.spec, fp64=True)
    assert src.endswith(es.template_source())
    assert "x[i]*2" in src  # the application's code, as given
    # the fingerprint never contains the expression text
    assert "x[i]" not in knl.fingerprint and len(knl.fingerprint) == 24
