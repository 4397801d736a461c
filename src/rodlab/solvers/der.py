"""``der``: Discrete Elastic Rods (Bergou et al. 2008) on a whole world, every rod in one call.

Symplectic Euler + fast projection + quasistatic twist per rod (Bergou 2008, Alg. 1). Everything
a step needs is derived once at construction (one :class:`rodlab.der.stepper.DERStepper` per
rod supplies the rest quantities, then they are packed flat: :mod:`rodlab.der.batch`), and
``advance(state, n)`` makes one compiled call that steps all rods, in parallel over rods,
writing the flat :class:`rodlab.world.State` in place. Python runs per step only for rods driven
by Python callables (moving clamps ``motion(t)``, time-dependent point forces): their inputs for
the call's steps are evaluated before the call.

Wind (``world.loads.wind``, force per unit length ``drag (u(x, t) - v)``, lumped with each
vertex's Voronoi length ``l_i``): ``u`` is sampled at the vertices every ``wind_interval``
seconds of simulated time, on the grid of global steps ``k = round(t / dt)`` that are multiples
of ``M = max(1, round(wind_interval / dt))``, and held until the next grid step. An ``advance``
call is split at those grid steps, and the sample in force is kept in ``state.solver``
(``der_wind_force``, ``der_wind_step``), so the trajectory does not depend on how the steps are
cut into calls (the recording loop sizes its calls by wall time); ``-drag l_i v_i`` is an extra damping rate ``drag l_i / m_i``
per vertex (``drag / (rho A)`` where the linear density is uniform), stepped by the chosen
``damping_scheme`` together with the world's damping, and the ``u`` part is scaled so that the
discrete velocity relaxes to the continuous steady state: for the implicit scheme
``v_k - u = (v_0 - u) (1 + h drag / (rho A))^-k`` for a free rod in a uniform wind.

Rigid bodies (Bergou 2008, Sec. 8): any number of bodies, each welded to end edges of any
number of rods, step inside the same compiled call (:mod:`rodlab.der.bodies`): rods without a
weld step on their own, the welded rods and the bodies step together, per step forces and weld
wrenches (with the explicit twist torque of Sec. 8.2), symplectic Euler of the bodies, the rods'
update with welded vertices placed from their body, fast projection in the generalized mass
metric of Sec. 8.1 (iterated over rods and bodies), velocities, frames and twist. Point forces,
wind, damping (bodies too), moving clamps and the energy check (bodies included) all apply. The
bodies live in ``State.body_x/q/v/w`` (quaternion w, x, y, z body -> world; angular velocity in
body coordinates). Welded vertices' lumped masses are not part of the dynamics: the body stands
for everything rigidly attached to it (:meth:`DERSimulator.energies` and
:meth:`DERSimulator.momentum` count them that way).
"""
from __future__ import annotations

import math
import sys
import time
from time import perf_counter

import numpy as np

from .. import aot
from ..der import batch as B
from ..der import bodies as BD
from ..der.energy_check import joint_bend_coefficients
from ..der.weld_layout import check_free_vertices, projection_layout, voronoi_lengths
from ..der.static import solve_static as der_solve_static
from ..der.stepper import DEROptions, DERStepper, suggested_time_step
from ..model import Loads, ModelError
from ..state import RodState
from ..world import State
from .base import Simulator, StaticReport, StepReport, UnsupportedFeature, ok_report

FEATURES = frozenset({"closed rods", "prescribed clamp motion", "swivel clamps", "sliding clamps", "pinned vertices",
                      "anisotropic bending", "rest curvature overrides", "point forces", "rods given by stiffness",
                      "wind", "rigid bodies", "obstacles", "rod contact", "friction"})

PROJECTIONS = ("fast", "symplectic")
# moving clamps are sampled for at least this many steps at once, kept for the next calls (_clamp_rows)
CLAMP_BLOCK = 64
# a call of at most this many vertex-steps runs on the calling thread (B.advance_rods_serial): waking
# numba's thread pool costs more than it saves on so little work (~0.05-0.1 us per vertex-step)
SERIAL_WORK = 500

_FRAME_FIELDS = ("edge_theta", "edge_ref_d1", "joint_ref_twist")  # left unwritten by a deferring advance
_WHY = {B.ROD_NONFINITE: "the state became non-finite", B.ROD_PROJECTION: "fast projection did not converge",
        B.ROD_DEGENERATE: "the geometry degenerated (singular twist Hessian)"}


# A contact call whose smallest gap is below -PENETRATION_WARN x the smallest contact radius logs a warning
# (docs/contact-der.md, "What is and is not guaranteed": the response stops at its iteration limits when its
# constraints have no common solution); the scenes and tests hold min_gap >= -0.01 r.
PENETRATION_WARN = 0.01


def _warn_penetration(gap_min: float, radius_min: float, nsteps: int, t: float) -> None:
    import logging

    logging.getLogger(__name__).warning(
        "der contact: penetration %.3g m (%.3g x the smallest contact radius %.3g m) in the %d step(s) up to t = %.6g s: "
        "the impulse / projection alternation stopped at its limits, its constraints (contact, inextensibility, "
        "clamps) having no common solution; try a smaller dt, or check the world's clamps and obstacles",
        gap_min, -gap_min / radius_min, radius_min, nsteps, t)


