"""The scan family's one-pass chained scan (#21 item 3: decoupled look-back): every op and
width of accumulator (one state word for 32 bits, two for 64) through the tuner's validation
(awkward lengths, rows, CSR segments with empty ones, exclusive, offsets) with tiles small
enough for thousands of groups to look back over each other; in place; many calls on one
scratch (tickets and epochs carried over), the epochs running out (the state words cleared
again), an out-of-order queue; where the device lacks 64-bit atomics it is not offered and
does not build; configs stored before the field existed load as reduce-then-scan with their
old keys."""

from __future__ import annotations

import numpy as np
import pyopencl as cl
import pyopencl.array as cla
import pytest

import cltune.families.scan.launch as launch
from cltune.families.scan.config import ScanConfig, ScanConfigError
from cltune.families.scan.family import ScanVariant
from cltune.families.scan.launch import ScanLauncher
from cltune.families.scan.reference import compare, reference, run_view, sample, validate
from cltune.families.scan.target import make_space
from cltune.opencl.build import BuildError

CHAINS = [ScanConfig("rows", wg=4, items=2, stage=1, chain=1),
          ScanConfig("rows", wg=8, items=4, stage=0, chain=1),
          ScanConfig("rows", wg=1, items=4, stage=0, chain=1)]


@pytest.fixture(scope="module")
def atomics(device):
    info, _ = device
    if not info.int64_atomics:
        pytest.skip("no cl_khr_int64_base_atomics: the chained pass is not offered "
                    "(test_not_offered_without_64_bit_atomics covers that)")
    return info


@pytest.mark.parametrize("op,dtype", [("sum", "float32"), ("sum", "int32"), ("max", "int8"),
                                      ("prod", "float64"), ("min", "uint16"),
                                      ("max", "float32")])
@pytest.mark.parametrize("cfg", CHAINS, ids=lambda c: c.short().replace(" ", "-"))
def test_every_awkward_case_validates(ctx, queue, device, atomics, op, dtype, cfg):
    info, dev = device
    v = ScanVariant(op, dtype)
    if v.needs_fp64 and not info.fp64:
        pytest.skip("no fp64")
    la = ScanLauncher(ctx, dev, info, v, cfg)
    chk = validate(la, queue, 20011)
    assert chk.ok, (str(v), cfg.short(), chk.reason)
    assert la.plan(1, 20011, 1).groups > 600  # thousands of tiles looked back over


def test_in_place_and_many_calls_on_one_scratch(ctx, queue, device, atomics):
    """In place (out = x) at an offset, then 40 calls back to back of changing lengths on
    one launcher: each call's tickets start where the last call's ended, its epoch is new."""
    info, dev = device
    v = ScanVariant("sum", "int32")
    la = ScanLauncher(ctx, dev, info, v.with_layout("rows"), CHAINS[0])
    v64 = ScanVariant("sum", "int32")  # the result is int64: a two-word accumulator
    h = sample(v64, (9001,), seed=3)
    la64 = ScanLauncher(ctx, dev, info, v64, CHAINS[1])
    for k in range(40):
        n = 3001 + 97 * k
        got = run_view(la64, queue, h[:n], (1, n, 1), exclusive=bool(k % 2), xoff=k % 3)
        want, scale = reference(v64, h[:n], 0, bool(k % 2), None)
        assert compare(v64, got, want, scale, 0).ok, k
    # in place: float32 sums, out is the input's own buffer at its offset
    vf = ScanVariant("sum", "float32")
    laf = ScanLauncher(ctx, dev, info, vf, CHAINS[0])
    x = sample(vf, (12345,), seed=5)
    d = cla.to_device(queue, np.concatenate([np.zeros(7, np.float32), x]))
    evs = laf.enqueue(queue, d.base_data, 7, d.base_data, 7, (1, x.size, 1))
    cl.wait_for_events(evs)
    want, scale = reference(vf, x, 0, False, None)
    assert compare(vf, d.get()[7:], want, scale, 64).ok
    del la


