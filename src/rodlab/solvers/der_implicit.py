"""``der-implicit``: implicit-Euler Discrete Elastic Rods on a whole world, every rod in one call.

Each rod is the implicit DER of :mod:`rodlab.der_implicit` (interleaved unknowns ``[x_0, theta_0,
x_1, ...]``, one step minimises the incremental potential by Newton's method on the banded
Hessian with a backtracking line search; Bergou et al. 2010, "Discrete viscous threads";
Takahashi and Batty, "A sag-free initialization of discrete elastic rods", Sec. III, VI: one Newton
iteration per step, 60 frames per second x 4 substeps, ``dt = 1/240 s``). :meth:`advance` steps all
rods in one compiled call, in parallel over rods (:mod:`rodlab.der_implicit.batch`), reading and
writing the flat :class:`rodlab.world.State`; the edge angles' velocities [rad/s] are carried in
``state.solver["edge_theta_v"]`` (zero when a state comes from another method), and
``state.solver["vertex_x_frames"]`` (N, 3) records the positions the state's reference frames were
transported to by the last step (NaN: none; a state of another method, a static solve or one
changed by hand): a step that starts where that record says takes the frames as they are, any
other start transports them once to its positions. So a step's result depends on the state alone
(a warm-up step on a copy, a checkpoint, a fresh simulator change nothing).

From the world (one :class:`rodlab.der_implicit.stepper.DERImplicitModel` per rod, :func:`rod_model`):

- stiffness per edge (stretching ``edge_stretch_stiffness`` [N], which must be > 0: this method
  stretches); bending and twisting per interior vertex as the mean of its two edges' values
  (exact for uniform rods; the kernel has one isotropic bending stiffness per vertex, so
  anisotropic bending is refused);
- rest curvature and twist from the rest polyline and the rest material frame ``rest_d1``
  (reference director = rest director, ``theta = 0``), or the rod's overrides (same 4D curvature
  and twist conventions as :mod:`rodlab.der`, joint ``k`` = vertex ``k + 1``);
- masses: the world's lumped vertex masses; edge angle inertia ``linear_density * radius^2 / 2 *
  lbar`` (a solid circular section; for a rod given by stiffness, its ``radius``);
- boundary conditions: a clamp holds ``x_j, x_{j+1}, theta_j`` (a swivel only the positions); a
  driven clamp's held unknowns are set to the motion's pose for the end of each step (relative to
  the rest pose, turning about the edge's rest midpoint); a pinned vertex holds its position.
  Sliding clamps, closed rods and bodies are refused;
- loads: gravity and constant point forces are constant external forces; viscous damping
  ``-c m v`` acts on every unknown (the angles too), discretised by ``damping_scheme``. Timed point
  forces and wind are evaluated at the start of every step (time ``t_n``, positions ``x_n``; with
  ``integrator="bdf2"`` at its end, ``t_{n+1}``, the wind at ``2 x_n - x_{n-1}``), so a
  world with them, or with driven clamps, is stepped one compiled call per step. Wind ``drag l (u -
  v)`` (``l`` the vertex's Voronoi length): the ``drag l u`` part is a force, the ``-drag l v`` part
  the extra damping rate ``drag / linear_density`` of that rod (needs a uniform linear density),
  which, like all damping of this method, also damps the edge angles.

Bending models (option ``bending``): ``4d`` (the sag-free paper's 4D curvature), ``2d-average`` (2D
curvature on averaged material frames, Takahashi and Batty Fig. 2) and ``2d-slerp`` (2D curvature on
slerped vertex frames, Gornowicz and Borac 2015, Takahashi and Batty Fig. 3;
:mod:`rodlab.der_implicit.slerp_bending`, with its ``gradient`` and ``branch`` options). The slerped
model's rest 2D curvature comes from the rod's 4D rest curvature and rest twist
(:func:`slerp_rest_curvature`).

Time integration (option ``integrator``; docs/integrators.md, section der-implicit):
``backward-euler`` (the default, first order) or ``bdf2`` (second order: the same minimisation with
the inertia about the BDF2 predictor ``xh + beta h vh`` and ``beta h`` for ``h``, ``beta = 2/3``,
``xh = 4/3 x_n - 1/3 x_{n-1}``, ``vh = 4/3 v_n - 1/3 v_{n-1}``, for every unknown, edge angles
included). BDF2 keeps the
previous step in ``state.solver``: ``"bdf2_prev"`` (D, 2), the interleaved unknowns and velocities
of step ``n - 1`` (rods one after the other), and ``"bdf2_prev_at"`` ``[t_n, dt]``, the time and step
they belong to. A state without them, from another method, with another ``t`` (a state changed or
reset by hand) or another ``dt``, starts with one backward-Euler step; the steps after it are BDF2.
``solve_static`` drops them. How a run is split into ``advance`` calls changes nothing (bit for bit).

Deferred output (:meth:`rodlab.world.State.defer`; backward Euler without driven clamps, timed
forces, wind or contact): a call leaves its result in the batch's buffers and defers the state's
``vertex_x``, ``vertex_v``, ``edge_theta``, ``edge_ref_d1`` and ``joint_ref_twist`` (with the solver's
``edge_theta_v`` and ``vertex_x_frames``); the first read of any of them, a copy, a save, a pickle,
another simulator's call or this simulator's use of its buffers for another state (:meth:`_settle`)
writes them, bitwise what the call would have written. A call on the same state with its output
still unread and no field re-bound writes that output first (so a failed step still leaves the
state where the call started) and steps from the buffers without packing and comparing the state
against them: at 200 vertices about 1.5 us less per ``advance(state, 1)``. An array object taken from
the state before a call (``x = state.vertex_x``) holds the new values only after the state's field
is read again (``state.vertex_x``), as for every deferred output.
"""
from __future__ import annotations

import math
import time
import weakref
from time import perf_counter

import numpy as np

