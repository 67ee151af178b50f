"""The scan family's one-pass chained scan (#21 item 3: decoupled look-back): every op and
width of accumulator (one state word for 32 bits, two for 64) through the tuner's validation
(awkward lengths, rows, CSR segments with empty ones, exclusive, offsets) with tiles small
enough for thousands of groups to look back over each other; in place; many calls on one
scratch (tickets and epochs carried over), the epochs running out (the state words cleared
again), an out-of-order queue; where the device lacks 64-bit atomics it is not offered and
does not build; configs stored before the field existed load as reduce-then-scan with their
old keys."""

from __future__ import annotations

import contextlib

import numpy as np
import pyopencl as cl
import pyopencl.array as cla
import pytest
from support.unoptimized import unoptimized_builds

import cltune.families.scan.kernel as scan_kernel
import cltune.families.scan.launch as launch
from cltune.families.scan.config import ScanConfig, ScanConfigError
from cltune.families.scan.family import ScanVariant
from cltune.families.scan.launch import ScanLauncher
from cltune.families.scan.reference import compare, reference, run_view, sample, validate
from cltune.families.scan.target import make_space
from cltune.opencl.build import BuildError

CHAINS = [ScanConfig("rows", wg=4, items=2, stage=1, chain=1),
          ScanConfig("rows", wg=8, items=4, stage=0, chain=1),
          ScanConfig("rows", wg=1, items=4, stage=0, chain=1),
          # volatile look-back loads (offered on NVIDIA; aligned 64-bit loads are whole on
          # CPUs too, so the path is checked here) and the warp scan's setting (the tree off
          # NVIDIA)
          ScanConfig("rows", wg=8, items=2, stage=1, group_scan=2, chain=2),
          # the chained pass over chunks of many tiles (CPUs): staged and direct
          ScanConfig("rows", wg=4, items=2, stage=1, groups_per_cu=32, chain=3),
          ScanConfig("rows", wg=1, items=8, stage=0, groups_per_cu=32, chain=3),
          ScanConfig("rows", wg=1, items=8, stage=2, groups_per_cu=64, chain=3),
          ScanConfig("rows", wg=1, items=16, stage=2, groups_per_cu=16, chain=3)]


#: The look-back's code differs by its state words: their count (one for accumulators up to
#: 32 bits, two for 64) and encoding (float bits, integers, integers narrower than 32 bits).
#: These operator/dtype pairs cover every class and are built optimized in every config (an
#: optimizer is what could break a look-back: volatile loads, fences, atomics); the others of
#: the matrices share a class with one of them, differ from it only in their combination, and
#: are built unoptimized (support/unoptimized.py: OpenCL C may not reassociate, so the
#: arithmetic is the source's; half the build time).
OPTIMIZED = {("sum", "float32"), ("sum", "int32"), ("prod", "float64"), ("max", "int8")}
PAIRS = [("sum", "float32"), ("sum", "int32"), ("max", "int8"), ("prod", "float64"),
         ("min", "uint16"), ("max", "float32")]


def _builds(op: str, dtype: str, ctx, queue, dev, monkeypatch):
    """(ctx, queue) to build the pair's launchers on: the session's own where the pair is
    built optimized, else a context of unoptimized builds."""
    if (op, dtype) in OPTIMIZED:
        return contextlib.nullcontext((ctx, queue))
    return unoptimized_builds(dev, monkeypatch, scan_kernel)


def test_the_optimized_pairs_cover_every_state_word_class():
    """Each class of state words (count, encoding) has an optimized pair, so every config's
    look-back is checked as the product builds it for every class."""
    def word_class(op, dtype):  # what kernels/scan.cl's NW, ENC and DEC depend on
        opts = scan_kernel.build_defines(ScanVariant(op, dtype), CHAINS[0], scan_kernel.Form())
        d = dict(o[2:].split("=", 1) for o in opts)
        bits = int(d["CLT_ACC_BITS"])
        return (bits == 64, d["CLT_IS_FLOAT"] == "1", bits < 32)
    assert {word_class(*p) for p in PAIRS} == {word_class(*p) for p in OPTIMIZED}
    assert OPTIMIZED < set(PAIRS)


@pytest.fixture(scope="module")
def atomics(device):
    info, _ = device
    if not info.int64_atomics:
        pytest.skip("no cl_khr_int64_base_atomics: the chained pass is not offered "
                    "(test_not_offered_without_64_bit_atomics covers that)")
    return info