class DERSimulator(Simulator):
    """Explicit DER over every rod of a world (module docstring).

    Options: ``dt`` (default: the smallest rod's :func:`rodlab.der.stepper.suggested_time_step`),
    ``inextensible`` (fast projection, default true; false: stretching energy), ``damping_scheme``
    (``implicit`` or ``exponential``, docs/damping.md), ``energy_check`` (refuse a call in which an
    undriven rod gains more than half its energy scale, default true; rods with a moving clamp, a
    time-dependent force or wind are driven), ``twist_solver`` (``auto``, ``newton``,
    ``uniform``), ``projection_tol`` (largest ``|e.e - ebar^2| / ebar^2`` after fast projection,
    rigid bodies included; the paper's fast projection dissipates energy to first order in dt),
    ``wind_interval`` (simulated seconds between samples of the wind field, default 1e-3; 0:
    every step).
    """

    method = "der"
    supports = FEATURES
    options = {"inextensible": True, "damping_scheme": "implicit", "energy_check": True, "twist_solver": "auto",
               "projection_tol": 1e-12, "projection": "fast", "wind_interval": 1e-3}

    # ---- setup ---------------------------------------------------------------------------------
    def _setup(self, dt):
        w = self.world
        self._dt = float(dt) if dt is not None else min(suggested_time_step(rod) for rod in w.rods)
        o = self.opts
        if o["projection"] not in PROJECTIONS:
            raise ModelError(f"projection must be one of {', '.join(PROJECTIONS)} (got {o['projection']!r})")
        interval = o["wind_interval"]
        if isinstance(interval, bool) or not isinstance(interval, (int, float)) or not math.isfinite(interval) \
                or interval < 0:
            raise ModelError(f"wind_interval must be a finite number of seconds >= 0 (got {interval!r})")
        self._wind_steps = max(1, int(round(float(interval) / self._dt)))
        self._options = DEROptions(dt=self._dt, inextensible=bool(o["inextensible"]), damping_scheme=o["damping_scheme"],
                                   energy_check=bool(o["energy_check"]), twist_solver=o["twist_solver"],
                                   projection_tol=float(o["projection_tol"]),
                                   projection_fail=max(1e-6, float(o["projection_tol"])))
        self.steppers = [DERStepper(rod, Loads(w.loads.gravity, w.loads.damping, w.point_forces_of(r)), self._options)
                         for r, rod in enumerate(w.rods)]
        # each rod's initial state fixes its clamps' reference pose (motion acts on it)
        self._rod_initial = [st.initial_state() for st in self.steppers]
        self._welds_by_rod = {}
        for x in w.welds:
            self._welds_by_rod.setdefault(x.rod, []).append(x)
        if w.bodies:
            self._check_bodies()
        self._setup_batch()
        if w.bodies:
            self._setup_bodies()
        self._contact = None
        if w.obstacles or w.contact.rods:
            self._setup_contact()
        # calls of the serial driver leave twist-free rods' frames unwritten until read (docs/der.md,
        # "Deferred frames"); the state they are left unwritten on, or None
        defers = self._plain and self._contact is None and bool(np.any(self.model.rod_flag[:, B.FLAG_TWIST_FREE]))
        # the largest call that takes the deferring serial path (0: none does)
        self._deferring_steps = (SERIAL_WORK // w.n_vertices if self._parallel else sys.maxsize) if defers else 0
        self._frames_state = None
        p = self._packed  # the deferring driver's argument (one arena: the packed buffers), read by advance
        self._arena = p.arena
        self._seed_entries()

    def _seed_entries(self) -> None:
        """The serial drivers' ahead-of-time compiled entries (rodlab.aot, where built), inserted into
        their numba dispatchers: numba's own type dispatch runs an entry for a call of its exact
        signature, the JIT for any other; advance calls the dispatchers, with no check in Python.
        At setup and at unpickling (:meth:`__setstate__`): seeding belongs to a process."""
        aot.seed(B.advance_undriven_serial)
        aot.seed(B.advance_rods_serial)

    def __setstate__(self, state: dict) -> None:
        """Unpickling (Dask, multiprocessing): the attributes, then the entries seeded in this
        process (a simulator unpickled in a fresh process would otherwise run on the JIT); the
        bodies' driver where the pickled simulator took its entry (``_world_serial``)."""
        self.__dict__.update(state)
        self._seed_entries()
        if state.get("_world_serial"):
            aot.seed(BD.advance_world)

    def _setup_contact(self) -> None:
        """Contact data (:class:`rodlab.der.contact.DERContact`); refused with rigid bodies."""
        from ..der.contact import DERContact

        if self.world.bodies:
            raise UnsupportedFeature("method der does not combine contact (obstacles, rod contact) with rigid bodies")
        from ..der.contact_loop import WARM_COLUMNS
        from ..der.contact_steps import advance_contact_steps

        self._contact = DERContact(self)
        # the contact branch's compiled loop and warm-table width, imported once (a function-level
        # import costs ~2 us per call)
        self._contact_steps, self._warm_columns = advance_contact_steps, WARM_COLUMNS
        w = self.world
        self._contact_start = (np.empty((w.n_vertices, 3)), np.empty((w.n_vertices, 3)), np.empty(w.n_edges),
                               np.empty((w.n_edges, 3)), np.empty(w.n_joints))

    def _check_bodies(self) -> None:
        w = self.world
        if not self._options.inextensible:
            raise UnsupportedFeature("method der models rigid bodies on inextensible rods only (inextensible=True)")
        for r in self._welds_by_rod:
            rod = w.rods[r]
            if rod.n_edges < 3:
                raise ModelError(f"rod {r} is welded to a body: a welded rod needs at least 3 edges (got {rod.n_edges})")
            if any(c.slide_axis is not None for c in rod.boundary.clamps):
                raise UnsupportedFeature(f"method der does not support sliding clamps on a rod welded to a body (rod {r})")

    def _setup_bodies(self) -> None:
        """The body group (:class:`rodlab.der.bodies.BodyModel`): welds in rod order, their
        body-frame offsets and directors from each rod's initial state and the bodies' poses."""
        from ..geometry.rotations import quat_matrix_into

        w, h, opt = self.world, self._dt, self._options
        welds = sorted(w.welds, key=lambda x: (x.rod, x.edge % w.rods[x.rod].n_edges))
        nb, nw, R = w.n_bodies, len(welds), w.n_rods
        rod_weld_start = np.zeros(R + 1, dtype=np.int64)
        for x in welds:
            rod_weld_start[x.rod + 1] += 1
        np.cumsum(rod_weld_start, out=rod_weld_start)
        weld_body = np.array([x.body for x in welds], dtype=np.int64)
        weld_edge = np.array([x.edge % w.rods[x.rod].n_edges for x in welds], dtype=np.int64)
        body_weld = np.argsort(weld_body, kind="stable").astype(np.int64)
        counts = np.bincount(weld_body, minlength=nb)
        body_weld_start = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        weld_p = np.zeros((nw, 6))
        weld_m1 = np.zeros((nw, 3))
        weld_drag = np.zeros((nw, 2))
        vertex_body = np.full(w.n_vertices, -1, dtype=np.int64)
        wind = w.loads.wind
        Rm = np.empty((3, 3))
        frames = {}
        for k, x in enumerate(welds):
            body = w.bodies[x.body]
            aot.kernel(quat_matrix_into)(np.ascontiguousarray(body.orientation), Rm)  # AOT entry where built
            rs = self._rod_initial[x.rod]
            if x.rod not in frames:
                frames[x.rod] = self.steppers[x.rod].material_frames(rs)[0]
            j = weld_edge[k]
            weld_p[k] = ((rs.x[[j, j + 1]] - body.position) @ Rm).reshape(6)
            weld_m1[k] = Rm.T @ frames[x.rod][j]
            v0 = int(w.rod_vertex_start[x.rod])
            vertex_body[v0 + j:v0 + j + 2] = x.body
            if wind is not None:
                weld_drag[k] = wind.drag * voronoi_lengths(w.rods[x.rod])[[j, j + 1]]
        inertia = np.array([b.inertia for b in w.bodies]).reshape(3 * nb, 3)
        inv_inertia = np.array([np.linalg.inv(b.inertia) for b in w.bodies]).reshape(3 * nb, 3)
        g = float(np.linalg.norm(w.loads.gravity))
        lengths = np.zeros(nb)
        for x in welds:
            lengths[x.body] += w.rods[x.rod].total_length
        coupled = np.zeros(R, dtype=np.int64)
        coupled[list(self._welds_by_rod)] = 1
        driven = any(r in self._moving or any(rr == r for rr, _ in self._timed) for r in self._welds_by_rod)
        passive = int(opt.energy_check and not driven and wind is None)
        body_damp = float(B.velocity_factors(np.array([w.loads.damping]), h, opt.damping_scheme)[0])
        inv_mass = self.model.vertex_inv_mass
        check_free_vertices(w, coupled, vertex_body, inv_mass)
        lay = projection_layout(w, welds, rod_weld_start, weld_body, weld_edge, coupled)
        model = BD.BodyModel(
            np.array([b.mass for b in w.bodies]), inertia, inv_inertia, body_weld_start, body_weld,
            np.array([b.mass for b in w.bodies]) * g * lengths, rod_weld_start, coupled, weld_body, weld_edge, weld_p,
            weld_m1, weld_drag, vertex_body, np.where(vertex_body >= 0, 0.0, self.model.vertex_mass),
            np.array([body_damp]), np.array([passive], dtype=np.int64), *lay["model"])
        work = BD.BodyWork(np.zeros((nw, 6)), np.zeros((nb, 7)), np.zeros((nb, 13)), np.zeros(w.n_edges, dtype=bool),
                           np.zeros(4), np.zeros((nw, 6)), np.zeros(lay["n_z"]), np.zeros(lay["n_cap"] + lay["n_pattern"]),
                           np.zeros(lay["n_cap"]), np.zeros(lay["n_sq"]), np.zeros(R),
                           np.zeros(lay["n_comp"], dtype=np.int64), np.zeros(lay["n_comp"]))
        self._body_packed, self.body_model, self.body_work = BD.pack_bodies(model, work)
        # the rods without a weld, or None where there are none (their step is then not compiled)
        self._free_rod = self.body_model.free_rod if self.body_model.free_rod.size else None
        # advance_world's ahead-of-time compiled entry (rodlab.aot), for a world whose rods are all
        # welded, in one chunk: seeded into the dispatcher, and the calls pass `serial` True (the
        # coupled phases' loop over chunks then runs serially, bitwise the parallel loop's results
        # for one chunk; pycc compiles no parallel loop). Elsewhere, or without the entry, `serial`
        # is None: the JIT's driver with its parallel loop over chunks, as without the module
        one_chunk = self.body_model.chunk_start.size == 2
        seeded = self._free_rod is None and one_chunk and aot.seed(BD.advance_world) > 0
        self._world_serial = True if seeded else None

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
            welded = r in self._welds_by_rod  # its energy check is the body group's
            flags[r] = (rod.closed, st.uniform_twist, st.twist_free and not welded,
                        opt.energy_check and not moving and not timed and wind is None and not welded, moving, bool(timed))
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
        # welded vertices move with their body, welded edges' angles follow it
        inv_mass = [st.inv_mass.copy() for st in self.steppers]
        free_theta = [st.free_theta.copy() for st in self.steppers]
        for r, welds in self._welds_by_rod.items():
            for x in welds:
                j = x.edge % w.rods[r].n_edges
                inv_mass[r][[j, j + 1]] = 0.0
                free_theta[r][j] = False
        mass = np.concatenate([st.masses for st in self.steppers])
        rate = np.full(w.n_vertices, float(w.loads.damping))
        self._wind_gain = np.zeros(w.n_vertices)
        if wind is not None:
            voronoi = np.concatenate([voronoi_lengths(rod) for rod in w.rods])
            c_w = B.wind_rates(mass, voronoi, wind.drag)
            total = rate + c_w
            # u-part of the force scaled so that v relaxes to c_w u / (c + c_w) under either scheme
            self._wind_gain = mass * B.kernel_rates(total, h, scheme) * c_w / total
            rate = total
        cat = np.concatenate
        model = B.BatchModel(
            w.rod_vertex_start, w.rod_edge_start, w.rod_joint_start, starts[:, 0], starts[:, 1], starts[:, 2], starts[:, 3],
            flags, np.array(parts["tol"]), np.array(parts["load"]),
            cat(inv_mass), mass, B.velocity_factors(rate, h, scheme), cat(parts["force"]),
            cat([st.rest_lengths for st in self.steppers]), cat([st.bend_k for st in self.steppers]),
            cat([st.stretch_k for st in self.steppers]), cat(free_theta),
            cat([st.lbar for st in self.steppers]), cat([st.omega_bar for st in self.steppers]).reshape(-1, 4),
            cat([st.twist_bar for st in self.steppers]), cat([st.twist_k for st in self.steppers]),
            cat(parts["presc"]).astype(np.int64), cat(parts["cedge"]).astype(np.int64), cat(parts["cm1"]).reshape(-1, 3),
            cat(parts["sv"]).reshape(-1, 2), cat(parts["sa"]).reshape(-1, 3), cat(parts["sw"]), cat(parts["se"]),
            cat(parts["ss"]), cat(parts["tv"]).astype(np.int64), g,
            np.array([opt.projection_tol, opt.projection_fail]),
            np.array([opt.projection_max_iter, opt.twist_max_iter, int(opt.inextensible),
                      int(self.opts["projection"] == "symplectic"), int(wind is not None)], dtype=np.int64),
            np.repeat(mass[:, None], 3, axis=1), mass[:, None] * g + cat(parts["force"]),
            cat([joint_bend_coefficients(st.bend_k, st.lbar, st.rod.closed) for st in self.steppers]))
        N, E, J, P = w.n_vertices, w.n_edges, w.n_joints, int(starts[-1, 0])
        work = B.BatchWork(np.zeros(6 * N), np.zeros((N, 3)), np.zeros((N, 3)), np.zeros((N, 3)), np.zeros((N, 3)),
                           np.zeros(18 * E), np.zeros(7 * E), np.zeros((E, 3)), np.zeros(E), np.zeros((E, 3)),
                           np.zeros((J, 3)), np.zeros((J, 4)), np.zeros(J), np.zeros((P, 3)), np.zeros((R, 6)),
                           np.zeros((R, 3)), np.zeros(R, dtype=np.int64), np.zeros((R, 4)), np.zeros(18 * E), np.zeros(7 * E),
                           np.zeros((J, 3)), np.zeros((J, 4)), np.zeros(R, dtype=np.int64))
        self._packed, self.model, self.work = B.pack(model, work)
        self._parallel = R > 1  # the parallel driver for calls of enough work (SERIAL_WORK)
        # the serial driver's symplectic argument: None compiles fast projection only
        self._symplectic = True if self.opts["projection"] == "symplectic" else None
        self._no_input = np.zeros((1, 0, 3))
        self._driven = bool(self._moving or self._timed)
        # per rod with a moving clamp: its stepper, vertex slice and flat prescribed / clamp columns
        self._moving_rods = [(self.steppers[r], w.rod_vertices(r), int(self.model.rod_presc_start[r]),
                              int(self.model.rod_presc_start[r + 1]), int(self.model.rod_clamp_start[r]),
                              int(self.model.rod_clamp_start[r + 1])) for r in self._moving]
        # their prescribed vertices that no moving clamp holds: (flat columns, world vertices), or ()
        cols, verts = [], []
        for st, vertices, ps, _pe, _cs, _ce in self._moving_rods:
            nv = st.rod.n_vertices
            held = {v for j, c in st.clamps.items() if c.motion is not None for v in (j, (j + 1) % nv)}
            for q, v in enumerate(st.prescribed_vertices):
                if int(v) not in held:
                    cols.append(ps + q)
                    verts.append(vertices.start + int(v))
        self._static_presc = (np.array(cols, dtype=np.int64), np.array(verts, dtype=np.int64)) if cols else ()
        self._clamp_block = None  # (origin, first step, end step, prescribed rows, clamp director rows)
        # sampled ahead and kept only when every moving clamp has a sampler (a pure function of time,
        # rodlab.motions); a plain callable is called for the call's own steps, every call
        sampled = all(hasattr(c.motion, "sample") for st, *_ in self._moving_rods for c in st.clamps.values()
                      if c.motion is not None)
        self._clamp_lookahead = CLAMP_BLOCK if sampled else 0
        # advance's fast path: no per-call inputs, no bodies
        self._plain = not (self._driven or wind is not None or w.bodies)
        self._windy = wind is not None  # advance cuts calls at the wind's grid steps
        self._shape_x, self._shape_e = (w.n_vertices, 3), (w.n_edges,)

    # ---- states --------------------------------------------------------------------------------
    def _rod_state(self, state: State, r: int) -> RodState:
        return RodState(state.t, state.rod_x(r), state.rod_v(r), state.rod_theta(r), state.rod_ref_d1(r), state.rod_ref_twist(r))

    def initial_state(self) -> State:
        """Every rod at rest in its rest shape, twist solved; bodies at their world poses, at rest."""
        state = State.zeros_for(self.world)
        for r, rs in enumerate(self._rod_initial):
            view = self._rod_state(state, r)
            for name in ("x", "v", "theta", "ref_d1", "ref_twist"):
                getattr(view, name)[...] = getattr(rs, name)
        state.method = self.method
        return state

    # ---- stepping ------------------------------------------------------------------------------
    def advance(self, state: State, nsteps: int = 1) -> StepReport:
        # the base class's checks on their slow path only (issue #13: a call costs <= 5 us)
        if nsteps.__class__ is not int or nsteps < 0 or state.__class__ is not State:
            nsteps = self._check_steps(state, nsteps)
        held = self._frames_state
        if held is not None and held is not state:
            self._write_held_frames()  # they are computed from the scratch this call overwrites
        if nsteps and nsteps <= self._deferring_steps:
            # an undriven world with twist-free rods, on the serial driver: their frames are left
            # unwritten until read (State.defer: the first read writes them, bitwise what the eager
            # call wrote), and a call on a state whose frames this simulator left unwritten takes
            # them back unwritten (docs/der.md, "Deferred frames")
            t0 = perf_counter()
            arrays = state.deferred_by(self) if held is state else None
            if arrays is None:
                mode = B.FRAMES_FRESH
                theta, ref_d1, ref_twist = state.edge_theta, state.edge_ref_d1, state.joint_ref_twist
                if theta.shape != self._shape_e:
                    self._check_layout(state)
            else:
                mode = B.FRAMES_PENDING
                theta, ref_d1, ref_twist = arrays.values()  # in _FRAME_FIELDS order
            x = state.vertex_x
            if x.shape != self._shape_x:
                self._check_layout(state)
            v = state.vertex_v
            code = B.advance_undriven_serial(self._arena, nsteps, self._dt, x, v, theta, ref_d1, ref_twist,
                                             self._symplectic, mode)
            if code:
                self._deferring_code(state, code, nsteps, t0, arrays is not None)
            if arrays is None:
                state.defer(_FRAME_FIELDS, self._write_frames, self)
                self._frames_state = state
            state.t += nsteps * self._dt
            return ok_report(nsteps, perf_counter() - t0)
        if state.vertex_x.shape != self._shape_x or state.edge_theta.shape != self._shape_e:
            self._check_layout(state)
        t0 = perf_counter()
        if nsteps and self._windy:
            return self._advance_windy(state, nsteps, t0)
        if nsteps and self._contact is not None:
            return self._advance_contact(state, nsteps, t0)
        if nsteps and not self._plain:
            return self._advance_general(state, nsteps, t0)
        if nsteps:  # one call of the compiled driver, serial when the call is too small for threads
            p = self._packed
            if self._parallel and nsteps * self._shape_x[0] > SERIAL_WORK:
                code = B.advance_rods(p.f, p.i, p.b, p.layout, nsteps, self._dt, state.vertex_x, state.vertex_v,
                                      state.edge_theta, state.edge_ref_d1, state.joint_ref_twist, self._no_input,
                                      self._no_input, self._no_input)
            else:
                code = B.advance_rods_serial(p.f, p.i, p.b, p.layout, nsteps, self._dt, state.vertex_x, state.vertex_v,
                                             state.edge_theta, state.edge_ref_d1, state.joint_ref_twist, None, None, None,
                                             self._symplectic)
            if code:
                self._check_code(state, code, nsteps, t0)
            state.t += nsteps * self._dt
        return ok_report(nsteps, perf_counter() - t0)

    def _deferring_code(self, state: State, code: int, nsteps: int, t0: float, was_pending: bool) -> None:
        """A nonzero result code of a deferring call: after a failed call the driver restored the
        state and wrote the frames of its start (the deferral, if one was pending, ends: its
        arrays hold their values); then :meth:`_check_code`."""
        if code & B.STATUS_FAILED:
            if was_pending:
                state.drop_deferred()
            self._frames_state = None
        self._check_code(state, code, nsteps, t0)

    def _write_frames(self, state: State) -> None:
        """The fill of the frames left unwritten by :meth:`advance` (``State.defer``)."""
        x, v, theta, ref_d1, ref_twist = (state.vertex_x, state.vertex_v, state.edge_theta, state.edge_ref_d1,
                                          state.joint_ref_twist)
        B.advance_undriven_serial(self._arena, 0, self._dt, x, v, theta, ref_d1, ref_twist, self._symplectic,
                                  B.FRAMES_FILL)
        if self._frames_state is state:
            self._frames_state = None

    def _write_held_frames(self) -> None:
        """Write the frames left unwritten on the state this simulator holds them for (before its
        scratch, from which they are computed, changes)."""
        held, self._frames_state = self._frames_state, None
        if held.deferred_by(self) is not None:
            held.resolve()

    def _advance_general(self, state: State, nsteps: int, t0: float) -> StepReport:
        """:meth:`advance` of a world with wind, moving clamps, time-dependent forces or bodies."""
        if nsteps:
            clock = self._clock(state)
            presc, m1, timed = self._call_loads(state, nsteps, clock)
            p = self._packed
            if self.world.bodies:
                q = self._body_packed
                no = self._no_input
                code = BD.advance_world(p.f, p.i, p.b, p.layout, q.f, q.i, q.b, q.layout, self._free_rod, nsteps,
                                        self._dt, state.vertex_x, state.vertex_v, state.edge_theta, state.edge_ref_d1,
                                        state.joint_ref_twist, state.body_x, state.body_q, state.body_v, state.body_w,
                                        no if presc is None else presc, no if m1 is None else m1,
                                        no if timed is None else timed, self._world_serial)
            elif self._parallel:
                no = self._no_input
                code = B.advance_rods(p.f, p.i, p.b, p.layout, nsteps, self._dt, state.vertex_x, state.vertex_v,
                                      state.edge_theta, state.edge_ref_d1, state.joint_ref_twist,
                                      no if presc is None else presc, no if m1 is None else m1,
                                      no if timed is None else timed)
            else:
                code = B.advance_rods_serial(p.f, p.i, p.b, p.layout, nsteps, self._dt, state.vertex_x, state.vertex_v,
                                             state.edge_theta, state.edge_ref_d1, state.joint_ref_twist, presc, m1,
                                             timed, self._symplectic)
            if code:
                self._check_code(state, code, nsteps, t0)
            self._tick(state, clock, nsteps)
        return StepReport(nsteps, wall_s=time.perf_counter() - t0)

    def _advance_contact(self, state: State, nsteps: int, t0: float) -> StepReport:
        """The contact branch of :meth:`advance` (docs/contact-der.md): the call's steps as one
        compiled loop (:func:`rodlab.der.contact_steps.advance_contact_steps`: per step the DER
        step of every rod, then the whole contact response). The clearance bound that lets
        contact-free steps skip detection lives in ``state.solver["der_contact_clear"]``, the last
        step's impulses that start the next one's in ``state.solver["der_contact_warm"]``."""
        c = self._contact
        advance_contact_steps = self._contact_steps
        clock = self._clock(state)
        presc, m1, timed = self._call_loads(state, nsteps, clock)
        p = self._packed
        start = self._contact_start  # the call's start, restored if it fails (the only arrays the loop writes)
        np.copyto(start[0], state.vertex_x)
        np.copyto(start[1], state.vertex_v)
        np.copyto(start[2], state.edge_theta)
        np.copyto(start[3], state.edge_ref_d1)
        np.copyto(start[4], state.joint_ref_twist)
        clear = state.solver.get("der_contact_clear")
        clear = np.array(clear, dtype=float) if clear is not None and np.shape(clear) == (2,) else np.zeros(2)
        warm = state.solver.get("der_contact_warm")  # copied: a state's copy may share the array
        ok = warm is not None and np.ndim(warm) == 2 and np.shape(warm)[0] > 0 and np.shape(warm)[1] == self._warm_columns
        warm = np.array(warm, dtype=float) if ok else np.zeros((16, self._warm_columns))
        code, done, finite, _t, n_sum, n_max, gap_min, warn, c.rows, warm, c.near = advance_contact_steps(
            p.f, p.i, p.b, p.layout, nsteps, self._dt, float(state.t), state.vertex_x, state.vertex_v, state.edge_theta,
            state.edge_ref_d1, state.joint_ref_twist, presc, m1, timed, self._symplectic, bool(self._moving),
            bool(self._timed), c.geometry, c.rod_mu, c.obstacle_mu, c.cfg, c.icfg, c.vertex_rod, c.rod_closed,
            c.rod_uniform, c.rod_twist_free, clear, c.stats, c.rows, warm, c.near_x, c.near)
        if code & B.STATUS_FAILED:
            self._restore_contact_start(state)
            self._check_code(state, code, 1, t0)
        if not finite:
            self._restore_contact_start(state)
            report = StepReport(0, False, "contact response produced a non-finite state", wall_s=time.perf_counter() - t0)
            self._fail(state, None, report, f"der contact: the state became non-finite at step {done} of {nsteps} "
                                            "(try a smaller dt); the state is restored to the call's start")
        self._tick(state, clock, nsteps)
        if warn & B.STATUS_PROJECTION_WARN:
            self._check_code(state, B.STATUS_PROJECTION_WARN, 1, t0)
        state.solver["der_contact_clear"] = clear
        state.solver["der_contact_warm"] = warm
        gap_min = min(gap_min, c.min_gap(state.vertex_x))
        if gap_min < -PENETRATION_WARN * c.radius_min:
            _warn_penetration(gap_min, c.radius_min, nsteps, state.t)
        return StepReport(nsteps, wall_s=time.perf_counter() - t0, contact_min_gap=gap_min, contacts_sum=n_sum,
                          contacts_max=n_max)

    def _restore_contact_start(self, state: State) -> None:
        """Put back the state arrays a failed contact call started from (``_contact_start``)."""
        for saved, name in zip(self._contact_start, ("vertex_x", "vertex_v", "edge_theta", "edge_ref_d1",
                                                     "joint_ref_twist")):
            np.copyto(getattr(state, name), saved)

    def _advance_windy(self, state: State, nsteps: int, t0: float) -> StepReport:
        """:meth:`advance` of a world with wind: the call cut at the wind's grid steps (module
        docstring), each piece one call of the contact or general branch with the wind sample in
        force. A failing piece restores the state to its own start, a state on the trajectory."""
        grid, k = self._wind_steps, int(round(state.t / self._dt))
        done, gap_min, n_sum, n_max = 0, math.inf, 0, 0
        while done < nsteps:
            step = k + done
            piece = min(nsteps - done, grid - step % grid)
            self._set_wind(state, step - step % grid)
            if self._contact is not None:
                rep = self._advance_contact(state, piece, t0)
                gap_min, n_sum, n_max = min(gap_min, rep.contact_min_gap), n_sum + rep.contacts_sum, \
                    max(n_max, rep.contacts_max)
            else:
                self._advance_general(state, piece, t0)
            done += piece
        if self._contact is not None:
            return StepReport(nsteps, wall_s=time.perf_counter() - t0, contact_min_gap=gap_min, contacts_sum=n_sum,
                              contacts_max=n_max)
        return StepReport(nsteps, wall_s=time.perf_counter() - t0)

    def _set_wind(self, state: State, grid_step: int) -> None:
        """Put the wind force of grid step ``grid_step`` in force: the sample kept in
        ``state.solver`` when it belongs to that grid step, else the field sampled now (at the
        state's positions and time: a grid step, or the first call from a state without it)."""
        force = self.work.vertex_wind_force
        kept, at = state.solver.get("der_wind_force"), state.solver.get("der_wind_step")
        if at is not None and int(np.asarray(at)) == grid_step and np.shape(kept) == force.shape:
            np.copyto(force, kept)
            return
        u = np.asarray(self.world.loads.wind.velocity(state.vertex_x, state.t), dtype=float)
        np.multiply(self._wind_gain[:, None], u, out=force)
        state.solver["der_wind_force"] = force.copy()
        state.solver["der_wind_step"] = np.array(grid_step, dtype=np.int64)

    def _clock(self, state: State) -> tuple[float, float]:
        """The state's time as ``(origin, steps)``: ``state.t == origin + dt * steps`` (bitwise),
        kept in ``state.solver["der_clock"]`` by the branches that step time-dependent inputs
        (:meth:`_tick`); a state without it, or whose ``t`` was set since (another simulator, a
        user), starts a new origin at its ``t``. Step ``k`` of the trajectory from the origin is
        at ``origin + dt * k``, however the steps are cut into calls: a call of 2N steps and two
        calls of N give bitwise the same inputs and state (docs/world.md, "Clamp motions")."""
        kept = state.solver.get("der_clock")
        if kept is not None and kept.shape == (2,):
            origin, steps = kept.tolist()
            if origin + self._dt * steps == state.t:
                return origin, steps
        return float(state.t), 0.0

    def _tick(self, state: State, clock: tuple[float, float], nsteps: int) -> None:
        """``state.t`` after ``nsteps`` steps from ``clock`` (:meth:`_clock`), and the clock kept."""
        origin, steps = clock
        steps += nsteps
        state.t = origin + self._dt * steps
        state.solver["der_clock"] = np.array([origin, steps])

    def _call_loads(self, state: State, nsteps: int, clock: tuple[float, float] | None = None):
        """The per-step inputs of :meth:`_call_inputs`, or ``None`` for each in an undriven world
        (the serial driver then compiles without their code); the wind force in force is set by
        :meth:`_advance_windy`."""
        if self._driven:
            return self._call_inputs(state, nsteps, self._clock(state) if clock is None else clock)
        return None, None, None

    def _call_inputs(self, state: State, nsteps: int, clock: tuple[float, float]):
        """Prescribed positions and directors of moving clamps at the end of each step of the
        call, and time-dependent forces at its start, in the model's flat order; step ``k`` ends
        at ``origin + dt * (steps + k)`` (``clock``: :meth:`_clock`). Each moving clamp is
        sampled at every step at once (``motion.sample`` where it has one: rodlab.motions)."""
        h = self._dt
        origin, steps = clock
        presc = self._no_input
        m1 = self._no_input
        if self._moving:
            presc, m1 = self._clamp_rows(state.vertex_x, origin, steps, nsteps)
        timed = self._no_input
        if self._timed:
            timed = np.empty((nsteps, len(self._timed), 3))
            for k, (_, pf) in enumerate(self._timed):
                for s in range(nsteps):
                    timed[s, k] = pf.at(origin + h * (steps + s))
        return presc, m1, timed

    def _clamp_rows(self, x: np.ndarray, origin: float, steps: float, nsteps: int):
        """Rows ``steps + 1 .. steps + nsteps`` (from clock ``origin``) of the moving rods'
        prescribed positions and clamp directors, sampled at once
        (:meth:`rodlab.der.stepper.DERStepper._clamp_inputs_into`); where every moving clamp has
        a sampler, views of a kept block of at least CLAMP_BLOCK steps (a row depends only on its
        time, so the rows are bitwise those of a call sampled on its own), with the moving rods'
        other prescribed vertices (pinned, clamps without motion) written from ``x`` per call."""
        block = self._clamp_block
        if block is None or block[0] != origin or not block[1] <= steps <= block[2] - nsteps:
            m, n = self.model, max(nsteps, self._clamp_lookahead)
            times = origin + self._dt * (steps + np.arange(1, n + 1))
            presc = np.zeros((n, m.presc_vertex.size, 3))
            m1 = np.zeros((n, m.clamp_edge.size, 3))
            for st, vertices, ps, pe, cs, ce in self._moving_rods:
                st._clamp_inputs_into(x[vertices], times, presc[:, ps:pe], m1[:, cs:ce])
            block = (origin, steps, steps + n, presc, m1)
            if self._clamp_lookahead:
                self._clamp_block = block
        a = int(steps - block[1])
        presc, m1 = block[3][a:a + nsteps], block[4][a:a + nsteps]
        if self._static_presc:
            presc[:, self._static_presc[0]] = x[self._static_presc[1]]
        return presc, m1

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
        if self.world.bodies and self.body_work.group_energy[3] != 0.0:
            e = self.body_work.group_energy
            msgs.append(f"rods {', '.join(str(r) for r in sorted(self._welds_by_rod))} and the bodies welded to them: "
                        f"DER step unstable: they gained {e[0]:.3g} J of mechanical energy in {nsteps} steps "
                        f"(energy scale {e[1]:.3g} J; try a smaller dt or heavier bodies)")
            failed = np.array([r for r in failed if r not in self._welds_by_rod], dtype=np.int64)
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

    # ---- statics and energies ------------------------------------------------------------------
    def solve_static(self, state: State) -> StaticReport:
        """Each rod's equilibrium under gravity and its point forces (``rodlab.der.static``); wind
        acts as the constant force ``drag l_i u(x_i, t)`` sampled at the state's positions."""
        self._check_layout(state)
        if self.world.bodies:
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
                extra = wind.drag * voronoi_lengths(st.rod)[:, None] * u[sl]
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
        out = np.empty(self.world.n_rods)
        p = self._packed
        B.rods_elastic_energy(p.f, p.i, p.b, p.layout, state.vertex_x, state.edge_theta, state.edge_ref_d1,
                              state.joint_ref_twist, out)
        return out

    def elastic_energy(self, state: State) -> float:
        return float(self.rod_elastic_energies(state).sum())

    def _dynamic_vertex_mass(self) -> np.ndarray:
        """Lumped vertex masses as the dynamics sees them: welded vertices' are 0 (their body
        stands for them)."""
        if self.world.bodies:
            return np.asarray(self.body_model.vertex_free_mass)
        return self.world.vertex_mass

    def energies(self, state: State) -> dict:
        """``kinetic``, ``elastic``, ``gravity`` (potential, zero at the origin) and their
        ``total`` [J]; with rigid bodies also ``kinetic_rods`` and ``kinetic_bodies``
        (translational + rotational). Welded vertices' lumped masses belong to their bodies
        (as in the dynamics). Constant point forces' potential is not in ``total``."""
        self._check_layout(state)
        w = self.world
        mass = self._dynamic_vertex_mass()
        g = np.asarray(w.loads.gravity, dtype=float)
        k_rods = 0.5 * float(np.sum(mass[:, None] * state.vertex_v**2))
        k_bodies = 0.0
        gravity = -float(np.sum(mass * (state.vertex_x @ g)))
        for b, body in enumerate(w.bodies):
            k_bodies += 0.5 * body.mass * float(state.body_v[b] @ state.body_v[b])
            k_bodies += 0.5 * float(state.body_w[b] @ body.inertia @ state.body_w[b])
            gravity -= body.mass * float(state.body_x[b] @ g)
        kinetic = k_rods + k_bodies
        elastic = self.elastic_energy(state)
        out = {"kinetic": kinetic, "elastic": elastic, "gravity": gravity, "total": kinetic + elastic + gravity}
        if w.bodies:
            out["kinetic_rods"] = k_rods
            out["kinetic_bodies"] = k_bodies
        return out

    def momentum(self, state: State) -> tuple[np.ndarray, np.ndarray]:
        """Linear momentum [kg m/s] and angular momentum about the origin [kg m^2/s] of every rod
        and body (world frame), with the masses the dynamics uses (:meth:`energies`)."""
        from .. import metrics

        mass = self._dynamic_vertex_mass()
        p = np.sum(mass[:, None] * state.vertex_v, axis=0)
        L = np.sum(mass[:, None] * np.cross(state.vertex_x, state.vertex_v), axis=0)
        for b, body in enumerate(self.world.bodies):
            p = p + body.mass * state.body_v[b]
            R = metrics.body_rotation(state, b)
            L = L + body.mass * np.cross(state.body_x[b], state.body_v[b]) + R @ (body.inertia @ state.body_w[b])
        return p, L

    def weld_error(self, state: State) -> float:
        """``max |x_k - (r_b + R(q_b) p_k)|`` over every welded vertex [m] (0 without bodies)."""
        from .. import metrics

        if not self.world.bodies:
            return 0.0
        bm = self.body_model
        err = 0.0
        for r in range(self.world.n_rods):
            x = state.rod_x(r)
            for wd in range(bm.rod_weld_start[r], bm.rod_weld_start[r + 1]):
                b = int(bm.weld_body[wd])
                R = metrics.body_rotation(state, b)
                j = int(bm.weld_edge[wd])
                for sl in range(2):
                    target = state.body_x[b] + R @ bm.weld_p[wd, 3 * sl:3 * sl + 3]
                    err = max(err, float(np.linalg.norm(x[j + sl] - target)))
        return err


__all__ = ["DERSimulator", "FEATURES"]
