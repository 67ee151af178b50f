"""get_reducer as applications use it: offsets, numpy input, errors, empty input, threads."""

import os
import threading
import warnings

import numpy as np
import pyopencl as cl
import pyopencl.array as cla
import pytest

from cltune import get_reducer
from cltune.core.serving import CltuneWarning
from cltune.device.select import info_for
from cltune.tuning_db.answer import device_key
from cltune.tuning_db.shipped import lookup_without_db


@pytest.fixture
def empty_db(tmp_path):
    return f"sqlite:///{tmp_path / 'none.db'}"


def test_empty_db_gives_builtin_with_one_warning(queue, empty_db):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        r = get_reducer(queue, db=empty_db)
        x = cla.to_device(queue, np.arange(1, 1001, dtype=np.float32))
        assert r(x).get() == 500500.0
        r(x)
        get_reducer(queue, op="max", db=empty_db)  # another reducer: no second warning
    assert sum(issubclass(i.category, CltuneWarning) for i in w) == 1
    e = r.explain(1000)
    # without a database the shipped results answer where cltune ships some for this device
    shipped = lookup_without_db(device_key(info_for(queue.device)), "reduce", "sum/float32")
    if shipped.level == "shipped":
        assert e.level == "shipped", str(e)
    else:
        assert e.level == "builtin" and "no tuned results" in str(e), str(e)


@pytest.mark.parametrize("n", [1, 7, 1023, 1025, 10**6 + 3])
def test_random_odd_sizes_within_bound(queue, empty_db, n):
    rng = np.random.default_rng(n)
    host = rng.random(n, dtype=np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CltuneWarning)
        r = get_reducer(queue, db=empty_db)
    got = float(r(cla.to_device(queue, host)).get())
    exact = float(np.sum(host.astype(np.float64)))
    assert abs(got - exact) <= 1e-6 * np.abs(host).sum() + 1e-30


def _r(target, db, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CltuneWarning)
        return get_reducer(target, db=db, **kw)


def test_accepts_device_context_and_queue(queue, ctx, device, empty_db):
    x = cla.to_device(queue, np.ones(4097, np.float32))
    for target in (ctx, queue):
        r = _r(target, empty_db)
        assert r(x, queue=queue).get() == 4097
    r = _r(device[1], empty_db)  # a Device: the reducer makes (and caches) its own context
    assert r(cla.to_device(r.queue, np.ones(4097, np.float32))).get() == 4097
    assert _r(device[1], empty_db).engine_id == r.engine_id
    with pytest.raises(ValueError, match="another OpenCL context"):
        r(x)
    with pytest.raises(TypeError, match="Device, Context or CommandQueue"):
        get_reducer("gpu")


def test_offsets_and_slices(queue, empty_db):
    host = np.arange(10007, dtype=np.float32) % 17
    x = cla.to_device(queue, host)
    r = _r(queue, empty_db)
    for lo, hi in [(5, None), (1, 9999), (3, 4), (10006, None)]:
        assert r(x[lo:hi]).get() == host[lo:hi].sum(dtype=np.float64)


def test_numpy_input_is_uploaded(queue, empty_db):
    host = np.arange(1000, dtype=np.float32)
    assert _r(queue, empty_db)(host).get() == host.sum()


def test_wrong_dtype_and_noncontiguous_are_clear_errors(queue, empty_db):
    r = _r(queue, empty_db)
    with pytest.raises(TypeError, match="float32"):
        r(cla.to_device(queue, np.ones(10, np.float64)))
    with pytest.raises(TypeError, match="float32"):
        r(np.ones(10, np.int32))
    x2 = cla.to_device(queue, np.ones((8, 8), np.float32))
    with pytest.raises(ValueError, match="contiguous"):
        r(x2[:, 1])
    with pytest.raises(TypeError):
        r([1.0, 2.0])


def test_empty_input_like_numpy(queue, empty_db):
    e = cla.empty(queue, (0,), np.float32)
    assert _r(queue, empty_db)(e).get() == 0.0
    assert _r(queue, empty_db, op="prod")(e).get() == 1.0
    for op in ("min", "max"):
        with pytest.raises(ValueError, match="zero-size"):
            _r(queue, empty_db, op=op)(e)