@pytest.mark.parametrize("op,dtype", PAIRS)
@pytest.mark.parametrize("cfg", CHAINS, ids=lambda c: c.short().replace(" ", "-"))
def test_every_awkward_case_validates(ctx, queue, device, atomics, op, dtype, cfg,
                                      monkeypatch):
    info, dev = device
    v = ScanVariant(op, dtype)
    if v.needs_fp64 and not info.fp64:
        pytest.skip("no fp64")
    with _builds(op, dtype, ctx, queue, dev, monkeypatch) as (bctx, bqueue):
        la = ScanLauncher(bctx, dev, info, v, cfg)
        chk = validate(la, bqueue, 20011)
    assert chk.ok, (str(v), cfg.short(), chk.reason)
    p = la.plan(1, 20011, 1)
    assert p.chained and p.groups > (600 if cfg.chain != 3 else 16)  # many looked back over


def test_in_place_and_many_calls_on_one_scratch(ctx, queue, device, atomics):
    """40 calls queued back to back (one wait at the end) of changing lengths on one launcher
    and queue: each call's tickets start where the last call's ended (the host's base), its
    epoch is new; then in place (out = x) at an offset, one- and two-word accumulators."""
    info, dev = device
    v64 = ScanVariant("sum", "int32")  # the result is int64: a two-word accumulator
    la = ScanLauncher(ctx, dev, info, v64, CHAINS[1])
    h = sample(v64, (9001,), seed=3)
    xd = cla.to_device(queue, h)
    outs, tiles, last_fill = [], 0, -1
    for k in range(40):
        n = 3001 + 97 * k
        o = cla.empty(queue, (n,), np.int64)
        evs = la.enqueue(queue, xd.data, k % 3, o.data, 0, (1, n, 1), exclusive=bool(k % 2))
        last_fill = k if len(evs) == 2 else last_fill  # the state words grew: cleared
        outs.append((n, k, o))
        tiles += la.plan(1, n, 1).groups
    queue.finish()
    for n, k, o in outs:
        want, scale = reference(v64, h[k % 3:k % 3 + n], 0, bool(k % 2), None)
        assert compare(v64, o.get(), want, scale, 0).ok, k
    s = la._scratch[queue.int_ptr]
    assert s.base == tiles % 2**32 and s.epoch == 40 - last_fill and last_fill > 0
    for v in (ScanVariant("sum", "float32"), ScanVariant("prod", "float64")):
        if v.needs_fp64 and not info.fp64:
            continue
        lap = ScanLauncher(ctx, dev, info, v, CHAINS[0])
        x = sample(v, (12345,), seed=5)
        d = cla.to_device(queue, np.concatenate([np.zeros(7, x.dtype), x]))
        cl.wait_for_events(lap.enqueue(queue, d.base_data, 7, d.base_data, 7, (1, x.size, 1)))
        want, scale = reference(v, x, 0, False, None)
        assert compare(v, d.get()[7:], want, scale, 64 + x.size).ok, str(v)


def test_the_epochs_running_out_clear_the_state_words(ctx, queue, device, atomics,
                                                      monkeypatch):
    """With 3 epochs to a clearing: every fourth call clears the state words first (a fill
    before the launch), and no call takes a stale word of an earlier one."""
    info, dev = device
    monkeypatch.setattr(launch, "EPOCH_LIMIT", 3)
    v = ScanVariant("sum", "float32")
    la = ScanLauncher(ctx, dev, info, v, CHAINS[1])
    fills = []
    for k in range(8):
        x = sample(v, (20000 - 1000 * (k % 3),), seed=k)
        xb = cla.to_device(queue, x)
        ob = cla.empty(queue, x.shape, np.float32)
        evs = la.enqueue(queue, xb.data, 0, ob.data, 0, (1, x.size, 1))
        fills.append(len(evs) == 2)  # [fill, chain]
        want, scale = reference(v, x, 0, False, None)
        assert compare(v, ob.get(), want, scale, 64).ok, k
    assert fills == [True, False, False, True, False, False, True, False]
    s = la._scratch[queue.int_ptr]
    assert s.epoch == 2


