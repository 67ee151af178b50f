"""A library is quiet in the application's process: cltune's tuning calls (`knl.tune`,
first-use tuning, the statistics') print no Optuna line to stderr; the lines go to the
`cltune.tuning.optuna` logger at DEBUG, where the application's logging decides. Optuna's own
studies of the application and other threads print as before."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import textwrap
import threading

import optuna
import pytest

from cltune.tuning.quiet import LOG, quiet_studies

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


class _Catch(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def _optuna_handler_lines() -> tuple[_Catch, logging.Handler]:
    """A handler on Optuna's root logger, where its default stderr handler sits."""
    h = _Catch()
    logging.getLogger("optuna").addHandler(h)
    return h, h


def test_only_this_threads_studies_are_quiet_and_go_to_cltunes_logger():
    optuna.logging.set_verbosity(optuna.logging.INFO)
    theirs, h = _optuna_handler_lines()
    ours = _Catch()
    LOG.addHandler(ours)
    old = LOG.level
    LOG.setLevel(logging.DEBUG)
    try:
        with quiet_studies():
            optuna.create_study().optimize(lambda t: t.suggest_float("x", 0, 1), n_trials=3)
            other = threading.Thread(target=lambda: optuna.create_study().optimize(
                lambda t: t.suggest_float("x", 0, 1), n_trials=2))
            other.start()
            other.join()
        assert sum("finished with value" in s for s in ours.lines) == 3
        assert sum("finished with value" in s for s in theirs.lines) == 2  # the other thread
        optuna.create_study().optimize(lambda t: t.suggest_float("x", 0, 1), n_trials=1)
        assert sum("finished with value" in s for s in theirs.lines) == 3  # after the block
    finally:
        logging.getLogger("optuna").removeHandler(h)
        LOG.removeHandler(ours)
        LOG.setLevel(old)
        optuna.logging.set_verbosity(optuna.logging.WARNING)


@pytest.mark.slow
@pytest.mark.multiprocess
def test_knl_tune_prints_nothing_to_the_applications_stderr(device, tmp_path):
    """An application that tunes a ReductionKernel (Optuna imported and at its default INFO
    verbosity) sees no trial lines on stderr; with cltune's logger at DEBUG it gets them there."""
    info, _ = device
    script = textwrap.dedent(f"""
        import logging, sys, warnings
        import numpy as np, pyopencl as cl, pyopencl.array as cla
        import optuna  # the application's own import: Optuna's handler at INFO
        import cltune
        from cltune.device.select import select
        warnings.simplefilter("ignore")
        if sys.argv[1] == "debug":
            h = logging.StreamHandler(sys.stdout)
            logging.getLogger("cltune").addHandler(h)
            logging.getLogger("cltune").setLevel(logging.DEBUG)
        _, dev = select({str(info.index)!r})
        ctx = cl.Context([dev]); q = cl.CommandQueue(ctx)
        knl = cltune.ReductionKernel(ctx, np.float32, "0", "a+b", "x[i]",
                                     "__global const float *x", db=sys.argv[2])
        x = cla.to_device(q, np.ones(5000, np.float32))
        knl.tune(x, trials=4, timeout=60, storage=sys.argv[3])
        print("sum", knl(x).get())
    """)
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    for mode in ("quiet", "debug"):
        r = subprocess.run([sys.executable, "-c", script, mode,
                            f"sqlite:///{tmp_path / (mode + '.db')}",
                            f"sqlite:///{tmp_path / (mode + '-studies.db')}"],
                           capture_output=True, text=True, timeout=300, env=env)
        assert r.returncode == 0, r.stderr[-2000:]
        assert "sum 5000.0" in r.stdout
        assert "Trial" not in r.stderr and "A new study" not in r.stderr, r.stderr[-2000:]
        assert ("finished with value" in r.stdout) == (mode == "debug"), r.stdout[-2000:]


def test_cltunes_choice_of_optunas_experimental_options_warns_nothing(tmp_path):
    """TPE's `group` and the storage's heartbeat are experimental in Optuna, and cltune's
    choice: an application tuning through cltune hears no ExperimentalWarning of them (the
    README's "the library prints nothing"); warnings of its own Optuna calls stay its own."""
    import warnings

    import optuna

    from cltune.tuning.tuner import make_sampler, open_storage

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        make_sampler("tpe", 0, None)
        open_storage(f"sqlite:///{tmp_path / 'studies.db'}")
    assert not [w for w in seen if issubclass(w.category, optuna.exceptions.ExperimentalWarning)]
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        optuna.samplers.TPESampler(group=True, multivariate=True)
    assert any(issubclass(w.category, optuna.exceptions.ExperimentalWarning) for w in seen)
