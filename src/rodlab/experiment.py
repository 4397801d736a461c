"""The one recording loop: advance a simulator in chunks, keep frames, time the stepping.

Every scene, scene file and benchmark that steps a :class:`rodlab.solvers.Simulator` goes through
:func:`record`, so ``us_per_step``, ``newton_iters`` and frames mean the same everywhere
(definitions in :mod:`rodlab.metrics`).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from . import metrics


@dataclass
class Recording:
    """Frames ``t`` (F,) [s] and ``x`` (F, N, 3) [m] (the initial state is frame 0), steps taken,
    stepping wall time ``wall_s`` [s] (compilation excluded), nonlinear and linear iterations
    summed, per-frame ``probes`` (name -> array), and the contact bookkeeping of the steps
    (:class:`rodlab.solvers.base.StepReport`)."""

    t: np.ndarray
    x: np.ndarray
    steps: int
    wall_s: float
    newton_iters: int
    linear_iters: int
    probes: dict = field(default_factory=dict)
    contact_min_gap: float = math.inf
    contacts_sum: int = 0
    contacts_max: int = 0

    def contact_summary(self) -> dict:
        """``min_gap``, ``mean_contacts``, ``max_contacts`` of the run (rodlab.metrics)."""
        return metrics.contact_summary(self.contact_min_gap, self.contacts_sum, self.contacts_max, self.steps)

    def summary(self, n_vertices: int) -> dict:
        """The shared timing metrics of a run (rodlab.metrics)."""
        return {
            "steps": int(self.steps),
            "us_per_step": metrics.us_per_step(self.wall_s, self.steps),
            "us_per_vertex_step": metrics.us_per_vertex_step(self.wall_s, self.steps, n_vertices),
            "newton_iters": metrics.newton_iters_per_step(self.newton_iters, self.steps),
        }


def warm_up(sim, state) -> None:
    """Compile the simulator's kernels outside any timing: one step on a copy of ``state``
    (simulators keep no history outside the state, so this changes nothing)."""
    sim.advance(state.copy(), 1)


def record(sim, state, nsteps: int, *, frames: int = 100, progress=None, probes: dict | None = None,
           warmup: bool = True, stop=None) -> Recording:
    """Advance ``state`` by ``nsteps`` in about ``frames`` chunks (one ``advance`` call each),
    keeping a frame after each. ``probes``: name -> ``fn(state)`` recorded per frame;
    ``stop(state)``: end early when true; ``progress.update(done, total)`` is called per chunk."""
    if warmup and nsteps > 0:
        warm_up(sim, state)
    probes = probes or {}
    ts, xs = [state.t], [state.vertex_x.copy()]
    values = {name: [fn(state)] for name, fn in probes.items()}
    per = max(1, nsteps // max(int(frames), 1))
    done, wall, newton, linear = 0, 0.0, 0, 0
    gap, csum, cmax = math.inf, 0, 0
    while done < nsteps:
        k = min(per, nsteps - done)
        t0 = time.perf_counter()
        rep = sim.advance(state, k)
        wall += time.perf_counter() - t0
        done += rep.steps
        newton += rep.newton_iters
        linear += rep.linear_iters
        gap, csum, cmax = min(gap, rep.contact_min_gap), csum + rep.contacts_sum, max(cmax, rep.contacts_max)
        ts.append(state.t)
        xs.append(state.vertex_x.copy())
        for name, fn in probes.items():
            values[name].append(fn(state))
        if progress is not None:
            progress.update(done, nsteps)
        if stop is not None and stop(state):
            break
    return Recording(np.array(ts), np.array(xs), done, wall, newton, linear, {k: np.array(v) for k, v in values.items()},
                     gap, csum, cmax)