def test_out_of_order_queue(ctx, device, atomics):
    """Growing lengths on an out-of-order queue: the state words are reallocated and cleared
    (a fill the launch waits for) and every launch waits for the previous one."""
    _, dev = device
    info = atomics
    try:
        q = cl.CommandQueue(ctx, dev, cl.command_queue_properties.OUT_OF_ORDER_EXEC_MODE_ENABLE)
    except cl.Error:
        pytest.skip("the device has no out-of-order queues")
    v = ScanVariant("max", "float32")
    la = ScanLauncher(ctx, dev, info, v, CHAINS[0])
    hs = [sample(v, (3001 * 3**k,), seed=k) for k in range(5)]
    xs = [cla.to_device(q, h) for h in hs]
    outs = [cla.empty(q, h.shape, np.float32) for h in hs]
    q.finish()
    grew = 0
    for x, o in zip(xs, outs, strict=True):
        grew += len(la.enqueue(q, x.data, 0, o.data, 0, (1, x.size, 1))) == 2
    q.finish()
    assert grew >= 3  # reallocated as the lengths grew
    for h, o in zip(hs, outs, strict=True):
        assert np.array_equal(o.get(), np.maximum.accumulate(h), equal_nan=True)


def test_a_chained_config_too_big_for_its_state_buffer_scans_by_reduce_then_scan(
        ctx, queue, device, atomics):
    info, dev = device
    from cltune.families.scan.launch import plan

    cfg = CHAINS[0]
    assert plan(cfg, 2, 1, 100000, 1, state_words=10**6).chained
    p = plan(cfg, 2, 1, 100000, 1, state_words=1000)
    assert not p.chained and p.groups == 2 * 4 and p.chunk % cfg.tile == 0
    v = ScanVariant("sum", "float32")
    la = ScanLauncher(ctx, dev, info, v, cfg)
    la._plans[(1, 100000, 1)] = p  # as a device with a small allocation limit would plan it
    x = sample(v, (100000,), seed=2)
    got = run_view(la, queue, x, (1, x.size, 1))
    want, scale = reference(v, x, 0, False, None)
    assert compare(v, got, want, scale, 64).ok


def test_not_offered_without_64_bit_atomics(ctx, device):
    info, dev = device
    from dataclasses import replace

    bare = replace(info, int64_atomics=False)
    sp = make_space(bare, "rows", 4)
    assert sp.values["chain"] == (0,) and "chain=1" in sp.excluded
    assert "chain=1" in sp.check(ScanConfig("rows", wg=32, items=2, stage=1, chain=1))
    with pytest.raises(BuildError, match="int64"):
        ScanLauncher(ctx, dev, bare, ScanVariant("sum", "float32"), CHAINS[0]).built()
    assert make_space(info, "cols", 4).values["chain"] == (0,)


def test_nvidia_only_paths_are_offered_on_nvidia_only(ctx, queue, device):
    """group_scan=2 (warp shuffles by inline PTX) and chain=2 (volatile look-back loads) are
    in the space only where the platform is NVIDIA's; elsewhere a build of group_scan=2 takes
    the tree (the probe says which) and still validates."""
    info, dev = device
    from dataclasses import replace

    sp = make_space(info, "rows", 4)
    warp = ScanConfig("rows", wg=32, items=4, stage=1, group_scan=2)
    if not info.is_nvidia:
        assert 2 not in sp.values["group_scan"] and "group_scan=2" in sp.excluded
        assert 2 not in sp.values["chain"] and "group_scan=2" in sp.check(warp)
        la = ScanLauncher(ctx, dev, info, ScanVariant("max", "int16"), warp)
        assert la.built().paths[1] == 0  # the tree
        assert validate(la, queue, 5003).ok
    else:  # the shuffles themselves: every op, widths of 8 to 64 bits, rows and CSR
        for v in ("sum/float32", "max/int8", "prod/float64", "sum/int32", "min/uint16"):
            for cfg in (warp, ScanConfig("rows", wg=128, items=8, stage=1, group_scan=2,
                                         chain=2 if info.int64_atomics else 0)):
                la = ScanLauncher(ctx, dev, info, ScanVariant(*v.split("/")), cfg)
                assert la.built().paths[1] == 1
                chk = validate(la, queue, 200003)
                assert chk.ok, (v, cfg.short(), chk.reason)
    nv = replace(info, vendor="nvidia", platform="NVIDIA CUDA", int64_atomics=True)
    spn = make_space(nv, "rows", 4)
    assert 2 in spn.values["group_scan"] and 2 in spn.values["chain"]
    assert spn.check(ScanConfig("rows", wg=64, items=8, group_scan=2, chain=2)) == ""


