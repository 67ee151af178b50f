"""The evaluation worker process (`python -m cltune.isolation.worker_main READ_FD WRITE_FD`).

It opens a context on the device it is given (`init`), then answers requests one at a time:
`open` makes a family's tuning target (`targets.make_target`) for one variant (`space` its
space, made on first use), `prepare` its
benchmark input for a size class, `evaluate` judges one config there (check -> build ->
validate -> time, the family's own evaluate), `side_by_side` re-measures finalists, `probe`
runs a health probe (`health_probes`), `check` runs a kernel outside the families through the
check function the asking process names (`vetting.checked`). A crash or hang of the driver ends
this process, never the one that asked (`worker.Worker`). The test hook `faults` acts here only.
"""

from __future__ import annotations

import os
import sys
import threading
import time
import traceback
from dataclasses import replace
from typing import Any

import pyopencl as cl

from cltune.core import strategies
from cltune.core.outcome import Timing
from cltune.device.info import DeviceInfo, describe, platform_devices
from cltune.families.base import ON_USE, make_target
from cltune.isolation import codec, faults


class _State:
    def __init__(self) -> None:
        self.info: DeviceInfo | None = None
        self.dev: cl.Device | None = None
        self.ctx: cl.Context | None = None
        self.queue: cl.CommandQueue | None = None
        self.targets: dict[int, Any] = {}
        self.benches: dict[int, tuple[Any, Any]] = {}  # target key -> (size key, bench)


def _find_device(info: DeviceInfo) -> cl.Device:
    """The device of `info`: at its platform/device index if the fingerprint agrees there,
    else the first device with its fingerprint (the loader's order may differ)."""
    found = None
    for p, d, dev in platform_devices():
        if describe(dev).fingerprint != info.fingerprint:
            continue
        if (p, d) == (info.platform_index, info.device_index):
            return dev
        found = found or dev
    if found is None:
        raise LookupError(f"device {info.name} ({info.fingerprint}) is not in this process")
    return found


def _init(st: _State, info: DeviceInfo) -> int:
    st.info, st.dev = info, _find_device(info)
    st.ctx = cl.Context([st.dev])
    st.queue = cl.CommandQueue(st.ctx, st.dev)
    return os.getpid()


def _open(st: _State, key: int, family: str, variant: str, options: dict,
          added_strategies: tuple = ()) -> None:
    # the strategies the asking process added (strategies.register), exactly: a worker lives
    # longer than a registration there
    for s in strategies.added():
        strategies.unregister(s.name)
    for s in added_strategies:
        strategies.register(s)
    # the space is made when first used (`_space`, or a checked evaluate): vetting one
    # config needs none, and some spaces cost probe builds of the heaviest kernel
    target = make_target(family, st.ctx, st.dev, st.info, variant, space=ON_USE, **options)
    st.targets[key] = target
    st.benches.pop(key, None)


def _space(st: _State, key: int) -> Any:  # noqa: ANN401 - the family's space
    """The target's space, made here: its probe builds are driver work too."""
    return st.targets[key].real_space()


def _close(st: _State, key: int) -> None:
    st.targets.pop(key, None)
    st.benches.pop(key, None)


def _bench(st: _State, key: int, size_key: Any) -> Any:  # noqa: ANN401
    hit = st.benches.get(key)
    if hit is not None and hit[0] == size_key:
        return hit[1]
    st.benches.pop(key, None)  # one input per target at a time: they can be large
    target = st.targets[key]
    bench = target.bench(size_key)
    st.benches[key] = (size_key, bench)
    return bench


def _prepare(st: _State, key: int, size_key: Any) -> tuple[int, int]:
    b = _bench(st, key, size_key)
    return b.n, b.nbytes


def _launched_once(bench: Any, launcher: Any, **_: Any) -> Timing:  # noqa: ANN401
    """A vetting run's stand-in for timing: one more launch, waited for (not a measurement:
    a vet keeps only its verdict)."""
    t0 = time.perf_counter()
    evs = bench.run(launcher)
    evs[-1].wait()
    s = time.perf_counter() - t0
    return Timing(s, 1, (s,))


