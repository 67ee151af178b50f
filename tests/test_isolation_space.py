"""The worker makes a target's space only when it is used: vetting one config (the runtime's
first call of an untuned expression) never pays the space's probe builds, which for a float64
`var` along an axis took NVIDIA's compiler 20-48 s a build; the tuner asks for it (`space`)."""

from __future__ import annotations

from cltune.families.base import ON_USE, DeferredSpace, make_target
from cltune.families.reduce import target as reduce_target
from cltune.families.reduce.space import Space
from cltune.isolation import worker_main


def _counting(monkeypatch):
    made = []
    real = reduce_target.make_space

    def counted(*a, **k):
        made.append(1)
        return real(*a, **k)

    monkeypatch.setattr(reduce_target, "make_space", counted)
    return made


def test_a_deferred_space_is_made_on_first_read_and_once(ctx, device, info, monkeypatch):
    made = _counting(monkeypatch)
    t = make_target("reduce", ctx, device[1], info, "sum/float32", space=ON_USE)
    assert isinstance(t.space, DeferredSpace) and made == []
    assert t.space.values == t.real_space().values  # reads go to the real space
    assert isinstance(t.real_space(), Space) and made == [1]
    assert t.space.kernel_max_wg == t.real_space().kernel_max_wg and made == [1]  # once


def test_an_eager_target_has_its_space_at_once(ctx, device, info, monkeypatch):
    made = _counting(monkeypatch)
    t = make_target("reduce", ctx, device[1], info, "sum/float32")
    assert isinstance(t.space, Space) and made == [1]
    assert t.real_space() is t.space


def test_the_workers_open_makes_no_space_and_space_makes_it(device, info, monkeypatch):
    made = _counting(monkeypatch)
    st = worker_main._State()
    worker_main._init(st, info)
    assert worker_main._open(st, 7, "reduce", "sum/float32", {}) is None
    assert made == []  # what vetting opens: no probe builds
    space = worker_main._space(st, 7)
    assert isinstance(space, Space) and made == [1]
    assert worker_main._space(st, 7) is space and made == [1]
    worker_main._close(st, 7)