from .. import aot
from ..der_implicit.batch import (F_NEWTON_MAX, F_RESIDUAL_MAX, I_DEFER, I_HAVE_PREV, I_RESUME,
                                  INTEGRATOR_BACKWARD_EULER, INTEGRATOR_BDF2, RodBatch, advance_serial)
from ..der_implicit.energies import material_curvature_all, pack_dofs, update_frames
from ..der_implicit.slerp_bending import BRANCHES, GRADIENTS
from ..der_implicit.stepper import DERImplicitModel, DERImplicitState, solve_static, with_params
from ..der_implicit.contact_step import ContactStep, rods_base_frames
from ..model import ModelError, Rod, check_damping_scheme, require
from ..world import State
from .base import Simulator, StaticReport, StepReport, ok_report, step_report

# rod_model's kernels: their ahead-of-time entries where built (rodlab.aot), else the dispatchers
_update_frames, _material_curvature_all = map(aot.kernel, (update_frames, material_curvature_all))

INTEGRATORS = ("backward-euler", "bdf2")
FEATURES = frozenset({"prescribed clamp motion", "swivel clamps", "pinned vertices", "rest curvature overrides",
                      "point forces", "rods given by stiffness", "wind", "obstacles", "rod contact", "friction"})
BENDING_MODELS = ("4d", "2d-average", "2d-slerp")
DEFAULT_DT = 1.0 / 240.0
FRAMES_KEY = "vertex_x_frames"
"""``state.solver`` key: the positions (N, 3) the state's reference frames belong to (module docstring)."""
EAGER_AFTER_FILL = 64
"""The most calls that write their output eagerly after deferred outputs were read before the next
call (:meth:`DERImplicitSimulator._fill`)."""
DEFERRED = ("vertex_x", "vertex_v", "edge_theta", "edge_ref_d1", "joint_ref_twist")
"""The state fields a plain call leaves unwritten until they are read (:meth:`State.defer`; the
solver's ``edge_theta_v`` and ``vertex_x_frames`` are written with them): module docstring."""


def rod_model(rod: Rod, *, gravity=(0.0, 0.0, 0.0), damping: float = 0.0, point_forces=(), curv2d: bool = False,
              index: int = 0) -> tuple[DERImplicitModel, DERImplicitState]:
    """The implicit-DER model of ``rod`` at rest in its rest shape (module docstring for the mapping).

    ``gravity`` [m/s^2] and constant ``point_forces`` (:class:`rodlab.model.PointForce`) go into
    ``fext``; ``damping`` [1/s]; ``curv2d``: averaged-frame 2D bending. ``index`` names the rod in
    error messages. Returns the model and the rest state (reference directors: ``rest_d1`` made
    orthonormal to the tangents, ``theta = 0``). For a uniform circular rod with a Bishop rest frame
    this is :func:`rodlab.der_implicit.stepper.build_rod`.
    """
    require(not rod.closed, f"der-implicit models open rods only (rod {index} is closed)")
    nv = rod.n_vertices
    require(nv >= 3, f"der-implicit needs at least 3 vertices per rod (rod {index} has {nv})")
    bend = rod.bending_stiffness
    require(bool(np.allclose(bend[:, 0], bend[:, 1], rtol=1e-12)),
            f"der-implicit has isotropic bending only (rod {index} has two bending stiffnesses)")
    ks = np.array(rod.stretching_stiffness)
    require(bool(np.all(ks > 0)), f"der-implicit needs stretching stiffness > 0 N on every edge (rod {index}; "
                                  "give add_rod(..., stretching=...) for a rod given by stiffness)")
    x = np.ascontiguousarray(rod.rest_positions, dtype=float)
    lbar = np.array(rod.rest_lengths)
    q = pack_dofs(x, np.zeros(nv - 1))
    tan = np.diff(x, axis=0) / lbar[:, None]
    a1 = np.array(rod.rest_d1, dtype=float)
    perp = np.linalg.norm(a1 - np.sum(a1 * tan, axis=1)[:, None] * tan, axis=1)
    require(bool(np.all(perp > 1e-9)), f"rest_d1 of rod {index} must not be parallel to the rest tangent")
    tan2, elen, a1c, mrefc = np.empty_like(tan), np.empty(nv - 1), np.empty_like(a1), np.empty(nv - 2)
    _update_frames(q, tan, a1, np.zeros(nv - 2), tan2, elen, a1c, mrefc)
    wbar, mbar = np.zeros((nv, 4)), np.zeros(nv)
    _material_curvature_all(q, tan2, elen, a1c, mrefc, wbar, mbar)
    if rod.rest_curvature is not None:
        wbar[1:-1] = rod.rest_curvature
    if rod.rest_twist is not None:
        mbar[1:-1] = rod.rest_twist

    def per_vertex(edge_values):
        out = np.empty(nv)
        out[1:-1] = 0.5 * (edge_values[:-1] + edge_values[1:])
        out[0], out[-1] = edge_values[0], edge_values[-1]
        return out

    lvor = np.zeros(nv)
    lvor[1:-1] = lbar[:-1] + lbar[1:]
    vm = rod.vertex_masses
    mass = np.empty(4 * nv - 1)
    fext = np.zeros(4 * nv - 1)
    for c in range(3):
        mass[c::4] = vm
        fext[c::4] = vm * float(gravity[c])
    mass[3::4] = rod.linear_density * 0.5 * rod.radius**2 * lbar
    for pf in point_forces:
        i = pf.vertex % nv
        fext[4 * i:4 * i + 3] += pf.at(0.0)
    fixed = np.zeros(4 * nv - 1, dtype=bool)
    for c in rod.boundary.clamps:
        j = c.edge % (nv - 1)
        fixed[4 * j:4 * j + 3] = True
        fixed[4 * j + 4:4 * j + 7] = True
        if not c.free_rotation:
            fixed[4 * j + 3] = True
    for i in rod.boundary.fixed_vertices:
        i %= nv
        fixed[4 * i:4 * i + 3] = True
    model = DERImplicitModel(ks, lbar, per_vertex(bend[:, 0]), wbar, per_vertex(np.asarray(rod.twisting_stiffness)),
                             mbar, lvor, mass, fixed, fext, float(damping), bool(curv2d))
    return model, DERImplicitState(q, np.zeros_like(q), a1c, tan2, mrefc, 0.0)


