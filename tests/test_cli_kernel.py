"""`cltune tune --kernel module:attribute`: the application's ReductionKernel, tuned and stored
under its fingerprint; bad specs are one clear line."""

from __future__ import annotations

import json
import textwrap

import pytest
from typer.testing import CliRunner

from cltune.cli.app import app

runner = CliRunner()


@pytest.fixture
def kernel_module(tmp_path, monkeypatch, info):
    (tmp_path / "app_kernels.py").write_text(textwrap.dedent(f"""
        import numpy as np
        import pyopencl as cl
        import cltune
        from cltune.device.select import select

        def squares():
            ctx = cl.Context([select("{info.index}")[1]])
            return cltune.ReductionKernel(ctx, np.float32, neutral="0", reduce_expr="a+b",
                                          map_expr="x[i]*x[i]",
                                          arguments="__global const float *x")
        """))
    monkeypatch.syspath_prepend(str(tmp_path))
    return "app_kernels:squares"


def test_tune_kernel_stores_its_fingerprint(kernel_module, info, db_url, storage_url):
    r = runner.invoke(app, ["tune", "--device", str(info.index), "--kernel", kernel_module,
                            "--sizes", "2^12", "--trials", "3", "--timeout", "60",
                            "--db", db_url, "--storage", storage_url])
    assert r.exit_code == 0, r.output
    rows = json.loads(runner.invoke(app, ["show", "--json", "--db", db_url]).output)
    assert [(x["family"], x["size_class"]) for x in rows] == [("expr", "2^12")]
    assert "x[i]" not in json.dumps(rows)  # the expression's text is never stored


@pytest.mark.parametrize("spec,msg", [("nocolon", "module:attribute"),
                                      ("no_such_module_xyz:k", "cannot import"),
                                      ("json:decoder", "not a cltune.ReductionKernel"),
                                      ("json:dumps", "calling it failed")])
def test_bad_kernel_specs_are_one_line(spec, msg, db_url, storage_url):
    r = runner.invoke(app, ["tune", "--kernel", spec, "--db", db_url, "--storage",
                            storage_url])
    assert r.exit_code == 1 and msg in r.output and "Traceback" not in r.output, r.output


def test_verify_says_which_stored_results_it_cannot_rerun(kernel_module, info, db_url,
                                                           storage_url):
    """An expression's code is not stored, so `cltune verify` cannot re-run its results: it
    says so (and how to re-validate them) instead of skipping them silently."""
    r = runner.invoke(app, ["tune", "--device", str(info.index), "--kernel", kernel_module,
                            "--sizes", "2^12", "--trials", "2", "--timeout", "60",
                            "--db", db_url, "--storage", storage_url])
    assert r.exit_code == 0, r.output
    r = runner.invoke(app, ["verify", "--device", str(info.index), "--db", db_url])
    assert r.exit_code == 0, r.output
    text = " ".join(r.output.split())
    assert "1 stored expr result(s) not re-run" in text and "knl.tune" in text, r.output


def test_tune_kernel_along_axes(kernel_module, info, db_url, storage_url):
    """`--kernel X --axis` tunes the expression along axes of 2-D inputs of --shapes (family
    expr_axis, one result per shape and axis); `--segments` with a kernel is a clear error."""
    r = runner.invoke(app, ["tune", "--device", str(info.index), "--kernel", kernel_module,
                            "--axis", "both", "--shapes", "256x64", "--trials", "3",
                            "--timeout", "60",
                            "--db", db_url, "--storage", storage_url])
    assert r.exit_code == 0, r.output
    rows = json.loads(runner.invoke(app, ["show", "--json", "--db", db_url]).output)
    got = sorted((x["family"], x["variant"].split("/")[-1], x["size_class"]) for x in rows)
    assert [(f, lay) for f, lay, _ in got] == [("expr_axis", "cols"), ("expr_axis", "rows")]
    r = runner.invoke(app, ["tune", "--kernel", kernel_module, "--segments", "--db", db_url])
    assert r.exit_code == 1 and "--segments" in r.output and "Traceback" not in r.output
    r = runner.invoke(app, ["tune", "--device", str(info.index), "--kernel", kernel_module,
                            "--axis", "2", "--db", db_url, "--storage", storage_url])
    assert r.exit_code == 1 and "0, 1 or both" in r.output, r.output
