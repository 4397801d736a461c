"""``der``: Discrete Elastic Rods (Bergou et al. 2008) on a whole world, every rod in one call.

Symplectic Euler + fast projection + quasistatic twist per rod (Bergou 2008, Alg. 1). Everything
a step needs is derived once at construction (one :class:`rodlab.der.stepper.DERStepper` per
rod supplies the rest quantities, then they are packed flat: :mod:`rodlab.der.batch`), and
``advance(state, n)`` makes one compiled call that steps all rods, in parallel over rods,
writing the flat :class:`rodlab.world.State` in place. Python runs per step only for rods driven
by Python callables (moving clamps ``motion(t)``, time-dependent point forces): their inputs for
the call's steps are evaluated before the call.

Wind (``world.loads.wind``, force per unit length ``drag (u(x, t) - v)``, lumped with each
vertex's Voronoi length ``l_i``): ``u`` is sampled at the vertices at the start of each
``advance`` call and held over the call (so a wind that varies in space or time is resolved at
the call length, not the step); ``-drag l_i v_i`` is an extra damping rate ``drag l_i / m_i``
per vertex (``drag / (rho A)`` where the linear density is uniform), stepped by the chosen
``damping_scheme`` together with the world's damping, and the ``u`` part is scaled so that the
discrete velocity relaxes to the continuous steady state: for the implicit scheme
``v_k - u = (v_0 - u) (1 + h drag / (rho A))^-k`` for a free rod in a uniform wind.

Rigid bodies (Bergou 2008, Sec. 8): a world with bodies must have exactly one rod, every body
welded to one of its end edges; it steps through :class:`rodlab.coupling.CoupledDERStepper` with
the bodies in ``State.body_x/q/v/w`` (quaternion w, x, y, z body -> world; angular velocity in
body coordinates). The world's damping acts on the bodies too.
"""
from __future__ import annotations

import time

import numpy as np

from ..der import batch as B
from ..der.static import solve_static as der_solve_static
from ..der.stepper import DEROptions, DERStepper, suggested_time_step
from ..model import Loads, ModelError
from ..state import RodState
from ..world import State
from .base import Simulator, StaticReport, StepReport, UnsupportedFeature

FEATURES = frozenset({"closed rods", "prescribed clamp motion", "swivel clamps", "sliding clamps", "pinned vertices",
                      "anisotropic bending", "rest curvature overrides", "point forces", "rods given by stiffness",
                      "wind", "rigid bodies"})

_WHY = {B.ROD_NONFINITE: "the state became non-finite", B.ROD_PROJECTION: "fast projection did not converge",
        B.ROD_DEGENERATE: "the geometry degenerated (singular twist Hessian)"}