def slerp_rest_curvature(model: DERImplicitModel, branch: str = "twist") -> np.ndarray:
    """Rest 2D curvature (n, 2) of the slerped-frame bending model of a rod at rest: at interior
    vertex ``i``, ``Rot(phi / 2) wbar_i[0:2]`` with ``wbar_i[0:2]`` the first half of the 4D rest
    curvature (edge ``i - 1``'s material frame), ``phi`` the rest twist ``mbar_i`` (``branch``
    ``"twist"``) or it wrapped into ``(-pi, pi]`` (``"shortest"``) and ``Rot(u) = [[cos u, sin u],
    [-sin u, cos u]]`` (the identity of :mod:`rodlab.der_implicit.slerp_bending`: the slerped frame is
    edge ``i - 1``'s frame turned by half the twist). Ends are 0."""
    require(branch in BRANCHES, f"branch must be one of {', '.join(BRANCHES)} (got {branch!r})")
    phi = np.array(model.mbar[1:-1], dtype=float)
    if branch == "shortest":
        phi = phi - 2.0 * math.pi * np.floor((phi + math.pi) / (2.0 * math.pi))
        phi[phi <= -math.pi] += 2.0 * math.pi
    c, s = np.cos(0.5 * phi), np.sin(0.5 * phi)
    w0, w1 = model.wbar[1:-1, 0], model.wbar[1:-1, 1]
    out = np.zeros((model.nv, 2))
    out[1:-1, 0] = c * w0 + s * w1
    out[1:-1, 1] = -s * w0 + c * w1
    return out