def test_stored_configs_without_the_field_keep_their_meaning_and_key():
    old = {"layout": "rows", "wg": 256, "items": 8, "stage": 1, "group_scan": 0,
           "groups_per_cu": 4}
    cfg = ScanConfig.from_mapping(old)
    assert cfg.chain == 0 and cfg.to_dict() == old
    assert cfg.key() == ScanConfig.from_mapping({**old, "chain": 0}).key()
    chained = ScanConfig.from_mapping({**old, "chain": 1})
    assert chained.to_dict()["chain"] == 1 and chained.key() != cfg.key()
    assert chained.short().endswith("chain")
    with pytest.raises(ScanConfigError, match="chain"):
        ScanConfig.from_mapping({**old, "chain": 4})
    with pytest.raises(ScanConfigError, match="chain"):
        ScanConfig("cols", wg=64, items=1, stage=0, chain=1)
    with pytest.raises(ScanConfigError, match="groups_per_cu"):
        ScanConfig("rows", wg=64, items=4, groups_per_cu=8, chain=1)


def test_gpu_tuning_is_seeded_with_the_measured_chained_passes(device):
    """On a GPU with 64-bit atomics the scan tuner's first trials are the builtin chained pass
    and the H200 sweep's other winners (where local memory holds them); a CPU gets none."""
    from dataclasses import replace
    from types import SimpleNamespace

    from cltune.families.scan.target import ScanTarget

    info, _ = device
    nv = {"vendor": "nvidia", "platform": "NVIDIA CUDA"}
    for kind, atom, acc, vendor in (("gpu", True, 4, {}), ("gpu", True, 8, {}),
                                    ("gpu", True, 4, nv), ("gpu", True, 8, nv),
                                    ("cpu", True, 4, {}), ("gpu", False, 4, {})):
        fake_info = replace(info, type=kind, int64_atomics=atom, max_wg=1024,
                            local_mem=49152, subgroups=False, warp_size=32, **vendor)
        t = SimpleNamespace(info=fake_info, scan=ScanVariant("sum", "float32"),
                            acc_bytes=acc, space=make_space(fake_info, "rows", acc))
        t._params = lambda cfg, t=t: ScanTarget._params(t, cfg)
        seeds = ScanTarget.seeds(t, [], (0, 20), None)
        assert all("chain" in d for d in seeds)  # a trial enqueued without it samples it
        got = [ScanConfig.from_mapping(d) for d in seeds]
        chained = [c for c in got if c.chain]
        if kind == "gpu" and atom:
            # the builtin: 256 x 32 (x 8 bytes does not fit 48 KiB: 128 x 32); NVIDIA's:
            # 128 x 32 by warp shuffles, looking back by volatile loads
            want = ("rows wg128 i32 stage warp chain-vload" if fake_info.is_nvidia else
                    f"rows wg{256 if acc == 4 else 128} i32 stage tree chain")
            assert got[0].short() == want
            if acc == 4:  # the tuner's pick at 2^12 and 2^20 on the H200
                assert ScanConfig("rows", wg=256, items=32, stage=1, chain=1) in chained
            assert ScanConfig("rows", wg=128, items=16, stage=1, chain=1) in chained
            assert ScanConfig("rows", wg=128, items=32, stage=1, chain=1) in chained
            warp = ScanConfig("rows", wg=256, items=16, stage=1, chain=1, group_scan=2)
            assert (warp in chained) == fake_info.is_nvidia  # warp shuffles: NVIDIA's PTX
        elif kind == "cpu":  # the builtin: a work-item a chunk in vector registers, chained
            assert chained == [ScanConfig("rows", wg=1, items=16, stage=2, groups_per_cu=128,
                                          chain=3)]
        else:
            assert not chained