def test_the_epochs_running_out_clear_the_state_words(ctx, queue, device, atomics,
                                                      monkeypatch):
    """With 3 epochs to a clearing: stale words of earlier calls never pass for this call's."""
    info, dev = device
    monkeypatch.setattr(launch, "EPOCH_LIMIT", 3)
    v = ScanVariant("sum", "float32")
    la = ScanLauncher(ctx, dev, info, v, CHAINS[1])
    for k in range(8):
        x = sample(v, (20000 - 1000 * (k % 3),), seed=k)
        got = run_view(la, queue, x, (1, x.size, 1))
        want, scale = reference(v, x, 0, False, None)
        assert compare(v, got, want, scale, 64).ok, k
    s = la._scratch[queue.int_ptr]
    assert 1 <= s.epoch <= 3 and s.base == sum(-(-(20000 - 1000 * (k % 3)) // 32)
                                               for k in range(8)) % 2**32


def test_out_of_order_queue(ctx, device, atomics):
    _, dev = device
    info = atomics
    try:
        q = cl.CommandQueue(ctx, dev, cl.command_queue_properties.OUT_OF_ORDER_EXEC_MODE_ENABLE)
    except cl.Error:
        pytest.skip("the device has no out-of-order queues")
    v = ScanVariant("max", "float32")
    la = ScanLauncher(ctx, dev, info, v, CHAINS[0])
    hs = [sample(v, (30001 + k,), seed=k) for k in range(5)]
    xs = [cla.to_device(q, h) for h in hs]
    outs = [cla.empty(q, h.shape, np.float32) for h in hs]
    q.finish()
    for x, o in zip(xs, outs, strict=True):
        la.enqueue(q, x.data, 0, o.data, 0, (1, x.size, 1))
    q.finish()
    for h, o in zip(hs, outs, strict=True):
        assert np.array_equal(o.get(), np.maximum.accumulate(h), equal_nan=True)


def test_not_offered_without_64_bit_atomics(ctx, device):
    info, dev = device
    from dataclasses import replace

    bare = replace(info, int64_atomics=False)
    sp = make_space(bare, "rows", 4)
    assert sp.values["chain"] == (0,) and "chain=1" in sp.excluded
    assert "chain=1" in sp.check(CHAINS[0])
    with pytest.raises(BuildError, match="int64"):
        ScanLauncher(ctx, dev, bare, ScanVariant("sum", "float32"), CHAINS[0]).built()
    assert make_space(info, "cols", 4).values["chain"] == (0,)


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
        ScanConfig.from_mapping({**old, "chain": 2})
    with pytest.raises(ScanConfigError, match="chain"):
        ScanConfig("cols", wg=64, items=1, stage=0, chain=1)


def test_gpu_tuning_is_seeded_with_the_measured_chained_passes(device):
    """On a GPU with 64-bit atomics the scan tuner's first trials are the builtin chained pass
    and the H200 sweep's other winners (where local memory holds them); a CPU gets none."""
    from dataclasses import replace
    from types import SimpleNamespace

    from cltune.families.scan.target import ScanTarget

    info, _ = device
    for kind, atom, acc in (("gpu", True, 4), ("gpu", True, 8), ("cpu", True, 4),
                            ("gpu", False, 4)):
        fake_info = replace(info, type=kind, int64_atomics=atom, max_wg=1024,
                            local_mem=49152, subgroups=False, warp_size=32)
        t = SimpleNamespace(info=fake_info, scan=ScanVariant("sum", "float32"),
                            acc_bytes=acc, space=make_space(fake_info, "rows", acc))
        t._params = lambda cfg, t=t: ScanTarget._params(t, cfg)
        got = [ScanConfig.from_mapping(d) for d in ScanTarget.seeds(t, [], (0, 20), None)]
        chained = [c for c in got if c.chain]
        if kind == "gpu" and atom:
            assert got[0].short() == "rows wg128 i32 stage tree chain"  # the builtin
            assert ScanConfig("rows", wg=128, items=16, stage=1, chain=1) in chained
            assert (ScanConfig("rows", wg=256, items=32, stage=1, chain=1) in chained) == \
                (acc == 4)  # 256 x 32 x 8 bytes does not fit 48 KiB
        else:
            assert not chained