class DERImplicitSimulator(Simulator):
    """Implicit DER over every rod of a world, batched (module docstring).

    Options: ``dt`` [s] (default 1/240 s), ``newton_iters`` per step (default 1, the sag-free
    paper's), ``gtol`` [N] free-force max-norm that ends a step's Newton loop early (default 0: always
    ``newton_iters``), ``line_search`` max halvings of the Armijo search (0: full Newton steps),
    ``damping_scheme`` (``implicit``: in the step's solve; ``exponential``: velocities scaled by
    ``exp(-c dt)`` after it; docs/damping.md), ``bending`` (``4d``, the paper's; ``2d-average``;
    ``2d-slerp``), and for ``2d-slerp`` only: ``gradient`` (``approx``, the slerped frame held constant
    when differentiating, or ``exact``) and ``branch`` (``twist`` or ``shortest``) of
    :class:`rodlab.der_implicit.stepper.SlerpStepper`. ``line_search_failures``: ``fail`` (default: a
    step whose line search finds no descent while the free force is above round-off fails, and
    :meth:`advance` raises :class:`SimulationError`) or ``count`` (that Newton iteration keeps its
    start, as :class:`rodlab.der_implicit.stepper.DERImplicitStepper` does; the failures of the last
    call are in ``batch.rod_line_search_failures``; a non-finite state still fails).
    ``integrator``: ``backward-euler`` (default) or ``bdf2`` (second order; module docstring), in
    contact worlds too.
    Rods run in parallel over numba's threads (``numba.set_num_threads``) when there are several.

    Contact options (used by worlds with obstacles or rod contact; docs/contact-der-implicit.md):
    ``contact_dhat`` [m] barrier activation gap (``None``: half the smallest contact radius),
    ``contact_stiffness`` barrier stiffness kappa [N/m] or ``"auto"`` (IPC's adaptive rule),
    ``friction_eps_v`` [m/s] IPC's sliding-speed threshold of the friction mollifier,
    ``contact_tol`` [m/s] Newton stops when the step's max-norm (positions; angles times the largest
    radius) is below ``contact_tol * dt``, ``contact_newton_iters`` most Newton iterations per step
    (``newton_iters`` and ``gtol`` are those of the contact-free path).
    """

    method = "der-implicit"
    supports = FEATURES
    options = {"newton_iters": 1, "gtol": 0.0, "line_search": 12, "damping_scheme": "implicit", "bending": "4d",
               "gradient": "approx", "branch": "twist", "line_search_failures": "fail",
               "contact_dhat": None, "contact_stiffness": "auto", "friction_eps_v": 1e-3, "contact_tol": 1e-4,
               "contact_newton_iters": 50, "integrator": "backward-euler"}

    def _setup(self, dt):
        o = self.opts
        for name, low in (("newton_iters", 1), ("line_search", 0)):
            v = o[name]
            require(isinstance(v, (int, np.integer)) and not isinstance(v, bool) and v >= low,
                    f"{name} must be an integer >= {low} (got {v!r})")
        require(isinstance(o["gtol"], (int, float)) and math.isfinite(o["gtol"]) and o["gtol"] >= 0,
                f"gtol must be >= 0 N (got {o['gtol']!r})")
        check_damping_scheme(o["damping_scheme"])
        require(isinstance(o["integrator"], str) and o["integrator"] in INTEGRATORS,
                f"integrator must be one of {', '.join(INTEGRATORS)} (got {o['integrator']!r})")
        self._bdf2 = o["integrator"] == "bdf2"
        require(o["line_search_failures"] in ("fail", "count"),
                f"line_search_failures must be one of fail, count (got {o['line_search_failures']!r})")
        require(o["bending"] in BENDING_MODELS,
                f"bending must be one of {', '.join(BENDING_MODELS)} (got {o['bending']!r})")
        require(o["gradient"] in GRADIENTS, f"gradient must be one of {', '.join(GRADIENTS)} (got {o['gradient']!r})")
        require(o["branch"] in BRANCHES, f"branch must be one of {', '.join(BRANCHES)} (got {o['branch']!r})")
        slerp = o["bending"] == "2d-slerp"
        require(slerp or (o["gradient"], o["branch"]) == ("approx", "twist"),
                f"gradient and branch are options of bending='2d-slerp' only (bending is {o['bending']!r})")
        self._dt = DEFAULT_DT if dt is None else float(dt)
        w = self.world
        loads = w.loads
        self.models, self._rest = [], []
        drives = []
        for r, rod in enumerate(w.rods):
            constant = tuple(pf for pf in w.point_forces_of(r) if not callable(pf.force))
            model, rest = rod_model(rod, gravity=loads.gravity, damping=loads.damping, point_forces=constant,
                                    curv2d=o["bending"] == "2d-average", index=r)
            self.models.append(model)
            self._rest.append(rest)
            for c in rod.boundary.clamps:
                if c.motion is not None:
                    drives.append((r, c.edge % rod.n_edges, not c.free_rotation))
        self.rod_rest_curvature2 = [slerp_rest_curvature(m, o["branch"]) for m in self.models] if slerp else []
        self.batch = RodBatch(self.models, h=self._dt, newton_iters=int(o["newton_iters"]), gtol=float(o["gtol"]),
                              line_search=int(o["line_search"]), curv2d=o["bending"] == "2d-average", drives=drives,
                              slerp=(self.rod_rest_curvature2, BRANCHES.index(o["branch"]),
                                     int(o["gradient"] == "exact")) if slerp else None,
                              integrator=INTEGRATOR_BDF2 if self._bdf2 else INTEGRATOR_BACKWARD_EULER)
        b = self.batch
        # damping per rod: the world's rate plus the wind's drag / linear density
        rate = np.full(w.n_rods, loads.damping)
        if loads.wind is not None:
            for r in range(w.n_rods):
                rho_l = w.edge_linear_density[w.rod_edges(r)]
                require(bool(np.ptp(rho_l) <= 1e-12 * rho_l.max()),
                        f"der-implicit takes wind on rods of uniform linear density only (rod {r} varies)")
                rate[r] += loads.wind.drag / float(rho_l[0])
        if o["damping_scheme"] == "exponential":
            b.rod_damping[:] = 0.0
            b.rod_decay[:] = np.exp(-rate * self._dt)
        else:
            b.rod_damping[:] = rate
            b.rod_decay[:] = 1.0
        # a line search that finds no descent fails the step unless the free force is at round-off
        for r, m in enumerate(self.models):
            scale = max(float(np.abs(m.fext).max()), float(m.kbend.max()) / float(m.lbar.sum()) ** 2)
            b.rod_fail_gtol[r] = max(float(o["gtol"]), 1e-8 * scale)
        if o["line_search_failures"] == "count":
            b.rod_fail_gtol[:] = np.inf
        self._fext_constant = np.array(b.dof_fext)
        # vertex coordinate -> its row of the interleaved unknowns
        vstart, dstart = b.starts["vertex"], b.starts["dof"]
        rod_of_vertex = np.repeat(np.arange(w.n_rods), np.diff(vstart))
        local = np.arange(w.n_vertices) - vstart[rod_of_vertex]
        self._vertex_dof = (dstart[rod_of_vertex] + 4 * local)[:, None] + np.arange(3)[None, :]
        estart = b.starts["edge"]
        rod_of_edge = np.repeat(np.arange(w.n_rods), np.diff(estart))
        self._theta_dof = dstart[rod_of_edge] + 4 * (np.arange(w.n_edges) - estart[rod_of_edge]) + 3
        self._timed_forces = [(int(w.rod_vertex_start[pf.rod]) + pf.force.vertex % w.rods[pf.rod].n_vertices,
                               pf.force) for pf in loads.point_forces if callable(pf.force.force)]
        if loads.wind is not None:
            e = w.edge_rest_length
            voronoi = np.zeros(w.n_vertices)
            for r in range(w.n_rods):
                vs, es = int(w.rod_vertex_start[r]), w.rod_edges(r)
                ne = es.stop - es.start
                voronoi[vs:vs + ne] += 0.5 * e[es]
                voronoi[vs + 1:vs + ne + 1] += 0.5 * e[es]
            self._wind_weight = loads.wind.drag * voronoi[:, None]
        self._drive_rest = []
        for r, j, _ in b.drives:
            ne = w.rods[r].n_edges
            motion = next(c.motion for c in w.rods[r].boundary.clamps if c.edge % ne == j)
            xs = w.vertex_rest_x[int(w.rod_vertex_start[r]) + j:int(w.rod_vertex_start[r]) + j + 2]
            rest = self._rest[r]
            t = rest.tan[j]
            a2 = np.cross(t, rest.a1[j])
            m1 = rest.a1[j] * math.cos(rest.q[4 * j + 3]) + a2 * math.sin(rest.q[4 * j + 3])
            self._drive_rest.append((motion, xs.copy(), xs.mean(axis=0), m1))
        self._stepwise = bool(b.n_drive or self._timed_forces or loads.wind is not None)
        self._setup_contact()
        self._parallel = w.n_rods > 1
        self._shape_x, self._shape_e = (w.n_vertices, 3), (w.n_edges,)
        # deferred outputs (module docstring): backward Euler without per-step loads or contact
        self._defers = not (self._stepwise or self._bdf2 or self._contact is not None)
        self._pending = None  # weak reference to the state whose deferred output the buffers hold
        self._pending_arrays = ()  # its arrays: the five deferred fields, edge_theta_v, vertex_x_frames
        self._eager_left = 0  # calls that write eagerly before the next deferral (_fill sets it)
        self._eager_streak = 0  # the last such count (doubles while deferrals are read at once)
        self._resumed = 0  # calls that went on from the pending deferral
        self._flags = None  # (ibuf[I_RESUME], ibuf[I_DEFER]) as the one-rod path last left them; None: unknown

    def _setup_contact(self) -> None:
        """Check the contact options; a world with obstacles or rod contact gets its
        :class:`ContactStep` (else ``self._contact`` is None and nothing changes)."""
        o, w, b = self.opts, self.world, self.batch
        dhat, kappa = o["contact_dhat"], o["contact_stiffness"]
        require(dhat is None or (isinstance(dhat, (int, float)) and not isinstance(dhat, bool) and math.isfinite(dhat)
                                 and dhat > 0), f"contact_dhat must be > 0 m or None (got {dhat!r})")
        require(kappa == "auto" or (isinstance(kappa, (int, float)) and not isinstance(kappa, bool)
                                    and math.isfinite(kappa) and kappa > 0),
                f"contact_stiffness must be > 0 N/m or \"auto\" (got {kappa!r})")
        for name in ("friction_eps_v", "contact_tol"):
            v = o[name]
            require(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v > 0,
                    f"{name} must be > 0 m/s (got {v!r})")
        v = o["contact_newton_iters"]
        require(isinstance(v, (int, np.integer)) and not isinstance(v, bool) and v >= 1,
                f"contact_newton_iters must be an integer >= 1 (got {v!r})")
        self._contact = None
        if not (w.obstacles or w.contact.rods):
            return
        radius = np.asarray(w.rod_radius, dtype=float) if w.contact.thickness is None else \
            np.full(w.n_rods, float(w.contact.thickness))
        require(bool(np.all(radius > 0)),
                "der-implicit contact needs every rod's radius (or the contact thickness) > 0 m")
        if dhat is None:
            dhat = 0.5 * float(radius.min())
        fixed = np.concatenate([np.flatnonzero(m.fixed) + b.starts["dof"][r] for r, m in enumerate(self.models)])
        self._contact = ContactStep(w, b, self._vertex_dof, self._theta_dof, fixed.astype(np.int64), h=self._dt,
                                    dhat=float(dhat), kappa=None if kappa == "auto" else float(kappa),
                                    eps_v=float(o["friction_eps_v"]), tol=float(o["contact_tol"]),
                                    max_iters=int(o["contact_newton_iters"]), line_search=30)
        rod_of_dof = np.repeat(np.arange(w.n_rods), np.diff(b.starts["dof"]))
        self._dof_damping = b.rod_damping[rod_of_dof].copy()
        self._dof_decay = b.rod_decay[rod_of_dof].copy()

    def _advance_contact(self, state: State, nsteps: int, tv: np.ndarray) -> StepReport:
        """``nsteps`` steps of a contact world, one global Newton solve per step (module docstring)."""
        t0 = perf_counter()
        cs, b = self._contact, self.batch
        kappa = float(state.solver.get("contact_kappa", cs.kappa_min)) if cs.kappa_fixed is None else cs.kappa_fixed
        D = cs.n
        q, v = np.empty(D), np.empty(D)
        iters, csum, cmax, gmin_all = 0, 0, 0, math.inf
        prev, have = self._prev(state)
        for s in range(nsteps):
            if self._stepwise:
                self._set_step_loads(state)
            q[self._vertex_dof] = state.vertex_x
            q[self._theta_dof] = state.edge_theta
            v[self._vertex_dof] = state.vertex_v
            v[self._theta_dof] = tv
            b.edge_a1_base[...] = state.edge_ref_d1
            b.joint_mref_base[...] = state.joint_ref_twist
            if self._bdf2:
                last = (prev[:, 0].copy(), prev[:, 1].copy()) if have else None
                qn, vn = q.copy(), v.copy()
            else:
                last = None
            try:
                rods_base_frames(b.ibuf, b.fbuf, q, 0)
                its, kappa, active, gmin = cs.step(q, v, kappa, self._dof_damping, self._dof_decay, last)
                rods_base_frames(b.ibuf, b.fbuf, q, 1)
                ok = bool(np.all(np.isfinite(q)) and np.all(np.isfinite(v)))
            except (FloatingPointError, ValueError, ArithmeticError, np.linalg.LinAlgError) as exc:
                ok, why = False, str(exc)
            else:
                why = "non-finite unknowns"
            if not ok:
                report = StepReport(s, False, "step failed", iters, 0, 0.0, perf_counter() - t0, gmin_all, csum, cmax)
                self._fail(state, None, report,
                           f"contact step {s + 1} of {nsteps} failed ({why}); try a smaller dt")
            state.vertex_x[...] = q[self._vertex_dof]
            state.vertex_v[...] = v[self._vertex_dof]
            state.edge_theta[...] = q[self._theta_dof]
            tv[...] = v[self._theta_dof]
            state.edge_ref_d1[...] = b.edge_a1_base
            state.joint_ref_twist[...] = b.joint_mref_base
            state.t += self._dt
            state.method = self.method
            if self._bdf2:
                prev[:, 0] = qn
                prev[:, 1] = vn
                have = True
                self._mark_prev(state)
            if cs.kappa_fixed is None:
                state.solver["contact_kappa"] = kappa
            if not math.isfinite(gmin):
                gmin = cs.min_gap(state.vertex_x)
            iters += its
            csum += active
            cmax = max(cmax, active)
            gmin_all = min(gmin_all, gmin)
        return StepReport(nsteps, True, "ok", iters, 0, 0.0, perf_counter() - t0, gmin_all, csum, cmax)

    # ---- loads that change with time ---------------------------------------------------------
    def _set_step_loads(self, state: State, static: bool = False) -> None:
        """External forces at the start of the step from ``state`` (time ``t_n``, positions ``x_n``;
        BDF2: at its end, time ``t_{n+1}`` and the wind at positions ``2 x_n - x_{n-1}``, so they do
        not lower its order; ``static``: always ``t_n``, ``x_n``) and the driven clamps' targets for its end."""
        b, w, t = self.batch, self.world, state.t
        x = state.vertex_x
        if self._bdf2 and not static:
            t = state.t + self._dt
            if w.loads.wind is not None:
                prev, have = self._prev(state)
                if have:
                    x = 2.0 * x - prev[self._vertex_dof, 0]
        if self._timed_forces or w.loads.wind is not None:
            b.dof_fext[:] = self._fext_constant
            for v, pf in self._timed_forces:
                b.dof_fext[self._vertex_dof[v]] += pf.at(t)
            if w.loads.wind is not None:
                u = np.asarray(w.loads.wind.velocity(x, t), dtype=float)
                require(u.shape == state.vertex_x.shape and bool(np.all(np.isfinite(u))),
                        f"wind velocity must return finite (N, 3) values [m/s] (got shape {u.shape})")
                b.dof_fext[self._vertex_dof] += self._wind_weight * u
        for k, (motion, xs, centre, m1) in enumerate(self._drive_rest):
            R, d = motion(state.t + self._dt)
            R = np.asarray(R, dtype=float)
            b.drive_target[k, 0:6] = ((xs - centre) @ R.T + centre + np.asarray(d, dtype=float)).reshape(-1)
            b.drive_target[k, 6:9] = R @ m1

    # ---- BDF2's previous step -------------------------------------------------------------------
    def _prev(self, state: State) -> tuple[np.ndarray, bool]:
        """The state's previous-step array (D, 2) (created when missing or malformed; a (0, 2) array
        for backward Euler) and whether it holds step ``n - 1`` of this state (module docstring)."""
        b = self.batch
        if not self._bdf2:
            return b.no_prev, False
        sv = state.solver
        prev, at = sv.get("bdf2_prev"), sv.get("bdf2_prev_at")
        shape_ok = prev is not None and prev.shape == (b.n_dof, 2) and prev.dtype == np.float64 \
            and prev.flags.c_contiguous
        have = bool(shape_ok and state.method == self.method and at is not None and np.shape(at) == (2,)
                    and float(at[0]) == state.t and float(at[1]) == self._dt)
        if not shape_ok:
            prev = np.zeros((b.n_dof, 2))
            sv["bdf2_prev"] = prev
        return prev, have

    def _mark_prev(self, state: State) -> None:
        """Record that ``state.solver["bdf2_prev"]`` holds the step before ``state.t`` (BDF2 only)."""
        if self._bdf2:
            state.solver["bdf2_prev_at"] = np.array([state.t, self._dt])

    # ---- protocol ------------------------------------------------------------------------------
    def initial_state(self) -> State:
        state = State.zeros_for(self.world)
        for r, rest in enumerate(self._rest):
            state.rod_ref_d1(r)[...] = rest.a1
            state.rod_ref_twist(r)[...] = rest.mref
        state.solver["edge_theta_v"] = np.zeros(self.world.n_edges)
        state.solver[FRAMES_KEY] = np.full(self._shape_x, np.nan)  # the rest frames: not from a step
        state.method = self.method
        return state

    def _theta_velocity(self, state: State) -> np.ndarray:
        tv = state.solver.get("edge_theta_v")
        if state.method != self.method or tv is None or tv.shape != state.edge_theta.shape:
            tv = np.zeros(state.edge_theta.shape)
            state.solver["edge_theta_v"] = tv
        return tv

    def _own(self, state: State) -> tuple[np.ndarray, np.ndarray]:
        """``state.solver``'s ``edge_theta_v`` (E,) and ``vertex_x_frames`` (N, 3), made (zero
        velocities; no frame record) where missing, malformed or of another method's state."""
        sv = state.solver
        other = state.method != self.method
        tv, fx = sv.get("edge_theta_v"), sv.get(FRAMES_KEY)
        if other or not _is_f64(tv, self._shape_e):
            tv = sv["edge_theta_v"] = np.zeros(self._shape_e)
        if other or not _is_f64(fx, self._shape_x):
            fx = sv[FRAMES_KEY] = np.full(self._shape_x, np.nan)
        return tv, fx

    # ---- deferred outputs ----------------------------------------------------------------------
    def _settle(self) -> None:
        """Fill the pending deferred output (:meth:`_fill`) before anything changes the buffers that hold it."""
        ref = self._pending
        if ref is not None:
            st = ref()
            # (deferred_by itself fills when a deferred field was re-bound; the fill checks self._pending)
            if st is not None and st.deferred_by(self) is not None:
                st.resolve()
            self._pending, self._pending_arrays = None, ()

    def _still_pending(self, state: State) -> bool:
        """The deferral of this simulator's last call is still pending on ``state`` (not filled,
        dropped or re-bound: :meth:`State.deferred_by`) and the solver's two arrays are still the
        ones deferred with it."""
        arrays = self._pending_arrays
        sv = state.solver
        return state.deferred_by(self) is not None and sv.get("edge_theta_v") is arrays[5] \
            and sv.get(FRAMES_KEY) is arrays[6]

    def _fill(self, state: State) -> None:
        """The deferred write-back of the last call on ``state``: the batch's buffers into its arrays
        (``vertex_x`` ..., the solver's ``edge_theta_v`` and ``vertex_x_frames``), bitwise what the
        call would have written."""
        ref, self._pending, self._pending_arrays = self._pending, None, ()
        if ref is None or ref() is not state:  # never write another state's values (cannot happen: _settle)
            raise RuntimeError("der-implicit: a deferred output's buffers were reused before it was filled")
        # read before any call went on from it: deferring saved nothing and this fill costs a few
        # microseconds, so the next calls write eagerly, 1, 2, 4, ... up to EAGER_AFTER_FILL calls
        # after each such deferral (a loop that reads after every call pays one fill in 65 calls),
        # then deferring is tried again; a deferral that some call went on from resets the count
        if self._resumed == 0:
            self._eager_streak = min(2 * self._eager_streak, EAGER_AFTER_FILL) if self._eager_streak else 1
            self._eager_left = self._eager_streak
        else:
            self._eager_streak = 0
        tv, fx = self._own(state)
        self._call(state.vertex_x, state.vertex_v, state.edge_theta, tv, state.edge_ref_d1, state.joint_ref_twist, fx,
                   self.batch.no_prev, False, 0, True, True)

    def _call(self, x, xv, theta, tv, d1, mref, fx, prev, have, nsteps, resume, defer) -> int:
        """The compiled driver on these arrays (parallel over rods where there are several); returns
        its failed step (0: none). ``nsteps = 0`` with ``resume``: only the deferred write-back."""
        b = self.batch
        if self._parallel:
            return b.advance(x, xv, theta, tv, d1, mref, nsteps, True, prev, have, fx, resume=resume, defer=defer)
        ib = b.ibuf  # one rod: the compiled call directly (the fewest microseconds per call)
        ib[I_HAVE_PREV] = have
        flags = (resume, defer)
        if self._flags != flags:  # (a NumPy item assignment costs ~0.2 us)
            ib[I_RESUME] = resume
            ib[I_DEFER] = defer
        self._flags = None
        failed = advance_serial(ib, b.fbuf, x, xv, theta, tv, d1, mref, fx, prev, nsteps, b.slerp_rest)
        self._flags = (True, True) if defer and not failed else flags  # (a deferring call sets I_RESUME)
        return failed

    def __getstate__(self):  # pickling: the pending output written first, no weak reference kept
        self._settle()
        return self.__dict__ | {"_pending": None, "_pending_arrays": ()}

    def advance(self, state: State, nsteps: int = 1) -> StepReport:
        # the base class's checks, on their slow path only (a call should cost a few microseconds)
        if nsteps.__class__ is not int or nsteps < 0:
            self._check_steps(state, nsteps)
        ref = self._pending
        if ref is not None and nsteps > 0 and ref() is state and self._still_pending(state):
            # this state's output of the last call is unwritten and unread: the buffers hold the state,
            # so the call writes it first (a failed step needs it there) and steps from the buffers
            # (no pack, no comparison); the deferral stays pending, now for the new values. The
            # driver's flags are normally still those the deferring call left (I_RESUME = I_DEFER = 1).
            t0 = perf_counter()
            b = self.batch
            self._resumed += 1
            x, xv, theta, d1, mref, tv, fx = self._pending_arrays
            if self._parallel:
                failed = b.advance(x, xv, theta, tv, d1, mref, nsteps, True, b.no_prev, False, fx, resume=True,
                                   defer=True)
            else:
                ib = b.ibuf
                if self._flags != (True, True):
                    ib[I_RESUME] = ib[I_DEFER] = 1
                    self._flags = (True, True)
                failed = advance_serial(ib, b.fbuf, x, xv, theta, tv, d1, mref, fx, b.no_prev, nsteps, b.slerp_rest)
            if failed:  # the call wrote the state it started from: nothing is pending any more
                self._pending, self._pending_arrays = None, ()
                state.drop_deferred()
                self._replay_and_fail(state, tv, nsteps, failed, t0, fx=fx)
            state.t += nsteps * self._dt
            state.method = self.method
            fb = b.fbuf
            return step_report(nsteps, True, "ok", int(fb[F_NEWTON_MAX]), 0, float(fb[F_RESIDUAL_MAX]),
                               perf_counter() - t0)
        sv = state.solver
        if nsteps == 0:
            return ok_report(0, 0.0)
        if ref is not None:
            self._settle()
        x, theta = state.vertex_x, state.edge_theta
        if x.shape != self._shape_x or theta.shape != self._shape_e:
            self._check_layout(state)
        tv, fx = sv.get("edge_theta_v"), sv.get(FRAMES_KEY)
        if state.method != self.method or tv is None or fx is None or tv.shape != self._shape_e \
                or fx.shape != self._shape_x:
            tv, fx = self._own(state)
        if self._contact is not None:
            return self._advance_contact(state, nsteps, tv)
        if not self._stepwise:
            return self._advance_plain(state, nsteps, x, state.vertex_v, theta, tv, state.edge_ref_d1,
                                       state.joint_ref_twist, fx)
        t0 = perf_counter()
        b = self.batch
        prev, have = self._prev(state) if self._bdf2 else (b.no_prev, False)
        iters, residual = 0, 0.0
        self._flags = None  # (RodBatch.advance sets the driver's flags)
        for s in range(nsteps):
            self._set_step_loads(state)
            failed = b.advance(state.vertex_x, state.vertex_v, state.edge_theta, tv, state.edge_ref_d1,
                               state.joint_ref_twist, 1, self._parallel, prev, have, fx)
            if failed:
                self._replay_and_fail(state, tv, nsteps, s + 1, t0, done=s, fx=fx)
            state.t += self._dt
            state.method = self.method
            if self._bdf2:
                have = True
                self._mark_prev(state)
            iters += int(b.fbuf[F_NEWTON_MAX])
            residual = float(b.fbuf[F_RESIDUAL_MAX])
        return StepReport(nsteps, newton_iters=iters, residual=residual, wall_s=time.perf_counter() - t0)

    def _advance_plain(self, state: State, nsteps: int, x, xv, theta, tv, d1, mref, fx) -> StepReport:
        """``nsteps`` steps in one compiled call (no per-step loads, no contact), from the state's
        arrays. Where the simulator defers (``self._defers``), the result is left in the buffers and
        the state's fields deferred to :meth:`_fill` (module docstring)."""
        t0 = perf_counter()
        b = self.batch
        prev, have = self._prev(state) if self._bdf2 else (b.no_prev, False)
        if self._eager_left:
            self._eager_left -= 1
            defer = False
        else:
            defer = self._defers
        if self._parallel:
            failed = b.advance(x, xv, theta, tv, d1, mref, nsteps, True, prev, have, fx, defer=defer)
        else:  # (_call, written out: this is the per-call path of a one-rod world)
            ib = b.ibuf
            ib[I_HAVE_PREV] = have
            flags = (False, defer)
            if self._flags != flags:
                ib[I_RESUME] = 0
                ib[I_DEFER] = defer
            self._flags = None
            failed = advance_serial(ib, b.fbuf, x, xv, theta, tv, d1, mref, fx, prev, nsteps, b.slerp_rest)
            self._flags = (True, True) if defer and not failed else flags
        if failed:
            self._replay_and_fail(state, tv, nsteps, failed, t0, prev=prev, have=have, fx=fx)
        state.t += nsteps * self._dt
        state.method = self.method
        if self._bdf2:
            self._mark_prev(state)
        if defer:
            if self._resumed:  # the last deferral was gone on from (then dropped or filled): it paid
                self._eager_streak = 0
            self._resumed = 0
            state.defer(DEFERRED, self._fill, self)
            self._pending = weakref.ref(state)
            self._pending_arrays = (x, xv, theta, d1, mref, tv, fx)
        fb = b.fbuf
        return step_report(nsteps, True, "ok", int(fb[F_NEWTON_MAX]), 0, float(fb[F_RESIDUAL_MAX]),
                           perf_counter() - t0)

    def _replay_and_fail(self, state: State, tv: np.ndarray, nsteps: int, failed: int, t0: float,
                         done: int | None = None, prev: np.ndarray | None = None, have: bool = False,
                         fx: np.ndarray | None = None):
        """Step ``failed`` of this call failed (the state is still at the call's start, or at step
        ``done`` of a stepwise call): redo the good steps, then raise :class:`SimulationError`."""
        b = self.batch
        self._flags = None  # (RodBatch.advance sets the driver's flags)
        rods = [int(r) for r in np.flatnonzero(b.rod_failed_step == (1 if done is not None else failed))]
        if done is None:
            done = failed - 1
            if done > 0:
                b.advance(state.vertex_x, state.vertex_v, state.edge_theta, tv, state.edge_ref_d1,
                          state.joint_ref_twist, done, self._parallel, prev if self._bdf2 else None, have, fx)
                state.t += done * self._dt
                state.method = self.method
                self._mark_prev(state)
        report = StepReport(done, False, "step failed", wall_s=time.perf_counter() - t0)
        self._fail(state, None, report, f"step {done + 1} of {nsteps} failed on rod(s) {rods[:10]} (non-finite "
                                        "unknowns, a degenerate edge, or a line search that found no descent; "
                                        "try a smaller dt or more Newton iterations)")

    def solve_static(self, state: State) -> StaticReport:
        """Static equilibrium per rod (:func:`rodlab.der_implicit.stepper.solve_static`, loads ramped in 8
        stages) under gravity, point forces at ``state.t`` and the wind at the current positions
        (no velocity drag); held unknowns stay where they are. Velocities are set to zero."""
        self._settle()
        self._check_layout(state)
        if self._contact is not None:
            raise ModelError("der-implicit: solve_static is not available in worlds with contact (obstacles or rod "
                             "contact); step with damping instead")
        t0 = time.perf_counter()
        if self._timed_forces or self.world.loads.wind is not None:
            self._set_step_loads(state, static=True)
        b = self.batch
        iters, worst, msgs = 0, 0.0, []
        for r, model in enumerate(self.models):
            d = slice(b.starts["dof"][r], b.starts["dof"][r + 1])
            m = with_params(model, fext=np.array(b.dof_fext[d]))
            x = np.array(state.rod_x(r))
            e = np.diff(x, axis=0)
            ln = np.linalg.norm(e, axis=1)
            if not np.all(ln > 0):
                msgs.append(f"rod {r}: zero-length edge")
                continue
            st = DERImplicitState(pack_dofs(x, state.rod_theta(r)), np.zeros(d.stop - d.start),
                                  np.array(state.rod_ref_d1(r)), e / ln[:, None], np.array(state.rod_ref_twist(r)),
                                  state.t)
            try:
                res = solve_static(m, st)
            except ValueError as exc:
                msgs.append(f"rod {r}: {exc}")
                continue
            iters += res.newton_iters
            worst = max(worst, res.grad_norm)
            if not res.success:
                msgs.append(f"rod {r}: {res.message}")
            state.rod_x(r)[...] = np.stack([st.q[0::4], st.q[1::4], st.q[2::4]], axis=1)
            state.rod_theta(r)[...] = st.q[3::4]
            state.rod_ref_d1(r)[...] = st.a1
            state.rod_ref_twist(r)[...] = st.mref
        if not msgs:
            state.vertex_v[...] = 0.0
            state.solver["edge_theta_v"] = np.zeros(self.world.n_edges)
            state.solver[FRAMES_KEY] = np.full(self._shape_x, np.nan)  # frames from the static solve
            state.solver.pop("bdf2_prev", None)
            state.solver.pop("bdf2_prev_at", None)
            state.method = self.method
        return StaticReport(not msgs, "converged" if not msgs else "; ".join(msgs), iters, worst,
                            time.perf_counter() - t0)

    def elastic_energy(self, state: State) -> float:
        """Stretching + bending + twisting energy [J] of every rod (the implicit-DER energies,
        :mod:`rodlab.der_implicit.energies`)."""
        self._settle()  # (the kernel uses the buffers as scratch)
        self._check_layout(state)
        return float(self.batch.elastic_energies(state.vertex_x, state.edge_theta, state.edge_ref_d1,
                                                 state.joint_ref_twist).sum())

    def energies(self, state: State) -> dict:
        """``kinetic`` (vertices' translation and the edge angles' rotation, ``1/2 sum m v^2`` over
        every unknown, the angle rates from ``state.solver["edge_theta_v"]``), ``elastic`` (of the
        chosen bending model), ``gravity`` (potential, zero at the origin) and their ``total`` [J].
        Point forces' and wind's work is not in ``total``."""
        self._check_layout(state)
        w = self.world
        tv = self._theta_velocity(state)
        m_theta = self.batch.dof_mass[self._theta_dof]
        kinetic = 0.5 * float(np.sum(w.vertex_mass[:, None] * state.vertex_v**2)) + 0.5 * float(np.sum(m_theta * tv**2))
        g = np.asarray(w.loads.gravity, dtype=float)
        gravity = -float(np.sum(w.vertex_mass * (state.vertex_x @ g)))
        elastic = self.elastic_energy(state)
        return {"kinetic": kinetic, "elastic": elastic, "gravity": gravity, "total": kinetic + elastic + gravity}


def _is_f64(a, shape) -> bool:
    """``a`` is a C-contiguous float64 array of ``shape`` (what the compiled driver takes)."""
    return a is not None and a.__class__ is np.ndarray and a.shape == shape and a.dtype == np.float64 \
        and a.flags.c_contiguous