class DERSimulator(Simulator):
    """Explicit DER over every rod of a world (module docstring).

    Options: ``dt`` (default: the smallest rod's :func:`rodlab.der.stepper.suggested_time_step`),
    ``inextensible`` (fast projection, default true; false: stretching energy), ``damping_scheme``
    (``implicit`` or ``exponential``, docs/damping.md), ``energy_check`` (refuse a call in which an
    undriven rod gains more than half its energy scale, default true; rods with a moving clamp, a
    time-dependent force or wind are driven), ``twist_solver`` (``auto``, ``newton``,
    ``uniform``), ``projection_tol``, ``body_projection`` (rigid bodies only: ``fast``, the
    paper's fast projection, which dissipates energy to first order in dt, or ``shake``, which
    keeps it; :class:`rodlab.coupling.CoupledDERStepper`).
    """

    method = "der"
    supports = FEATURES
    options = {"inextensible": True, "damping_scheme": "implicit", "energy_check": True, "twist_solver": "auto",
               "projection_tol": 1e-12, "body_projection": "fast"}

    # ---- setup ---------------------------------------------------------------------------------
    def _setup(self, dt):
        w = self.world
        if self.opts["body_projection"] not in ("fast", "shake"):
            raise ModelError(f"body_projection must be one of fast, shake (got {self.opts['body_projection']!r})")
        self._dt = float(dt) if dt is not None else min(suggested_time_step(rod) for rod in w.rods)
        o = self.opts
        self._options = DEROptions(dt=self._dt, inextensible=bool(o["inextensible"]), damping_scheme=o["damping_scheme"],
                                   energy_check=bool(o["energy_check"]), twist_solver=o["twist_solver"],
                                   projection_tol=float(o["projection_tol"]),
                                   projection_fail=max(1e-6, float(o["projection_tol"])))
        self.steppers = [DERStepper(rod, Loads(w.loads.gravity, w.loads.damping, w.point_forces_of(r)), self._options)
                         for r, rod in enumerate(w.rods)]
        # each rod's initial state fixes its clamps' reference pose (motion acts on it)
        self._rod_initial = [st.initial_state() for st in self.steppers]
        self._coupled = self._setup_bodies() if w.bodies else None
        if self._coupled is None:
            self._setup_batch()

    def _setup_bodies(self):
        from ..coupling import CoupledDERStepper, RigidBody, Weld as CWeld

        w = self.world
        if w.n_rods > 1:
            raise UnsupportedFeature("method der does not support rigid bodies welded to more than one rod "
                                     f"(this world has {w.n_rods} rods and {w.n_bodies} bodies)")
        welded = sorted(x.body for x in w.welds)
        if welded != list(range(w.n_bodies)):
            raise UnsupportedFeature("method der needs every rigid body welded to exactly one rod end "
                                     f"(bodies welded: {welded} of {w.n_bodies})")
        other = sorted(w.features() & {"point forces", "wind", "closed rods", "prescribed clamp motion", "swivel clamps",
                                       "sliding clamps"})
        if other:
            raise UnsupportedFeature(f"method der does not support {', '.join(other)} together with rigid bodies")
        if not self._options.inextensible:
            raise UnsupportedFeature("method der models rigid bodies on inextensible rods only (inextensible=True)")
        rate = float(B.kernel_rates(w.loads.damping, self._dt, self._options.damping_scheme))
        loads = Loads(w.loads.gravity, rate, ())
        bodies = [RigidBody(b.mass, b.inertia) for b in w.bodies]
        welds = [CWeld(x.body, x.edge) for x in sorted(w.welds, key=lambda x: x.body)]
        coupled = CoupledDERStepper(w.rods[0], bodies, welds, loads, self._options, body_damping=rate,
                                    projection=self.opts["body_projection"])
        self._coupled_initial = coupled.initial_state(centers=[b.position for b in w.bodies],
                                                      orientations=[b.orientation for b in w.bodies])
        return coupled

    def _setup_batch(self) -> None:
        w, opt, h = self.world, self._options, self._dt
        R = w.n_rods
        g = np.asarray(w.loads.gravity, dtype=float)
        scheme = opt.damping_scheme
        wind = w.loads.wind
        flags = np.zeros((R, B.N_FLAGS), dtype=np.int64)
        counts = np.zeros((R, 4), dtype=np.int64)  # prescribed, clamped, sliders, timed forces
        parts = {k: [] for k in ("presc", "cedge", "cm1", "sv", "sa", "sw", "se", "ss", "tv", "tol", "load", "force")}
        self._timed = []  # (rod, force function) in flat order
        self._moving = []
        for r, st in enumerate(self.steppers):
            rod = st.rod
            moving = any(c.motion is not None for c in st.clamps.values())
            timed = [pf for pf in st.loads.point_forces if callable(pf.force)]
            flags[r] = (rod.closed, st.uniform_twist, st.twist_free,
                        opt.energy_check and not moving and not timed and wind is None, moving, bool(timed))
            counts[r] = (st.prescribed_vertices.size, st.clamp_edges.size, st._sliders[2].size, len(timed))
            parts["presc"].append(st.prescribed_vertices)
            parts["cedge"].append(st.clamp_edges)
            parts["cm1"].append(np.array([st._clamp_m1(int(j), 0.0) for j in st.clamp_edges]).reshape(-1, 3))
            for key, a in zip(("sv", "sa", "sw", "se", "ss"), st._sliders):
                parts[key].append(a)
            parts["tv"].append(np.array([pf.vertex for pf in timed], dtype=np.int64))
            self._timed += [(r, pf) for pf in timed]
            if moving:
                self._moving.append(r)
            parts["tol"].append(opt.twist_tol * max(1.0, float(st.twist_k.max() / st.lbar.min())))
            constant = [pf for pf in st.loads.point_forces if not callable(pf.force)]
            load = float(st.masses.sum()) * float(np.linalg.norm(g)) + sum(float(np.linalg.norm(pf.at(0.0))) for pf in constant)
            parts["load"].append(load * rod.total_length)
            force = np.zeros((rod.n_vertices, 3))
            for pf in constant:
                force[pf.vertex] += pf.at(0.0)
            parts["force"].append(force)
        starts = np.zeros((R + 1, 4), dtype=np.int64)
        np.cumsum(counts, axis=0, out=starts[1:])
        mass = np.concatenate([st.masses for st in self.steppers])
        rate = np.full(w.n_vertices, float(w.loads.damping))
        self._wind_gain = np.zeros(w.n_vertices)
        if wind is not None:
            voronoi = np.concatenate([_voronoi_lengths(rod) for rod in w.rods])
            c_w = B.wind_rates(mass, voronoi, wind.drag)
            total = rate + c_w
            # u-part of the force scaled so that v relaxes to c_w u / (c + c_w) under either scheme
            self._wind_gain = mass * B.kernel_rates(total, h, scheme) * c_w / total
            rate = total
        cat = np.concatenate
        model = B.BatchModel(
            w.rod_vertex_start, w.rod_edge_start, w.rod_joint_start, starts[:, 0], starts[:, 1], starts[:, 2], starts[:, 3],
            flags, np.array(parts["tol"]), np.array(parts["load"]),
            cat([st.inv_mass for st in self.steppers]), mass, B.velocity_factors(rate, h, scheme), cat(parts["force"]),
            cat([st.rest_lengths for st in self.steppers]), cat([st.bend_k for st in self.steppers]),
            cat([st.stretch_k for st in self.steppers]), cat([st.free_theta for st in self.steppers]),
            cat([st.lbar for st in self.steppers]), cat([st.omega_bar for st in self.steppers]).reshape(-1, 4),
            cat([st.twist_bar for st in self.steppers]), cat([st.twist_k for st in self.steppers]),
            cat(parts["presc"]).astype(np.int64), cat(parts["cedge"]).astype(np.int64), cat(parts["cm1"]).reshape(-1, 3),
            cat(parts["sv"]).reshape(-1, 2), cat(parts["sa"]).reshape(-1, 3), cat(parts["sw"]), cat(parts["se"]),
            cat(parts["ss"]), cat(parts["tv"]).astype(np.int64), g,
            np.array([opt.projection_tol, opt.projection_fail]),
            np.array([opt.projection_max_iter, opt.twist_max_iter, int(opt.inextensible)], dtype=np.int64))
        N, E, J, P = w.n_vertices, w.n_edges, w.n_joints, int(starts[-1, 0])
        work = B.BatchWork(np.zeros(6 * N), np.zeros((N, 3)), np.zeros((N, 3)), np.zeros((N, 3)), np.zeros((N, 3)),
                           np.zeros(18 * E), np.zeros(7 * E), np.zeros((E, 3)), np.zeros(E), np.zeros((E, 3)),
                           np.zeros((J, 3)), np.zeros((J, 4)), np.zeros(J), np.zeros((P, 3)), np.zeros((R, 6)),
                           np.zeros((R, 3)), np.zeros(R, dtype=np.int64))
        self._packed, self.model, self.work = B.pack(model, work)
        self._driver = B.advance_rods if R > 1 else B.advance_rods_serial
        self._no_input = np.zeros((1, 0, 3))
        self._driven = bool(self._moving or self._timed)

    # ---- states --------------------------------------------------------------------------------
    def _rod_state(self, state: State, r: int) -> RodState:
        return RodState(state.t, state.rod_x(r), state.rod_v(r), state.rod_theta(r), state.rod_ref_d1(r), state.rod_ref_twist(r))

    def _coupled_state(self, state: State):
        from ..coupling import CoupledState

        return CoupledState(self._rod_state(state, 0), state.body_x, state.body_q, state.body_v, state.body_w)

    def initial_state(self) -> State:
        state = State.zeros_for(self.world)
        initial = [self._coupled_initial.rod] if self._coupled is not None else self._rod_initial
        for r, rs in enumerate(initial):
            view = self._rod_state(state, r)
            for name in ("x", "v", "theta", "ref_d1", "ref_twist"):
                getattr(view, name)[...] = getattr(rs, name)
        if self._coupled is not None:
            c = self._coupled_initial
            state.body_x[...], state.body_q[...], state.body_v[...], state.body_w[...] = c.r, c.q, c.V, c.w
        state.method = self.method
        return state

    # ---- stepping ------------------------------------------------------------------------------
    def advance(self, state: State, nsteps: int = 1) -> StepReport:
        self._check_steps(state, nsteps)
        self._check_layout(state)
        if self._coupled is not None:
            return self._advance_coupled(state, nsteps)
        t0 = time.perf_counter()
        if nsteps:
            if self.world.loads.wind is not None:
                wind = self.world.loads.wind
                u = np.asarray(wind.velocity(state.vertex_x, state.t), dtype=float)
                np.multiply(self._wind_gain[:, None], u, out=self.work.vertex_wind_force)
            presc = m1 = timed = self._no_input
            if self._driven:
                presc, m1, timed = self._call_inputs(state, nsteps)
            p = self._packed
            code = self._driver(p.f, p.i, p.b, p.layout, nsteps, self._dt, state.vertex_x, state.vertex_v,
                                state.edge_theta, state.edge_ref_d1, state.joint_ref_twist, presc, m1, timed)
            if code:
                self._check_code(state, code, nsteps, t0)
            state.t += nsteps * self._dt
        return StepReport(nsteps, wall_s=time.perf_counter() - t0)

    def _call_inputs(self, state: State, nsteps: int):
        """Prescribed positions and directors of moving clamps and time-dependent forces for
        each step of the call, in the model's flat order."""
        m, h = self.model, self._dt
        times = state.t + h * np.arange(1, nsteps + 1)
        presc = self._no_input
        m1 = self._no_input
        if self._moving:
            presc = np.zeros((nsteps, m.presc_vertex.size, 3))
            m1 = np.zeros((nsteps, m.clamp_edge.size, 3))
            for r in self._moving:
                st = self.steppers[r]
                ps, pe = m.rod_presc_start[r], m.rod_presc_start[r + 1]
                cs, ce = m.rod_clamp_start[r], m.rod_clamp_start[r + 1]
                presc[:, ps:pe] = st._prescribed_positions(self._rod_state(state, r), times)
                m1[:, cs:ce] = np.array([[st._clamp_m1(int(j), t) for j in st.clamp_edges] for t in times]).reshape(nsteps, -1, 3)
        timed = self._no_input
        if self._timed:
            timed = np.empty((nsteps, len(self._timed), 3))
            for k, (_, pf) in enumerate(self._timed):
                for s in range(nsteps):
                    timed[s, k] = pf.at(state.t + h * s)
        return presc, m1, timed

    def _check_code(self, state: State, code: int, nsteps: int, t0: float) -> None:
        import logging

        w = self.work
        if code & B.STATUS_PROJECTION_WARN:
            r = int(np.argmax(w.rod_diag[:, 1]))
            logging.getLogger(__name__).warning("fast projection stopped at violation %.3g after %d iterations (rod %d)",
                                                w.rod_diag[r, 1], int(w.rod_diag[r, 0]), r)
        if not code & B.STATUS_FAILED:
            return
        failed = np.flatnonzero(w.rod_status)
        msgs = []
        for r in failed[:3]:
            status = int(w.rod_status[r])
            if status == B.ROD_ENERGY:
                msgs.append(f"rod {r}: DER step unstable: the undriven rod gained {w.rod_energy[r, 0]:.3g} J of mechanical "
                            f"energy in {nsteps} steps (energy scale {w.rod_energy[r, 1]:.3g} J; suggested_time_step "
                            f"{suggested_time_step(self.world.rods[r]):.3g} s; try a smaller dt)")
            else:
                msgs.append(f"rod {r}: DER step failed: {_WHY[status]} after {int(w.rod_diag[r, 4])} of {nsteps} steps "
                            f"(projection violation {w.rod_diag[r, 1]:.3g}; try a smaller dt)")
        if failed.size > 3:
            msgs.append(f"and {failed.size - 3} more rods")
        report = StepReport(0, False, "; ".join(msgs), wall_s=time.perf_counter() - t0)
        self._fail(state, None, report, "; ".join(msgs) + "; every rod is restored to the call's start")

    def _advance_coupled(self, state: State, nsteps: int) -> StepReport:
        from ..der.stepper import SimulationError as DERFailure

        t0 = time.perf_counter()
        cs = self._coupled_state(state)
        try:
            self._coupled.advance(cs, nsteps)
        except DERFailure as exc:  # the coupled stepper restored the state to the call's start
            report = StepReport(0, False, str(exc), wall_s=time.perf_counter() - t0)
            self._fail(state, None, report, str(exc))
        state.t += nsteps * self._dt
        return StepReport(nsteps, wall_s=time.perf_counter() - t0)

    # ---- statics and energies ------------------------------------------------------------------
    def solve_static(self, state: State) -> StaticReport:
        """Each rod's equilibrium under gravity and its point forces (``rodlab.der.static``); wind
        acts as the constant force ``drag l_i u(x_i, t)`` sampled at the state's positions."""
        self._check_layout(state)
        if self._coupled is not None:
            raise UnsupportedFeature("method der has no static solve for rigid bodies (step with damping instead)")
        t0 = time.perf_counter()
        wind = self.world.loads.wind
        u = None
        if wind is not None:
            u = np.asarray(wind.velocity(state.vertex_x, state.t), dtype=float)
        iters, worst, ok, msgs = 0, 0.0, True, []
        for r, st in enumerate(self.steppers):
            extra = None
            if u is not None:
                sl = self.world.rod_vertices(r)
                extra = wind.drag * _voronoi_lengths(st.rod)[:, None] * u[sl]
            res = der_solve_static(st, self._rod_state(state, r), load_stages=4, extra_forces=extra)
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

    def rod_elastic_energies(self, state: State) -> np.ndarray:
        """Elastic energy of each rod (R,) [J] (bending + twisting + stretching); state untouched."""
        self._check_layout(state)
        if self._coupled is not None:
            return np.array([self._coupled.der.elastic_energy(self._rod_state(state.copy(), 0))])
        out = np.empty(self.world.n_rods)
        p = self._packed
        B.rods_elastic_energy(p.f, p.i, p.b, p.layout, state.vertex_x, state.edge_theta, state.edge_ref_d1,
                              state.joint_ref_twist, out)
        return out

    def elastic_energy(self, state: State) -> float:
        return float(self.rod_elastic_energies(state).sum())

    def energies(self, state: State) -> dict:
        """``kinetic``, ``elastic``, ``gravity`` (potential, zero at the origin) and their
        ``total`` [J]. With rigid bodies the welded vertices' lumped masses belong to their bodies
        (as in the coupled dynamics) and the bodies' energies are included. Constant point forces'
        potential is not in ``total``."""
        from .. import metrics

        if self._coupled is not None:
            cs = self._coupled_state(state.copy())
            body = self._coupled.body_energies(cs)
            rk, re, rg = self._coupled.rod_energies(cs)
            kinetic, elastic, gravity = rk + float(body[:, :2].sum()), re, rg + float(body[:, 2].sum())
        else:
            kinetic = metrics.kinetic_energy(self.world, state)
            elastic = self.elastic_energy(state)
            gravity = metrics.gravity_potential(self.world, state)
        return {"kinetic": kinetic, "elastic": elastic, "gravity": gravity, "total": kinetic + elastic + gravity}


def _voronoi_lengths(rod) -> np.ndarray:
    """Each vertex's Voronoi length: half of each adjacent rest edge [m]."""
    l = rod.rest_lengths
    out = np.zeros(rod.n_vertices)
    out[: rod.n_edges] += 0.5 * l
    np.add.at(out, (np.arange(rod.n_edges) + 1) % rod.n_vertices, 0.5 * l)
    return out


__all__ = ["DERSimulator", "FEATURES"]
