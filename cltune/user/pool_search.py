"""Bayesian optimisation over an enumerated space (tune_kernel's `bayes_opt` and the other
model-based strategy names).

A user's space is a list of configs (`cltune.user.space.Space`), so the search can score every
config it has not run yet instead of asking a sampler for points that may not exist. Each
config is a point in [0, 1]^d: a numeric parameter by its position among its sorted values (so
32, 64, 128 are evenly spaced, as a tuner's powers of two should be), a parameter of other
values by a one-hot code (two different values are 1 apart). The search:

1. runs a space-filling start: the first point drawn by the seed (or given), then each next
   the config farthest from those chosen (`start_points`: half the budget, 2 to 8) — the
   corners first, where tuning optima often are (the largest group, the widest vector);
2. then, one evaluation at a time, fits a Gaussian process (Matern 5/2, a length scale per
   parameter and the noise picked by the marginal likelihood on a grid) to the log times seen
   so far and runs the config of the largest expected improvement; a config that failed
   counts as slower than the slowest that ran, so the model steers away from where configs
   fail (a separate model of the chance to run, which weights the expected improvement,
   scored the same on the tables below and worse near a boundary of failures).

Scored on Kernel Tuner's examples' exhaustive tables (scripts/search_sim.py, 20 seeds, budgets
of 10-30 % of the space; docs/own-kernels.md, "Searches"): at or above Optuna's TPE (cltune's
search before) in the median on vector_add, convolution, matmul and stencil, below it on the
reduction example (a monotone, separable landscape that TPE's per-parameter densities fit).
Spaces of more than MAX_POOL configs are scored on a random MAX_POOL of them per step (drawn
again each step) and the NEAREST configs to the best one so far.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Mapping, Sequence

import numpy as np

#: configs scored per step at most (a larger space: a fresh random subset each step, and the
#: NEAREST configs to the best one so far)
MAX_POOL = 20_000
NEAREST = 1000
#: candidate length scales (in the unit cube's units) and noise variances (of standardised
#: log times) the marginal likelihood picks from
LENGTHS = (0.1, 0.2, 0.35, 0.6, 1.0, 1.7)
NOISES = (1e-3, 1e-2, 0.1)
#: a length scale long enough that a dimension is flat (the per-dimension search may pick it)
IGNORE = 10.0
#: expected improvement's margin (standardised units)
XI = 0.01


def start_points(budget: int) -> int:
    """How many space-filling points come before the model: half the budget, 2 to 8."""
    return max(1, min(budget, max(2, min(8, round(budget / 2)))))


def encode(configs: Sequence[Mapping[str, object]], names: Sequence[str],
           values: Mapping[str, Sequence[object]]) -> np.ndarray:
    """The configs as rows of points in [0, 1]^d (see the module's docstring)."""
    cols: list[np.ndarray] = []
    for n in names:
        vals = list(values[n])
        numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in vals)
        if numeric:
            levels = sorted(set(vals))
            if len(levels) < 2:
                continue
            pos = {v: i / (len(levels) - 1) for i, v in enumerate(levels)}
            cols.append(np.array([pos[c[n]] for c in configs], float))
        else:
            levels = list(dict.fromkeys(map(repr, vals)))
            if len(levels) < 2:
                continue
            idx = {v: i for i, v in enumerate(levels)}
            hot = np.zeros((len(configs), len(levels)))
            hot[np.arange(len(configs)), [idx[repr(c[n])] for c in configs]] = math.sqrt(0.5)
            cols.extend(hot.T)
    if not cols:
        return np.zeros((len(configs), 1))
    return np.stack(cols, axis=1)


def _matern52(d: np.ndarray, length: float) -> np.ndarray:
    r = math.sqrt(5.0) * d / length
    return (1.0 + r + r * r / 3.0) * np.exp(-r)


def _dist(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    d2 = (a * a).sum(1)[:, None] + (b * b).sum(1)[None, :] - 2.0 * a @ b.T
    return np.sqrt(np.maximum(d2, 0.0))


def _erf(x: np.ndarray) -> np.ndarray:
    """Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7): numpy has no erf."""
    s = np.sign(x)
    x = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * x)
    y = 1.0 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t
               + 0.254829592) * t * np.exp(-x * x)
    return s * y