@pytest.mark.parametrize("chain", [0, 3])
@pytest.mark.parametrize("items", [8, 16])
def test_large_outputs_stream_from_their_vectors_alignment(ctx, queue, device, chain, items):
    """Outputs of 8 MiB and more leave the CPU vector scan by streaming stores, which need
    the vectors' alignment: an output at an odd element offset, whole and in rows of an odd
    length (a segment head every 1001 elements), inclusive and exclusive."""
    info, dev = device
    if info.type != "cpu":
        pytest.skip("stage=2 is for CPUs")
    if chain and not info.int64_atomics:
        pytest.skip("no cl_khr_int64_base_atomics")
    cfg = ScanConfig("rows", wg=1, items=items, stage=2, groups_per_cu=16, chain=chain)
    rng = np.random.default_rng(items + chain)
    n, ooff, xoff = 2100 * 1001, 3, 1
    for dtype, view, excl in [("float32", (1, n, 1), False), ("int32", (2100, 1001, 1), True)]:
        v = ScanVariant("sum", dtype)
        la = ScanLauncher(ctx, dev, info, v, cfg)
        h = (rng.random(n, dtype=np.float32) if dtype == "float32"
             else rng.integers(-50, 50, n, dtype=np.int32))
        xb = cla.to_device(queue, np.concatenate([np.zeros(xoff, h.dtype), h]))
        ob = cla.zeros(queue, n + ooff, v.result_dtype)  # int32 sums to int64, as numpy
        la.enqueue(queue, xb.data, xoff, ob.data, ooff, view, exclusive=excl)
        got = ob.get()
        assert not got[:ooff].any()  # nothing written before the output
        rows = h.reshape(view[0], view[1])
        if dtype == "float32":
            want = np.cumsum(rows.astype(np.float64), axis=1).reshape(-1)
            assert np.max(np.abs(got[ooff:] - want) / np.maximum(np.abs(want), 1)) < 1e-3
        else:
            incl = np.cumsum(rows, axis=1)
            want = np.concatenate([np.zeros((view[0], 1), incl.dtype), incl[:, :-1]], axis=1)
            assert np.array_equal(got[ooff:], want.reshape(-1))



def _two_launchers(ctx, queue, device, cfg, monkeypatch, seed):
    """(variant, launcher a, launcher b of the same build, host input of 30011, its upload),
    with the epochs running out every third call (EPOCH_LIMIT 3)."""
    info, dev = device
    monkeypatch.setattr(launch, "EPOCH_LIMIT", 3)
    v = ScanVariant("sum", "float32")
    a, b = (ScanLauncher(ctx, dev, info, v, cfg) for _ in range(2))
    h = sample(v, (30011,), seed=seed)
    return v, a, b, h, cla.to_device(queue, h)


