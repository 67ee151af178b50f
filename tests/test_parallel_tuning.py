"""Several evaluation workers feeding one study per size class (#23), checked on a CPU device
with two workers of its own (everything but the speed-up of several GPUs): both workers ran
trials, the study holds the trials asked for, the best is stored once and served; devices of
different kinds are refused with one line naming them; `--device 0,0` and a bad list too."""

from __future__ import annotations

import optuna
import pytest
from typer.testing import CliRunner

from cltune.cli.app import app
from cltune.device.select import DeviceError, list_devices, select, select_many
from cltune.tuning.parallel import DevicesDiffer, ParallelTuner, check_same_kind
from cltune.tuning.tuner import TuneOptions
from cltune.tuning_db import Store

runner = CliRunner()


def test_two_workers_share_one_study_and_store_one_best(device, db_url, storage_url):
    info, dev = device
    store = Store.open(db_url)
    try:
        opts = TuneOptions(op="sum", dtype="float32", buckets=(14, 16), trials=10,
                           timeout_s=240, seed=3)
        pt = ParallelTuner([(dev, info)], store, storage_url, opts, workers=2)
        res = pt.run()
    finally:
        store.close()
    assert [r.size_class for r in res] == ["2^14", "2^16"]
    assert all(r.config is not None and r.gbps for r in res)
    for r in res:
        study = optuna.load_study(study_name=r.study, storage=storage_url)
        done = [t for t in study.get_trials(deepcopy=False) if t.state.is_finished()]
        assert len(done) >= 10
        workers = {t.user_attrs.get("worker") for t in done if "worker" in t.user_attrs}
        assert workers == {f"{info.index}.0", f"{info.index}.1"}, workers  # both ran trials
    s = Store.open(db_url, readonly=True)
    try:
        bests = s.bests(s.device_ids())
        assert sorted(b.size_class for b in bests) == ["2^14", "2^16"]  # stored once each
    finally:
        s.close()


def _usable() -> list:
    out = []
    for i in list_devices():
        try:
            out.append(select(str(i.index))[0])
        except DeviceError:
            continue
    return out


def test_devices_of_different_kinds_are_refused():
    kinds = {i.fingerprint: i for i in _usable()}
    if len(kinds) < 2:
        pytest.skip("one kind of device here")
    a, b = list(kinds.values())[:2]
    da, db_ = select(str(a.index))[1], select(str(b.index))[1]
    with pytest.raises(DevicesDiffer, match=str(b.fingerprint)):
        check_same_kind([(da, a), (db_, b)])
    r = runner.invoke(app, ["tune", "--device", f"{a.index},{b.index}", "--sizes", "2^10"])
    assert r.exit_code == 1 and "devices differ" in r.output and "Traceback" not in r.output


def test_device_lists(info):
    assert [i.index for i, _ in select_many(str(info.index))] == [info.index]
    every = select_many("all")
    assert every and len({i.fingerprint for i, _ in every}) == 1
    with pytest.raises(DeviceError, match="named twice"):
        select_many(f"{info.index},{info.index}")
    with pytest.raises(DeviceError, match="empty device"):
        select_many(f"{info.index},")
    r = runner.invoke(app, ["tune", "--device", f"{info.index},{info.index}"])
    assert r.exit_code == 1 and "named twice" in r.output


def test_cli_workers(info, db_url, storage_url):
    r = runner.invoke(app, ["tune", "--device", str(info.index), "--workers", "2", "--sizes",
                            "2^12", "--trials", "6", "--timeout", "120", "--db", db_url,
                            "--storage", storage_url])
    assert r.exit_code == 0, r.output
    assert "2^12" in r.output
    r = runner.invoke(app, ["tune", "--device", str(info.index), "--workers", "2", "--op",
                            "var"])
    assert r.exit_code == 1 and "one device" in r.output