class GaussianProcess:
    """A zero-mean GP on standardised targets with a length scale per dimension and a noise,
    picked by the log marginal likelihood: one scale for all from LENGTHS x NOISES first, then
    each dimension's own from LENGTHS + (IGNORE: the dimension does not matter) in turn, twice
    (coordinate ascent on a grid: no optimiser, a few dozen small Cholesky factorisations)."""

    def __init__(self, x: np.ndarray, y: np.ndarray) -> None:
        self.x = x
        self.mu, self.sd = float(y.mean()), float(y.std()) or 1.0
        z = (y - self.mu) / self.sd
        self.z = z
        dims = x.shape[1]
        best = None
        for length in LENGTHS:
            for noise in NOISES:
                got = self._fit(np.full(dims, length), noise)
                if got is not None and (best is None or got[0] > best[0]):
                    best = (*got, np.full(dims, length), noise)
        if best is None:  # pragma: no cover - the largest noise always factors
            raise np.linalg.LinAlgError("no length scale factors")
        if len(z) >= 3 and dims > 1:
            for _ in range(2):
                for d in range(dims):
                    for length in (*LENGTHS, IGNORE):
                        ls = best[3].copy()
                        ls[d] = length
                        got = self._fit(ls, best[4])
                        if got is not None and got[0] > best[0] + 1e-9:
                            best = (*got, ls, best[4])
        _, self.chol, self.alpha, self.lengths, self.noise = best

    def _fit(self, lengths: np.ndarray, noise: float) -> tuple | None:
        k0 = _matern52(_dist(self.x / lengths, self.x / lengths), 1.0)
        try:
            chol = np.linalg.cholesky(k0 + noise * np.eye(len(self.z)))
        except np.linalg.LinAlgError:
            return None
        alpha = np.linalg.solve(chol.T, np.linalg.solve(chol, self.z))
        return -0.5 * float(self.z @ alpha) - float(np.log(np.diag(chol)).sum()), chol, alpha

    def predict(self, xs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Mean and standard deviation (standardised units) at the rows of xs."""
        ks = _matern52(_dist(xs / self.lengths, self.x / self.lengths), 1.0)
        mean = ks @ self.alpha
        v = np.linalg.solve(self.chol, ks.T)
        var = np.maximum(1.0 - (v * v).sum(0), 1e-12)
        return mean, np.sqrt(var)

    def standard(self, y: float) -> float:
        return (y - self.mu) / self.sd


def expected_improvement(mean: np.ndarray, sd: np.ndarray, best: float) -> np.ndarray:
    """EI of a minimisation below `best` (all standardised)."""
    imp = best - mean - XI
    z = imp / sd
    cdf = 0.5 * (1.0 + _erf(z / math.sqrt(2.0)))
    pdf = np.exp(-0.5 * z * z) / math.sqrt(2.0 * math.pi)
    return imp * cdf + sd * pdf


def modelled(c: np.ndarray) -> np.ndarray:
    """The costs as the model sees them (nan stays nan): their logarithm where all are
    positive (times), -log(-c) where all are negative (an objective that is better higher,
    negated), else as they are."""
    ok = ~np.isnan(c)
    if ok.any() and (c[ok] > 0).all():
        return np.log(c)
    if ok.any() and (c[ok] < 0).all():
        return -np.log(-c)
    return c


def search(configs: Sequence[Mapping[str, object]], names: Sequence[str],
           values: Mapping[str, Sequence[object]], budget: int, seed: int | None,
           cost: Callable[[Mapping[str, object]], float], worst: float,
           first: int | None = None, spent: Callable[[], bool] = lambda: False) -> None:
    """Evaluate up to `budget` distinct configs (`cost(config)` -> the value to minimise,
    `worst` or more for a config that failed), the index `first` first where given; stops
    early when `spent()` says so."""
    n = len(configs)
    budget = min(budget, n)
    if budget <= 0:
        return
    rng = random.Random(seed)
    x = encode(configs, names, values)
    done: dict[int, float] = {}  # config index -> cost (nan: failed)

    def run(i: int) -> None:
        c = float(cost(configs[i]))
        done[i] = c if math.isfinite(c) and abs(c) < worst else math.nan

    start = start_points(budget)
    i0 = first if first is not None and 0 <= first < n else rng.randrange(n)
    run(i0)
    near = _dist(x, x[[i0]])[:, 0]  # each config's distance to the nearest chosen one
    while len(done) < start and len(done) < budget and not spent():
        near[list(done)] = -1.0
        far = float(near.max())
        ties = np.flatnonzero(near >= far - 1e-12)
        i = int(ties[rng.randrange(len(ties))])
        run(i)
        near = np.minimum(near, _dist(x, x[[i]])[:, 0])
    np_rng = np.random.default_rng(rng.randrange(2**32))
    while len(done) < budget and not spent():
        idx = np.fromiter(done, int)
        y = modelled(np.array([done[i] for i in idx]))
        ok = ~np.isnan(y)
        todo = np.setdiff1d(np.arange(n), idx)
        if not ok.any():  # nothing ran yet: a random config
            free = todo
            run(int(free[rng.randrange(len(free))]))
            continue
        if len(todo) > MAX_POOL:  # a random part of the rest, and the best one's neighbours
            d = _dist(x[todo], x[[int(idx[ok][int(np.argmin(y[ok]))])]])[:, 0]
            close = todo[np.argpartition(d, NEAREST)[:NEAREST]]
            todo = np.union1d(np_rng.choice(todo, MAX_POOL, replace=False), close)
        # a config that failed counts as slower than the slowest that ran (by their spread):
        # the model learns to keep away from where configs fail
        yf = np.where(ok, y, y[ok].max() + max(1.0, float(np.ptp(y[ok]))))
        gp = GaussianProcess(x[idx], yf)
        mean, sd = gp.predict(x[todo])
        ei = expected_improvement(mean, sd, gp.standard(float(yf.min())))
        top = float(ei.max())
        ties = np.flatnonzero(ei >= top - 1e-12 * max(1.0, abs(top)))
        run(int(todo[ties[rng.randrange(len(ties))]]))