@pytest.mark.parametrize("cfg", [ScanConfig("rows", wg=8, items=4, stage=1, chain=1),
                                 ScanConfig("rows", wg=64, items=64 // 2, stage=1, chain=1)],
                         ids=["chained", "one-group"])
def test_warm_one_launch_calls_reset_what_others_set(ctx, queue, device, atomics, cfg,
                                                     monkeypatch):
    """A repeated view's launch sets only the input and result (and, chained, the ticket base
    and epoch; the state buffers when replaced) while the kernel still holds its arguments;
    two launchers sharing the build, other views and offsets, exclusive calls, state words
    cleared (epochs run out) or regrown in between all stay right: a launch that skipped
    resetting what another set would scan with the other's length."""
    v, a, b, h, xd = _two_launchers(ctx, queue, device, cfg, monkeypatch, seed=21)
    n1 = 2000 if cfg.chain and cfg.wg == 8 else 1500  # one group for wg64 x 32 = 2048
    calls = [(a, 0, n1, False), (a, 0, n1, False), (a, 0, n1, False), (b, 3, 999, False),
             (a, 0, n1, False), (a, 5, n1, False), (a, 5, n1, False), (b, 3, 999, True),
             (a, 5, n1, False), (b, 1, 30000, False), (a, 5, n1, False), (a, 5, n1, False)]
    full = []
    real = launch.ScanLauncher._rows_args
    monkeypatch.setattr(launch.ScanLauncher, "_rows_args",
                        lambda self, *args, **kw: full.append(self) or real(self, *args, **kw))
    outs = []
    for la, off, n, excl in calls:
        o = cla.empty(queue, (n,), np.float32)
        la.enqueue(queue, xd.data, off, o.data, 0, (1, n, 1), exclusive=excl)
        outs.append((off, n, excl, o))
    queue.finish()
    for k, (off, n, excl, o) in enumerate(outs):
        want, scale = reference(v, h[off:off + n], 0, excl, None)
        assert compare(v, o.get(), want, scale, 64).ok, (k, off, n, excl)
    # full sets: a's first two calls (the long way, then arming), after b's calls and on a
    # new offset; the warm calls (3rd, 7th, 12th) set only what changes per call
    assert len(full) < len(calls) - 2, len(full)


@pytest.mark.parametrize("cfg", [ScanConfig("rows", wg=8, items=4, stage=1, chain=1),
                                 ScanConfig("rows", wg=64, items=64 // 2, stage=1, chain=1)],
                         ids=["chained", "one-group"])
def test_the_prepared_call_keeps_the_chains_state(ctx, queue, device, atomics, cfg,
                                                  monkeypatch):
    """The launcher's prepared call of a view (`warm_rows`, what Scanner's warm call runs)
    among other launches: another launcher of the same build, other offsets and views, state
    words regrown by a longer view and cleared when the epochs run out (every third call
    here), a failed launch's state set aside; every answer right, the prepared call still
    set for its view (its fast case) after all of them."""
    v, a, b, h, xd = _two_launchers(ctx, queue, device, cfg, monkeypatch, seed=23)
    n1 = 2000 if cfg.wg == 8 else 1500  # one group for wg64 x 32 = 2048
    view = (1, n1, 1)
    assert a.warm_rows(queue, view, False) is None  # nothing launched for it yet
    o = cla.empty(queue, (n1,), np.float32)
    a.enqueue(queue, xd.data, 0, o.data, 0, view)
    go = a.warm_rows(queue, view, False)
    assert go is not None
    assert a.warm_rows(queue, (1, 30000, 1), False) is None  # not launched by a
    steps = ["go", "go", "b", "go", "a5", "go", "b-long", "go", "go", "go", "go"]
    outs = []
    for k, step in enumerate(steps):
        if step == "go":
            o = cla.empty(queue, (n1,), np.float32)
            ev = go(xd.data, 0, o.data, 0)
            assert isinstance(ev, cl.Event)
            outs.append((0, n1, o))
        elif step == "a5":
            o = cla.empty(queue, (n1,), np.float32)
            a.enqueue(queue, xd.data, 5, o.data, 0, view)
            outs.append((5, n1, o))
        else:
            n = 30000 if step == "b-long" else 999
            o = cla.empty(queue, (n,), np.float32)
            b.enqueue(queue, xd.data, 1, o.data, 0, (1, n, 1))
            outs.append((1, n, o))
        if k == 8 and not cfg.wg == 64:  # a launch that failed before: its state set aside
            s = a._scratch_of(queue)
            failed = cl.UserEvent(ctx)
            failed.set_status(-1)
            s.last = failed
    queue.finish()
    for k, (off, n, o) in enumerate(outs):
        want, scale = reference(v, h[off:off + n], 0, False, None)
        assert compare(v, o.get(), want, scale, 64).ok, (k, steps[k], off, n)


@pytest.mark.parametrize("op,dtype", PAIRS)
@pytest.mark.parametrize("cfg", [ScanConfig("rows", wg=32, items=1, stage=1, chain=1),
                                 ScanConfig("rows", wg=32, items=2, stage=0, chain=2)],
                         ids=["staged", "vload"])
@pytest.mark.parametrize("emulated", [True, False], ids=["emulated", "native"])
def test_the_warp_wide_look_back_validates(ctx, queue, device, atomics, op, dtype, cfg,
                                           emulated, monkeypatch):
    """NVIDIA's look-back (a warp walks back, a predecessor a lane, ballots find the first
    "not yet" and the first inclusive prefix or head, shuffles combine) with its ballots and
    shuffles emulated in __local memory (CLT_LB_WARP 2: groups of one warp), so the walk's
    logic runs on every device: hundreds of groups, segments, exclusive, offsets, NaNs in
    max, one and two state words. (Both the shuffle and the ballot are taken by every lane:
    an operator that read its operand twice once left a lane out.) "native": the device's own
    build of groups of whole warps (NVIDIA: the real ballots and shuffles; elsewhere the walk
    by one work-item)."""
    import cltune.families.scan.kernel as sk
    info, dev = device
    v = ScanVariant(op, dtype)
    if v.needs_fp64 and not info.fp64:
        pytest.skip("no fp64")
    src = sk.scan_source()
    # the build fails unless the emulated walk is the one compiled
    if emulated:
        monkeypatch.setattr(sk, "scan_source", lambda: "#define CLT_LB_WARP 2\n" + src +
                            "\n#if LB_WARP != 2\n#error not the emulated walk\n#endif\n")
    else:  # and on NVIDIA unless the real one is
        monkeypatch.setattr(sk, "scan_source", lambda: src + "\n#if HAVE_NV_PTX && LB_WARP != 1"
                            "\n#error not the warp's walk\n#endif\n")
    with _builds(op, dtype, ctx, queue, dev, monkeypatch) as (bctx, bqueue):
        la = ScanLauncher(bctx, dev, info, v, cfg)
        chk = validate(la, bqueue, 20011)
    assert chk.ok, (str(v), cfg.short(), chk.reason)
    assert la.plan(1, 20011, 1).groups > 300
