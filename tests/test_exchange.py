"""Export/import: a round trip, merges that keep the better result, hostile files rejected."""

import copy
import json

import pytest
from support.records import reduce_measurement
from typer.testing import CliRunner

from cltune.cli.app import app
from cltune.tuning_db import Store
from cltune.tuning_db.exchange import ImportError_, export_doc, parse_export

runner = CliRunner()
DEV = {"fingerprint": "a" * 16, "hardware_key": "b" * 16, "vendor": "acme", "type": "gpu",
       "model": "Rocket 9", "name": "Rocket 9", "compute_units": 8, "local_mem": 65536,
       "max_wg": 1024, "platform": "Acme CL", "platform_version": "OpenCL 3.0",
       "driver": "1.0", "opencl_c": "OpenCL C 1.2"}
CFG = {"strategy": "local_tree", "wg": 64, "tile": 64, "items": 4, "vec": 4,
       "groups_per_cu": 4, "passes": 2, "acc": "native"}
REC = {"device": DEV, "op": "sum", "dtype": "float32", "bucket": 20, "config": CFG,
       "median_s": 1e-4, "gbps": 42.0, "max_rel_error": 1e-7, "n_measured": 2**20,
       "cltune_version": "0.1.0", "source_hash": "c" * 16}


#: the same record in format version 2 (schema v4 keys: family, variant, size class)
REC2 = {**{k: v for k, v in REC.items() if k not in ("op", "dtype", "bucket")},
        "family": "reduce", "variant": "sum/float32", "size_class": "2^20"}


def doc(*recs):
    return {"format": "cltune-results", "version": 1, "results": list(recs) or [REC]}


def doc2(*recs):
    return {"format": "cltune-results", "version": 2, "results": list(recs) or [REC2]}


def test_version_1_and_2_files_import_the_same(tmp_path):
    rows = []
    for name, d in (("v1", doc()), ("v2", doc2())):
        s = Store.open(f"sqlite:///{tmp_path / name}.db")
        assert s.merge(parse_export(d)).results_added == 1
        rows.append([(r.family, r.variant, r.size_class, r.config, r.median_s)
                     for r in s.bests(None)])
        s.close()
    assert rows[0] == rows[1] == [("reduce", "sum/float32", "2^20", CFG, 1e-4)]


def test_round_trip_through_files(tmp_path):
    a, b = f"sqlite:///{tmp_path / 'a.db'}", f"sqlite:///{tmp_path / 'b.db'}"
    Store.open(a).merge(parse_export(doc()))
    f = tmp_path / "out.json"
    r = runner.invoke(app, ["export", "-o", str(f), "--db", a])
    assert r.exit_code == 0, r.output
    r = runner.invoke(app, ["import", str(f), "--db", b])
    assert r.exit_code == 0 and "1 new result" in r.output, r.output
    sb = Store.open(b)
    assert export_doc(sb.export_rows())["results"] == json.loads(f.read_text())["results"]


def test_merge_keeps_the_faster_best(tmp_path):
    s = Store.open(f"sqlite:///{tmp_path / 'm.db'}")
    s.merge(parse_export(doc()))
    slower = copy.deepcopy(REC)
    slower["config"]["items"] = 8
    slower["median_s"] = 2e-4
    rep = s.merge(parse_export(doc(slower)))
    assert rep.bests_changed == 0 and rep.results_added == 1
    assert s.bests(s.device_ids())[0].config == CFG
    faster = copy.deepcopy(slower)
    faster["median_s"] = 5e-5
    assert s.merge(parse_export(doc(faster))).bests_changed == 1
    assert s.bests(s.device_ids())[0].config["items"] == 8
    assert s.counts()["results"] == 2


def _with(path, value):
    r = copy.deepcopy(REC)
    node = r
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = value
    return doc(r)