def test_out_and_wait_for_compose(queue, empty_db):
    r = _r(queue, empty_db)
    x = cla.empty(queue, (100003,), np.float32)
    x.fill(2.0)
    ev = x.events[-1]
    out = cla.empty(queue, (), np.float32)
    res = r(x, out=out, wait_for=[ev])
    assert res is out and out.get() == 200006.0
    with pytest.raises(TypeError, match="0-d"):
        r(x, out=cla.empty(queue, (), np.float64))
    with pytest.raises(TypeError, match="wait_for"):
        r(x, wait_for=[x])


def test_int32_sum_returns_int64_and_dot(queue, empty_db):
    host = np.full(3000, 2**30, np.int32)
    got = _r(queue, empty_db, dtype=np.int32)(cla.to_device(queue, host)).get()
    assert got.dtype == np.int64 and got == host.sum()
    a = np.arange(1, 2001, dtype=np.float32)
    d = _r(queue, empty_db, op="dot")
    exact = 2000 * 2001 * 4001 // 6
    got = float(d(cla.to_device(queue, a), cla.to_device(queue, a)).get())
    assert abs(got - exact) < 1e-6 * exact
    with pytest.raises(TypeError, match="two arrays"):
        d(cla.to_device(queue, a))


def test_threads_share_one_reducer(ctx, device, empty_db):
    r = _r(ctx, empty_db)
    errors = []

    def work(k):
        q = cl.CommandQueue(ctx, device[1])
        host = np.full(50_000 + k, float(k + 1), np.float32)
        x = cla.to_device(q, host)
        for _ in range(20):
            got = r(x, queue=q).get(queue=q)
            if got != host.sum(dtype=np.float64):
                errors.append((k, got))

    ts = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors
    assert _r(ctx, empty_db).engine_id == r.engine_id, "one engine per context"


def test_tuned_db_is_used_and_explained(queue, device, tmp_path):
    from support.tuned import store_bests

    from cltune.families.reduce.config import Config

    url = f"sqlite:///{tmp_path / 't.db'}"
    store_bests(url, device[0], {10: Config("local_tree", 8, 8, 2, 4, 2, 2, "native"),
                                 20: Config("serial", 8, 0, 2, 4, 2, 2, "native")})
    r = get_reducer(queue, db=url)
    assert r.explain(1000).level == "exact" and r.explain(1000).config.strategy == "local_tree"
    assert r.explain(3 * 10**6).config.strategy == "serial"
    x = cla.to_device(queue, np.ones(3 * 10**6 + 1, np.float32))
    assert r(x).get() == 3 * 10**6 + 1


def test_one_config_stored_for_two_classes_explains_each_class(queue, device, tmp_path):
    """Two size classes whose tuned bests are the same config: each size is explained by its
    own class (the vetting verdict is cached per config, not the first size's choice)."""
    from support.tuned import store_bests

    from cltune.families.reduce.config import Config

    url = f"sqlite:///{tmp_path / 't.db'}"
    cfg = Config("serial", 8, 0, 2, 4, 2, 2, "native")
    store_bests(url, device[0], {10: cfg, 20: cfg})
    r = get_reducer(queue, db=url)
    assert (r.explain(1000).bucket, r.explain(1 << 20).bucket) == (10, 20)
    assert r.explain(1 << 20).config == cfg and r.explain(1 << 20).level == "exact"


def test_runtime_never_writes_the_database(queue, device, tmp_path):
    import hashlib

    from support.tuned import store_bests

    from cltune.families.reduce.config import Config

    url = f"sqlite:///{tmp_path / 'ro.db'}"
    store_bests(url, device[0], {12: Config("local_tree", 8, 8, 2, 4, 2, 2, "native")})
    files = sorted(tmp_path.iterdir())
    before = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in files}
    r = get_reducer(queue, db=url, op="sum")
    assert r(cla.to_device(queue, np.ones(5000, np.float32))).get() == 5000
    after = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(
        tmp_path.iterdir())}
    # the database file is byte-identical; SQLite may create its empty -wal/-shm companions
    # (its read-only WAL housekeeping), which hold no data
    assert after["ro.db"] == before["ro.db"]
    wal = tmp_path / "ro.db-wal"
    assert not wal.exists() or wal.stat().st_size == 0


