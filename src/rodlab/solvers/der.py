"""``der``: Discrete Elastic Rods (Bergou et al. 2008) on a whole world.

Symplectic Euler + fast projection + quasistatic twist per rod (Bergou 2008, Alg. 1), through
the compiled step of :mod:`rodlab.der.kernels`. Every rod's arrays are views into the world's
flat :class:`rodlab.world.State`, so stepping writes the state directly with no copies.
"""
from __future__ import annotations

import math
import time

import numpy as np

from ..der.static import solve_static as der_solve_static
from ..der.stepper import DEROptions, DERStepper, SimulationError as DERFailure, suggested_time_step
from ..model import Loads
from ..state import RodState
from ..world import State
from .base import SimulationError, Simulator, StaticReport, StepReport

FEATURES = frozenset({"closed rods", "prescribed clamp motion", "swivel clamps", "sliding clamps", "pinned vertices",
                      "anisotropic bending", "rest curvature overrides", "point forces", "rods given by stiffness"})


class DERSimulator(Simulator):
    """Explicit DER over every rod of a world (module docstring).

    Options: ``dt`` (default: the smallest rod's :func:`rodlab.der.stepper.suggested_time_step`),
    ``inextensible`` (fast projection, default true; false: stretching energy), ``damping_scheme``
    (``implicit`` or ``exponential``, docs/damping.md), ``energy_check`` (refuse an unstable call,
    default true), ``twist_solver`` (``auto``, ``newton``, ``uniform``), ``projection_tol``.
    """

    method = "der"
    supports = FEATURES
    options = {"inextensible": True, "damping_scheme": "implicit", "energy_check": True, "twist_solver": "auto",
               "projection_tol": 1e-12}

    def _setup(self, dt):
        w = self.world
        self._dt = float(dt) if dt is not None else min(suggested_time_step(rod) for rod in w.rods)
        o = self.opts
        opts = DEROptions(dt=self._dt, inextensible=bool(o["inextensible"]), damping_scheme=o["damping_scheme"],
                          energy_check=bool(o["energy_check"]), twist_solver=o["twist_solver"],
                          projection_tol=float(o["projection_tol"]),
                          projection_fail=max(1e-6, float(o["projection_tol"])))
        self.steppers = [DERStepper(rod, Loads(w.loads.gravity, w.loads.damping, w.point_forces_of(r)), opts)
                         for r, rod in enumerate(w.rods)]

    # ---- state views -------------------------------------------------------------------------
    def _rod_state(self, state: State, r: int) -> RodState:
        return RodState(state.t, state.rod_x(r), state.rod_v(r), state.rod_theta(r), state.rod_ref_d1(r), state.rod_ref_twist(r))

    def initial_state(self) -> State:
        state = State.zeros_for(self.world)
        for r, st in enumerate(self.steppers):
            rs = st.initial_state()
            view = self._rod_state(state, r)
            for name in ("x", "v", "theta", "ref_d1", "ref_twist"):
                getattr(view, name)[...] = getattr(rs, name)
        state.method = self.method
        return state

    def advance(self, state: State, nsteps: int = 1) -> StepReport:
        self._check_steps(state, nsteps)
        self._check_layout(state)
        snapshot = state.copy() if len(self.steppers) > 1 else None
        t0 = time.perf_counter()
        for r, st in enumerate(self.steppers):
            view = self._rod_state(state, r)
            try:
                st.advance(view, nsteps)
            except DERFailure as exc:
                report = StepReport(0, False, str(exc), wall_s=time.perf_counter() - t0)
                self._fail(state, snapshot, report, f"rod {r}: {exc}")
        state.t += nsteps * self._dt
        return StepReport(nsteps, wall_s=time.perf_counter() - t0)

    def solve_static(self, state: State) -> StaticReport:
        self._check_layout(state)
        t0 = time.perf_counter()
        iters, worst, ok, msgs = 0, 0.0, True, []
        for r, st in enumerate(self.steppers):
            res = der_solve_static(st, self._rod_state(state, r), load_stages=4)
            view = self._rod_state(state, r)
            for name in ("x", "theta", "ref_d1", "ref_twist"):
                getattr(view, name)[...] = getattr(res.state, name)
            view.v[...] = 0.0
            iters += res.iterations
            worst = max(worst, res.residual)
            if not res.success:
                ok = False
                msgs.append(f"rod {r}: {res.message}")
        return StaticReport(ok, "converged" if ok else "; ".join(msgs), iters, worst, time.perf_counter() - t0)

    def elastic_energy(self, state: State) -> float:
        return float(sum(st.elastic_energy(self._rod_state(state, r)) for r, st in enumerate(self.steppers)))