HOSTILE = {
    "string in numeric field": _with(["config", "wg"], "64 -DEVIL=1"),
    "-D fragment as strategy": _with(["config", "strategy"], "local_tree -DCLT_WG=99999"),
    "bool as int": _with(["config", "vec"], True),
    "float as int": _with(["config", "wg"], 64.0),
    "huge number": _with(["config", "groups_per_cu"], 10**400),
    "huge bucket": _with(["bucket"], 2**63),
    "negative time": _with(["median_s"], -1.0),
    "nan time": _with(["median_s"], float("nan")),
    "unknown config key": _with(["config", "build_options"], "-cl-fast-relaxed-math"),
    "unknown record key": _with(["options"], "-DX=1"),
    "unknown op": _with(["op"], "mean"),
    "unknown dtype": _with(["dtype"], "complex64"),
    "control chars in name": _with(["device", "name"], "evil\n#define X"),
    "bad fingerprint": _with(["device", "fingerprint"], "../../etc/passwd"),
    "missing field": {"format": "cltune-results", "version": 1,
                      "results": [{k: v for k, v in REC.items() if k != "config"}]},
    "wrong version": {**doc(), "version": 3},
    "bool version": {**doc(), "version": True},
    "v1 record in a v2 file": doc2(REC),
    "v2 unknown family": doc2({**REC2, "family": "scan"}),
    "v2 family not text": doc2({**REC2, "family": ["reduce"]}),
    "v2 unknown variant": doc2({**REC2, "variant": "mean/float32"}),
    "v2 -D fragment in variant": doc2({**REC2, "variant": "sum/float32 -DCLT_WG=9"}),
    "v2 size class too big": doc2({**REC2, "size_class": "2^99"}),
    "v2 size class not 2^k": doc2({**REC2, "size_class": "1048576"}),
    "v2 config of another family's shape": doc2({**REC2, "config": {"rows": 4}}),
    "wrong format": {**doc(), "format": "clblast"},
    "not an object": [REC],
    "config not a mapping": _with(["config"], [64, 64, 4]),
    "tile not multiple": _with(["config", "tile"], 96),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_files_are_rejected_whole(tmp_path, name):
    url = f"sqlite:///{tmp_path / 'h.db'}"
    Store.open(url).merge(parse_export(doc()))
    before = export_doc(Store.open(url).export_rows())["results"]
    bad = HOSTILE[name]
    if isinstance(bad, dict) and "results" in bad and isinstance(bad["results"], list):
        good = REC2 if bad.get("version") == 2 else REC
        bad = {**bad, "results": [good, *bad["results"]]}  # a good record first: still rejected
    f = tmp_path / "bad.json"
    f.write_text(json.dumps(bad))
    with pytest.raises(ImportError_):
        parse_export(json.loads(f.read_text()))
    r = runner.invoke(app, ["import", str(f), "--db", url])
    assert r.exit_code == 1 and "error" in r.output and "Traceback" not in r.output, r.output
    assert export_doc(Store.open(url).export_rows())["results"] == before, "the database changed"


def test_not_json_and_missing_file(tmp_path):
    f = tmp_path / "x.json"
    f.write_text("{not json")
    for p in (str(f), str(tmp_path / "missing.json")):
        r = runner.invoke(app, ["import", p, "--db", str(tmp_path / "d.db")])
        assert r.exit_code == 1 and "Traceback" not in r.output


def test_import_keeps_the_vendor_tally(tmp_path):
    """Imported bests count in the vendor tally (in the import's transaction): a device the
    database never saw gets the most frequent imported best of its vendor, and a faster import
    that replaces a best moves the count; a rejected file changes nothing."""
    from cltune.families.reduce.config import Config
    from cltune.tuning_db import tally
    from cltune.tuning_db.lookup import DeviceKey, lookup

    url = f"sqlite:///{tmp_path / 'v.db'}"
    other = {**CFG, "items": 8}
    recs = []
    for i, cfg in enumerate((CFG, CFG, other)):
        dev = {**DEV, "fingerprint": f"{i:016x}", "hardware_key": f"{i:016x}",
               "model": f"Rocket {i}"}
        recs.append({**REC, "device": dev, "config": cfg})
    s = Store.open(url)
    f = tmp_path / "in.json"
    f.write_text(json.dumps(doc(*recs)))
    r = runner.invoke(app, ["import", str(f), "--db", url])
    assert r.exit_code == 0, r.output

    def tallied():
        with s.engine.connect() as c:
            got = tally.stored(c)
            assert got == tally.recompute(c)
        return {json.loads(k[4])["items"]: v for k, v in got.items()}

    assert tallied() == {4: (2, 0), 8: (1, 0)}
    unseen = DeviceKey("f" * 16, "e" * 16, "Rocket 99", "acme", "gpu", "1.0")
    a = lookup(s, unseen, "reduce", "sum/float32")
    assert a.level == "vendor-default" and a.rows[0].config == CFG
    faster = [{**recs[0], "config": other, "median_s": 1e-5},
              {**recs[1], "config": other, "median_s": 1e-5}]
    rep = s.merge(parse_export(doc(*faster)))
    assert rep.bests_changed == 2
    assert tallied() == {8: (3, 0)}  # rows counted down to zero are not listed
    assert lookup(s, unseen, "reduce", "sum/float32").rows[0].config == other
    for i in (0, 1):  # CFG fails where it was measured (as `cltune verify` records it) ...
        s.record(s.device_ids(fingerprint=f"{i:016x}")[0], reduce_measurement(
            "sum", "float32", 20, CFG, Config.from_mapping(CFG).key(), status="failed",
            reason="wrong sum", n_measured=1, cltune_version="t",
            source_hash="c" * 16), force=True)
    assert tallied() == {4: (0, 2), 8: (3, 0)}
    s.merge(parse_export(doc(*recs)))  # ... and a file never overrides our own failure
    assert tallied() == {4: (0, 2), 8: (3, 0)}