def test_two_reducers_sharing_kernels_keep_their_own_arguments(queue, tmp_path):
    """Reducers with the same config share built kernels; each launch must set its own
    arguments (regression: the second reducer's output was overwritten by the first's)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CltuneWarning)
        r1 = get_reducer(queue, db=f"sqlite:///{tmp_path / 'a.db'}")
        r2 = get_reducer(queue, db=f"sqlite:///{tmp_path / 'b.db'}")
    assert r1.engine_id != r2.engine_id and r1.explain(4099).config == r2.explain(4099).config
    a = cla.to_device(queue, np.ones(4099, np.float32))
    b = cla.to_device(queue, np.full(4099, 3, np.float32))
    got = [r1(a).get(), r2(b).get(), r1(a).get(), r2(b).get(), r1(a[1:]).get()]
    assert got == [4099, 12297, 4099, 12297, 4098]


def test_prepared_launches_do_not_keep_inputs_alive(queue, empty_db):
    """Regression: a prepared launch held the caller's last input (one array per reducer and
    n: 24 GB over a 648-config sweep)."""
    import gc

    import pyopencl.tools as clt

    r = _r(queue, empty_db)
    pool = clt.MemoryPool(clt.ImmediateAllocator(queue))
    x = cla.to_device(queue, np.ones(3001, np.float32), allocator=pool)
    out = cla.empty(queue, (), np.float32, allocator=pool)
    assert r(x).get() == 3001 and r(x, out=out).get() == 3001  # warm path, then the general one
    assert r(x).get() == 3001 and r(x, out=out).get() == 3001  # prepared launches reused
    assert pool.active_blocks == 2
    del x, out
    gc.collect()
    assert pool.active_blocks == 0, "a prepared launch still holds the input or the result"


def test_result_arrays_from_the_template_are_real_independent_arrays(queue, empty_db):
    """The warm path's 0-d results copy a template Array (cltune.opencl.scalars.ScalarFactory):
    each
    has its own buffer and events and behaves like one pyopencl built; the constructor path
    (used when a pyopencl version sets other attributes) gives the same."""
    from cltune.opencl.scalars import ARRAY_ATTRS, new_scalar

    r = get_reducer(queue, db=empty_db)
    assert r.scalars.fast, "this pyopencl's Array attributes changed: update ARRAY_ATTRS"
    x = cla.to_device(queue, np.arange(1, 5001, dtype=np.float32))
    a, b = r(x), r(x[1:])
    ref = new_scalar(queue, np.dtype(np.float32), None)
    assert set(vars(a)) == set(vars(ref)) == ARRAY_ATTRS
    assert a.base_data.int_ptr != b.base_data.int_ptr and a.events is not b.events
    assert (a.shape, a.dtype, a.strides, a.size, a.offset) == ((), np.float32, (), 1, 0)
    assert a.get() == 12502500.0 and b.get() == 12502499.0 and (a + b).get() == 25004999.0
    r.scalars.fast = False  # the constructor path
    c = r(x)
    assert type(c) is cla.Array and c.get() == 12502500.0


@pytest.mark.parametrize("shape,order", [((7, 5), "C"), ((7, 5), "F"), ((3, 1, 4), "C"),
                                         ((9,), "C")])
def test_result_factories_of_any_shape_make_what_pyopencl_makes(queue, shape, order):
    """The warm calls along axes and the scans take their results from a template of their
    shape and order (cltune.opencl.scalars.ResultFactory): each result has the layout of
    `cla.empty`, a buffer and an event list of its own, and works as an ordinary array; with
    no pool (or a pyopencl whose Array changed) the constructor serves."""
    from cltune.opencl.pools import pool_for
    from cltune.opencl.scalars import ARRAY_ATTRS, ResultFactory

    make = ResultFactory(queue, np.dtype(np.float32), pool_for(queue), shape, order)
    assert make.fast, "this pyopencl's Array attributes changed: update ARRAY_ATTRS"
    ref = cla.empty(queue, shape, np.float32, order=order)
    a, b = make(), make()
    assert set(vars(a)) == ARRAY_ATTRS and type(a) is cla.Array
    assert (a.shape, a.strides, a.size, a.nbytes, a.offset) == (
        ref.shape, ref.strides, ref.size, ref.nbytes, 0)
    assert a.base_data.int_ptr != b.base_data.int_ptr and a.events is not b.events
    h = np.asarray(np.arange(a.size, dtype=np.float32).reshape(shape), order=order)
    a.set(h)
    assert np.array_equal(a.get(), h) and (a + 1).get().sum() == (h + 1).sum()
    assert (a.flags.c_contiguous, a.flags.f_contiguous) == (
        ref.flags.c_contiguous, ref.flags.f_contiguous)
    slow = ResultFactory(queue, np.dtype(np.float32), None, shape, order)
    assert not slow.fast and slow().strides == ref.strides


@pytest.mark.multiprocess
def test_no_database_file_answers_without_loading_sqlalchemy(device, tmp_path):
    """Without a database file (never tuned here) get_reducer answers from the shipped results
    or builtin, warns once, and never imports SQLAlchemy (a third of a second of startup)."""
    import json
    import subprocess
    import sys

    info, _ = device
    code = f"""