def _evaluate(st: _State, key: int, size_key: Any, mapping: dict, check: bool,  # noqa: ANN401
              max_rel_error: float | None, vet: bool) -> Any:
    target = st.targets[key]
    bench = _bench(st, key, size_key)
    cfg = target.config_of(mapping)
    action = faults.matching({"family": target.family, "variant": target.variant,
                              **cfg.to_dict()})
    if action and action != "wrong":
        print(f"cltune test fault: {action} on {cfg.short()}", file=sys.stderr, flush=True)
        faults.fire(action)
    if vet:
        bench.time = lambda la, **kw: _launched_once(bench, la)
    try:
        out = target.evaluate(cfg, bench, check=check, max_rel_error=max_rel_error)
    finally:
        bench.__dict__.pop("time", None)
    if action == "wrong" and out.ok:
        out = replace(out, step="validate", timing=None,
                      reason="wrong answer (injected by CLTUNE_TEST_FAULT)")
    return out


def _side_by_side(st: _State, key: int, size_key: Any, mappings: list[dict],  # noqa: ANN401
                  rounds: int) -> tuple[list[list[float]], list[list[float]]]:
    """Device seconds and seconds per call of each config, `rounds` interleaved rounds."""
    target = st.targets[key]
    bench = _bench(st, key, size_key)
    cfgs = [target.config_of(m) for m in mappings]
    dev: list[list[float]] = [[] for _ in cfgs]
    e2e: list[list[float]] = [[] for _ in cfgs]
    for _ in range(rounds):
        for i, c in enumerate(cfgs):
            la = target.launcher(c)
            dev[i].append(bench.time(la, budget_s=0.05).median_s)
            e2e[i].append(bench.per_call(la))
    return dev, e2e


def _probe(st: _State, name: str, src: str = "") -> str:
    from cltune.device.health_probes import (
        PROBES,  # the probes' kernels are only needed in a worker
    )

    action = faults.matching({"probe": name})
    if action and action != "wrong":
        print(f"cltune test fault: {action} on probe {name}", file=sys.stderr, flush=True)
        faults.fire(action)
    why = PROBES[name](st.ctx, st.queue, st.dev, st.info, src)
    if action == "wrong" and not why:
        return f"{name}: wrong answer (injected by CLTUNE_TEST_FAULT)"
    return why


def _check(st: _State, name: str, key: str, check: Any, args: tuple) -> str:  # noqa: ANN401
    """`check(ctx, queue, dev, info, *args)`: '' when the kernel built, ran and answered right
    here, else why not (vetting.checked; the function arrives by reference: its module is
    imported here)."""
    action = faults.matching({"check": name, "key": key})
    if action and action != "wrong":
        print(f"cltune test fault: {action} on check {name}", file=sys.stderr, flush=True)
        faults.fire(action)
    why = check(st.ctx, st.queue, st.dev, st.info, *args)
    if action == "wrong" and not why:
        return f"{name}: wrong answer (injected by CLTUNE_TEST_FAULT)"
    return why


HANDLERS = {"init": _init, "open": _open, "space": _space, "close": _close,
            "prepare": _prepare,
            "evaluate": _evaluate, "side_by_side": _side_by_side, "probe": _probe,
            "check": _check, "ping": lambda st: os.getpid()}


def _watch_parent() -> None:
    """Exit when the process that started this one is gone (a hung driver call included)."""
    parent = os.getppid()
    while True:
        time.sleep(0.5)
        if os.getppid() != parent:
            os._exit(3)


def _one_line(e: BaseException) -> str:
    text = " ".join(str(e).split())
    return f"{type(e).__name__}: {text}"[:600]


def main(argv: list[str]) -> int:
    rfd, wfd = int(argv[1]), int(argv[2])
    # this process is where untrusted kernels run: what it builds is never vetted again here
    os.environ["CLTUNE_TRUST_DRIVER"] = "1"
    threading.Thread(target=_watch_parent, daemon=True).start()
    faults.break_launches()
    st = _State()
    while True:
        frame = codec.receive(rfd)
        if frame is None:
            return 0
        try:
            op, args = codec.loads(frame, st.ctx, st.queue)
            reply = ("ok", HANDLERS[op](st, *args))
        except Exception as e:  # noqa: BLE001 - every error goes back as the answer
            if os.environ.get("CLTUNE_DEBUG"):
                traceback.print_exc()
            reply = ("error", (_one_line(e), isinstance(e, ValueError)))
        try:
            payload = codec.dumps(reply)
        except Exception as e:  # noqa: BLE001 - an answer that does not pickle
            payload = codec.dumps(("error", (f"unpicklable answer: {_one_line(e)}", False)))
        codec.send(wfd, payload)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