import json, sys, warnings
import numpy as np, pyopencl as cl, pyopencl.array as cla
from cltune import get_reducer
from cltune.device.select import select
info, dev = select({str(info.index)!r})
ctx = cl.Context([dev]); q = cl.CommandQueue(ctx)
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    r = get_reducer(q, db=sys.argv[1] or None)
    total = float(r(cla.to_device(q, np.ones(1001, np.float32))).get())
print(json.dumps({{"sqlalchemy": "sqlalchemy" in sys.modules, "total": total,
                  "level": r.explain(1001).level,
                  # cltune's own (a compiler's chatter, e.g. Intel's, is pyopencl's warning)
                  "warnings": [str(x.message) for x in w
                               if not issubclass(x.category, cl.CompilerWarning)]}}))
"""
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "never.db")],
                         capture_output=True, text=True, timeout=300, check=True).stdout
    res = json.loads(out.strip().splitlines()[-1])
    assert res["total"] == 1001.0 and res["level"] in ("shipped", "builtin"), res
    assert not res["sqlalchemy"], "SQLAlchemy was imported without a database file"
    # a database the application named and that is not there: said once
    assert len(res["warnings"]) == 1 and "does not exist" in res["warnings"][0], res
    # the default database not there yet (nothing tuned on this machine): the normal state,
    # not worth a warning
    env = {k: v for k, v in os.environ.items() if k != "CLTUNE_DB"}
    env["XDG_DATA_HOME"] = str(tmp_path / "fresh-home")
    out = subprocess.run([sys.executable, "-c", code, ""], capture_output=True, text=True,
                         timeout=300, check=True, env=env).stdout
    res = json.loads(out.strip().splitlines()[-1])
    assert res["total"] == 1001.0 and not res["sqlalchemy"] and res["warnings"] == [], res


def test_a_get_reducer_per_call_gets_the_reducer_it_got_before(queue, ctx, empty_db):
    """get_reducer(q)(x) in a loop (as applications write it) keeps its prepared launches: the
    same target, op, dtype and database give the same reducer back (statistics too); another
    queue, op, dtype or database another one; clear_caches() starts afresh."""
    import cltune

    r = get_reducer(queue, db=empty_db)
    assert get_reducer(queue, db=empty_db) is r
    assert get_reducer(queue, "max", db=empty_db) is not r
    assert get_reducer(queue, dtype=np.float64, db=empty_db) is not r
    assert get_reducer(queue) is not r  # the default database
    q2 = cl.CommandQueue(ctx)
    assert get_reducer(q2, db=empty_db) is not r and get_reducer(q2, db=empty_db).queue is q2
    s = get_reducer(queue, "argmax")
    assert get_reducer(queue, "argmax") is s and get_reducer(queue, "argmin") is not s
    assert get_reducer(queue, "argmax", np.float64) is not s
    x = cla.to_device(queue, np.arange(4099, dtype=np.float32))
    for _ in range(3):
        assert get_reducer(queue, db=empty_db)(x).get() == np.arange(4099).sum()
        assert int(get_reducer(queue, "argmax")(x).get()) == 4098
    with pytest.raises(Exception, match="op"):
        get_reducer(queue, "nosuchop")
    cltune.clear_caches()
    r2 = get_reducer(queue, db=empty_db)
    assert r2 is not r and r2(x).get() == r(x).get()
    assert get_reducer(queue, "argmax") is not s
