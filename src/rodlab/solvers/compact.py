"""``compact``: compact inextensible Cosserat rods (Zhao et al., "Compact inextensible Cosserat
rods", SQP implicit Euler) on a whole world.

Each rod is a root position plus one axis-angle per segment (Zhao et al., Sec. 2.1); a time step
minimizes the implicit-Euler objective (Eq. 8a) by SQP with O(n) products and PCG (Alg. 1), through
the compiled kernels of :mod:`rodlab.compact.sqp`. One compiled call (:func:`advance_rods`) loops
the steps of an ``advance`` and, in parallel, the rods, over flat per-rod workspaces.

Boundary conditions are Dirichlet conditions on the compact coordinates: a clamp of a rod's first
edge holds the root position and the rotation of segment 0, a pin of vertex 0 the root position.
A clamp of the first edge may move (``motion(t) -> (R, d)``, turning about the edge's rest midpoint
``c0``): each step sets the root to ``R (x0 - c0) + c0 + d`` and segment 0's frame to ``R`` times its
rest frame, for the end of the step (Zhao et al., Sec. 2.3: Dirichlet values of ``s``); the
motion is evaluated in Python once per step, before the compiled call.

Obstacles (the world's :class:`~rodlab.world.obstacles.Plane`, ``Sphere``, ``Cylinder`` and ``Capsule``) are
inequality constraints on every vertex, ``distance(x_j) >= rod radius``, solved by the active-set
SQP of Zhao et al. (Alg. 1 + Alg. 2, App. B: :class:`rodlab.compact.active_set.ConstrainedSolver`),
one rod after the other in Python: a world with obstacles steps far slower than one without.
The active set of each step is kept in the state (``state.solver["contact_active"]``), so the
next step starts from it.

Rod-rod and self contact (``world.contact.rods``) and point forces take a third path, one SQP
over every rod at once (:class:`rodlab.compact.contact_world.WorldContactSolver`, docs/
contact-compact.md): the edge-edge constraints of Zhao et al. (App. B, Eq. 32) with the
thickness ``delta`` = the sum of the two contact radii (``world.contact.thickness`` or each
rod's radius) next to the obstacle rows, discrete detection at the start of each step and
continuous detection (:func:`rodlab.contact.impacts`) after it, re-solving the step with the
pairs it finds. Every contact step reports ``contact_min_gap``, ``contacts_sum`` and
``contacts_max`` in its :class:`~rodlab.solvers.base.StepReport`. Clamps of other edges, sliding
clamps (``slide_axis``) and pins of other vertices take that path too: the clamped segment's
frame is a Dirichlet condition, the clamped or pinned vertex's position equality rows of the step
(:mod:`rodlab.compact.end_clamps`). Coulomb friction (``world.contact`` friction per rod pair,
``add_obstacle(..., friction=mu)``) takes that path too: sticking contacts are tangential equality
rows of the step, patches outside Coulomb's cone slide with the lagged kinetic force
(:mod:`rodlab.compact.friction`). Capsule obstacles are vertex rows like the cylinder's
(:class:`rodlab.compact.active_set.Capsule`). Triangle meshes, swivel clamps, closed rods and
wind are refused by name.

State layout (``state.method == "compact"``): ``vertex_x``/``vertex_v`` are the chain's positions
``p`` and velocities ``v``; ``state.solver`` holds ``s`` (N, 3) (per rod: root position, then the
axis-angles ``w_i`` relative to ``qref``, zero after every step), ``qref`` and ``q`` (E, 4) segment
quaternions (w, x, y, z) and ``omega`` (E, 3) body-frame angular velocities [rad/s]. The common
frame fields are ``edge_ref_d1`` = the first director of ``q`` (m1), ``edge_theta = 0``,
``joint_ref_twist`` from those frames; after time steps without contact they are deferred to
their first read (:meth:`rodlab.world.State.defer`: a loop of ``advance(state, 1)`` that nobody
reads in between pays no O(n) output per call; docs/compact.md, "Per-call cost"). In a world with obstacles
``state.solver["contact_active"]`` (K, 3) int64 lists the active contacts (rod, obstacle, vertex);
with rod contact or point forces it is (K, 4): ``(0, segment a, segment b, 0)`` for an edge-edge
row, ``(1, rod, obstacle, vertex)`` for an obstacle row.

With ``integrator="bdf2"`` ``state.solver`` also holds BDF2's history, the previous step's start:
``bdf2_x``, ``bdf2_v`` (N, 3), ``bdf2_q`` (E, 4), ``bdf2_omega`` (E, 3) and ``bdf2_dt`` (1,) [s]
(0: none; docs/integrators.md).

What a call did beyond :class:`~rodlab.solvers.base.StepReport` (linear solves, active contacts
per step) is in ``sim.last_call`` (:class:`CallStats`), overwritten by every call.
"""
from __future__ import annotations

import math
import time
from time import perf_counter
from typing import NamedTuple

import numpy as np

from .. import aot
from ..compact.batch import (F_A_D, F_A_IN, F_ATOL, F_DECAY, F_DT, F_NEWTON, F_RESIDUAL, F_RTOL, F_SATOL, F_SRTOL,
                              FSECTIONS, I_DRIVE, I_ESTART, I_FAILED, I_IOPT, I_JSTART, I_NDENSE, I_ND, I_NE,
                              I_NJ, I_NROD, I_NV, I_SECTIONS, I_SIOPT, I_STATE, I_VSTART, STATE_ARRAYS, _drive_root,
                              advance_rods, advance_rods_serial, arenas, write_frames)
from ..compact.chain import chain_forward, frames_from_polyline
from ..compact.end_clamps import needs_rows
from ..compact.energies import darboux, eval_energy
from ..compact.pcg import PRECONDITIONERS
from ..compact.sqp import CompactModel
from ..geometry.rotations import quat_matrices
from ..model import DAMPING_SCHEMES, ModelError, require
from ..motions import sample_motion
from ..world import State
from ..world.obstacles import Capsule, Cylinder, Plane, Sphere
from .base import Simulator, StaticReport, StepReport, UnsupportedFeature, step_report

# a Python call of a compiled kernel before any simulator exists: a handle that seeds its ahead-of-time
# entries, where built, into numba's dispatcher (rodlab.aot.kernel; bitwise the JIT's results)
_darboux = aot.kernel(darboux)

FEATURES = frozenset({"pinned vertices", "anisotropic bending", "rods given by stiffness", "prescribed clamp motion",
                      "obstacles", "rod contact", "point forces", "sliding clamps", "friction"})
PRECONDS = ("none", "diagonal", "block-diagonal", "hybrid", "direct")
CONTACT_PRECONDS = PRECONDS + ("exact",)
INTEGRATORS = ("backward-euler", "bdf2")
_HISTORY = (("bdf2_x", "v", 3), ("bdf2_v", "v", 3), ("bdf2_q", "e", 4), ("bdf2_omega", "e", 3))
_SOLVER_KEYS = ("s", "qref", "q", "omega")
FRAME_FIELDS = ("edge_ref_d1", "edge_theta", "joint_ref_twist")  # written by write_frames, deferred by advance


# ---------------------------------------------------------------------------------------------
# the world's rods as compact models
# ---------------------------------------------------------------------------------------------
def compact_model_of(world, r: int) -> CompactModel:
    """Rod ``r`` of ``world`` as a :class:`rodlab.compact.CompactModel`.

    Rest polyline and rest frames (``rods[r].rest_d1`` as d1, the segment as d3); rest Darboux
    vectors from the rest frames. A rod with a circular material (``world.rod_material[r]``) gets
    masses, segment inertia ``Jr = rho l (I, I, 2I)`` and hinge stiffness ``(EI, EI, G 2I)`` exactly
    as :meth:`CompactModel.from_polyline` computes them. A rod given by stiffness gets the lumped
    vertex masses of the rod and per hinge the mean of its two edges' stiffness, ``Kh = (EI_1,
    EI_2, GJ)`` with ``EI_1`` resisting rotation about d1 = m1 (the world's
    ``bending_stiffness[:, 1]``) and ``EI_2`` about m2 (``bending_stiffness[:, 0]``); its segment
    inertia ``Jr = lambda l (r^2/4, r^2/4, r^2/2)`` treats the section as a circle of the rod's
    ``radius`` (0.01 m unless the rod was given one: it only sets this rotational inertia).
    """
    rod = world.rods[r]
    p = np.ascontiguousarray(rod.rest_positions, dtype=float)
    require(rod.n_vertices >= 3, f"method compact needs rods of at least 3 vertices (rod {r} has {rod.n_vertices})")
    lengths = np.ascontiguousarray(rod.rest_lengths)
    q = frames_from_polyline(p, rod.rest_d1)
    lbar = 0.5 * (lengths[:-1] + lengths[1:])
    mat = world.rod_material[r]
    if mat is not None:
        # a circular material rod: the formulas of CompactModel.from_polyline, operation for
        # operation, so a world rod steps bit for bit like the first-wave drivers' models
        area = math.pi * mat.radius**2
        inertia = math.pi * mat.radius**4 / 4.0
        seg_mass = mat.rho * area * lengths
        masses = np.zeros(len(lengths) + 1)
        masses[:-1] += 0.5 * seg_mass
        masses[1:] += 0.5 * seg_mass
        Jr = mat.rho * lengths[:, None] * np.array([inertia, inertia, 2 * inertia])[None, :]
        Kh = np.tile([mat.E * inertia, mat.E * inertia, mat.G * 2 * inertia], (len(lbar), 1))
        E, G, rho = mat.E, mat.G, mat.rho
    else:
        lam = np.asarray(rod.linear_density, dtype=float)
        rad2 = float(rod.radius) ** 2
        masses = rod.vertex_masses
        Jr = (lam * lengths)[:, None] * np.array([0.25 * rad2, 0.25 * rad2, 0.5 * rad2])[None, :]
        B = np.asarray(rod.bending_stiffness, dtype=float)
        T = np.asarray(rod.twisting_stiffness, dtype=float)
        edge_k = np.stack([B[:, 1], B[:, 0], T], axis=1)
        Kh = 0.5 * (edge_k[:-1] + edge_k[1:])
        E, G, rho = float(B.max()), float(T.max()), float(lam.max())
    ubar = np.empty((len(lbar), 3))
    _darboux(q, lbar, ubar)
    arrs = [np.ascontiguousarray(a, dtype=float) for a in (lengths, masses, Jr, lbar, Kh, ubar, p, q)]
    for a in arrs:
        a.setflags(write=False)
    return CompactModel(*arrs, radius=float(rod.radius), E=float(E), G=float(G), rho=float(rho))


def dirichlet_mask(world, r: int) -> np.ndarray:
    """Coordinates of ``s`` (n, 3) held fixed for rod ``r``: a clamp of edge ``e`` (moving, sliding
    or not) -> the rotation of segment ``e`` (``s[e + 1]``), and for edge 0 unless it slides the
    root position; a pin of vertex 0 -> the root position. The positions of other clamps and pins
    are equality rows of the step (:mod:`rodlab.compact.end_clamps`)."""
    rod = world.rods[r]
    fixed = np.zeros((rod.n_vertices, 3), dtype=bool)
    for clamp in rod.boundary.clamps:
        edge = clamp.edge % rod.n_edges
        fixed[edge + 1] = True
        if edge == 0 and clamp.slide_axis is None:
            fixed[0] = True
    for vertex in rod.boundary.fixed_vertices:
        if vertex % rod.n_vertices == 0:
            fixed[0] = True
    return fixed


# ---------------------------------------------------------------------------------------------
# the simulator
# ---------------------------------------------------------------------------------------------
class CallStats(NamedTuple):
    """What the last ``advance`` / ``solve_static`` call did, beyond its report: ``steps`` taken,
    ``linear_solves`` (PCG solves: one per Newton iteration without obstacles, one per constraint
    row and iteration with them), ``stalled_steps`` (rod steps kept after a PCG or line-search
    failure), and with obstacles the active contacts (rod vertices held on an obstacle surface):
    ``contacts`` after the last step, ``contacts_sum`` summed over the call's steps (divide by
    ``steps`` for the mean), ``contacts_max`` the most at any step; ``qp_iterations`` active-set
    iterations (Zhao et al., Alg. 2) summed; ``max_violation`` [m] the worst constraint violation
    after a step."""

    steps: int = 0
    linear_solves: int = 0
    stalled_steps: int = 0
    contacts: int = 0
    contacts_sum: int = 0
    contacts_max: int = 0
    qp_iterations: int = 0
    max_violation: float = 0.0


def contact_obstacle(obstacle):
    """The active-set constraint (:mod:`rodlab.compact.active_set`) of a world obstacle: a plane
    ``n . (x - point) >= 0`` is a ``Floor`` at offset ``n . point``; spheres, (infinite)
    cylinders and capsules map one to one (vertex rows). Meshes raise :class:`UnsupportedFeature`."""
    from ..compact import active_set as AS

    if isinstance(obstacle, Plane):
        return AS.Floor(tuple(obstacle.normal), float(obstacle.normal @ obstacle.point))
    if isinstance(obstacle, Sphere):
        return AS.Sphere(tuple(obstacle.center), float(obstacle.radius))
    if isinstance(obstacle, Cylinder):
        return AS.Cylinder(tuple(obstacle.point), tuple(obstacle.axis), float(obstacle.radius))
    if isinstance(obstacle, Capsule):
        return AS.Capsule(tuple(obstacle.a), tuple(obstacle.b), float(obstacle.radius))
    kind = {"TriangleMesh": "triangle mesh"}.get(type(obstacle).__name__, type(obstacle).__name__)
    raise UnsupportedFeature(f"method compact does not support {kind} obstacles (plane, sphere, cylinder and capsule "
                             f"only; see the feature table in docs/world.md)")


class CompactSimulator(Simulator):
    """Compact inextensible Cosserat rods of Zhao et al. on a world (module docstring).

    Options: ``dt`` [s] (default 0.01); ``newton_iters`` (SQP iterations per step at most; 5, Zhao
    et al., Sec. 4); ``tol`` (stop when ``|b|_2`` < tol, 1e-5); ``precond`` (none, diagonal,
    block-diagonal, hybrid: the paper's block-tridiagonal hybrid, default; direct: dense Cholesky,
    O(n^3), a baseline) of the compiled path and of the obstacle-only path; ``contact_precond``
    (the same and ``exact``, the default: ``A``'s exact O(n) inverse, :mod:`rodlab.compact.augmented`,
    so PCG stops after one iteration) of the joint contact solver (rod contact, point forces,
    clamp rows, friction: one solve per working-set row and SQP iteration); ``pcg_rtol``,
    ``pcg_atol`` (PCG stops at ``|r| <= max(atol, rtol |rhs|)``; 0 and 1e-7 as in the paper),
    ``pcg_maxiter``, ``line_search_steps``; ``tension_stiffness`` (add the PSD tension part of the
    term Eq. 12 drops; off, as in the paper); ``recenter_every_iteration``; ``warm_start`` (start
    Newton from the constant-velocity prediction); ``damping_scheme`` (implicit or exponential,
    docs/damping.md); ``static_newton_iters`` (300) and ``static_rtol`` (1e-9: the static solve
    stops at ``|b| < static_rtol max(1e-6, M |g| L)`` per rod, or ``mean(GJ, EI)/L`` scale without
    gravity). With obstacles (active-set driver, which starts Newton from the last step and
    re-centres once per step, so ``warm_start`` and ``recenter_every_iteration`` do not apply):
    ``contact_proximity`` [m] (vertices nearer than this to an obstacle, and with rod contact
    segment pairs whose gap is below it, at the start of a step are the step's contact
    candidates; None: ``2 r + 3 |v|_max dt + l_max / 2``, the velocity term capped at ``2 l_max``
    for segment pairs) and ``contact_max_qp_iterations`` (100). With rod contact or point forces
    also ``contact_ccd_passes`` (4: re-solves of a step after continuous detection found pairs
    that were not candidates; 0 = discrete detection only, as in the paper) and
    ``contact_newton_iters`` (30: SQP iterations at most while a candidate row is violated by more
    than 1e-3 of the smallest radius; ``newton_iters`` otherwise). With friction
    ``friction_eps_v`` [m/s] (1e-4: slip speed below which the kinetic friction potential is
    mollified; sticking is exact whatever its value). ``integrator``:
    ``"backward-euler"`` (Zhao et al.'s implicit Euler, the default) or ``"bdf2"`` (second order:
    the same SQP on BDF2's incremental potential, docs/integrators.md; its history, the previous
    step's start, lives in ``state.solver["bdf2_*"]``, and a step without a history of this ``dt``
    is one backward-Euler step; refused with obstacles, rod contact or point forces).

    A step whose SQP stops on a PCG or line-search failure is kept (as the first-wave drivers did)
    and reported (``StepReport.success`` false, ``message``); a non-finite step raises
    :class:`rodlab.solvers.SimulationError` with every rod back at the last good step.
    """

    method = "compact"
    supports = FEATURES
    options = {"newton_iters": 5, "tol": 1e-5, "precond": "hybrid", "pcg_rtol": 0.0, "pcg_atol": 1e-7,
               "pcg_maxiter": 2000, "line_search_steps": 30, "tension_stiffness": False,
               "recenter_every_iteration": False, "warm_start": True, "damping_scheme": "implicit",
               "static_newton_iters": 300, "static_rtol": 1e-9, "contact_proximity": None,
               "contact_max_qp_iterations": 100, "contact_ccd_passes": 4,
               "contact_newton_iters": 30, "contact_precond": "exact", "integrator": "backward-euler",
               "friction_eps_v": 1e-4}

    def _setup(self, dt):
        w, o = self.world, self.opts
        self._dt = float(dt) if dt is not None else 0.01
        require(o["precond"] in PRECONDS, f"precond must be one of {', '.join(PRECONDS)} (got {o['precond']!r})")
        require(o["contact_precond"] in CONTACT_PRECONDS, f"contact_precond must be one of {', '.join(CONTACT_PRECONDS)} "
                                                         f"(got {o['contact_precond']!r})")
        require(isinstance(o["integrator"], str) and o["integrator"] in INTEGRATORS,
                f"integrator must be one of {', '.join(INTEGRATORS)} (got {o['integrator']!r})")
        self._integ = INTEGRATORS.index(o["integrator"])
        if self._integ:
            for what, present in (("obstacles", bool(w.obstacles)), ("rod contact", bool(w.contact.rods)),
                                  ("point forces", bool(w.loads.point_forces)),
                                  ("clamps or pins away from the root, or sliding clamps", needs_rows(w))):
                if present:
                    raise UnsupportedFeature(f"method compact supports integrator={o['integrator']!r} only without "
                                             f"{what} (the contact solver steps by backward Euler: use "
                                             f"integrator='backward-euler')")
        ccd = o["contact_ccd_passes"]
        require(isinstance(ccd, (int, np.integer)) and not isinstance(ccd, bool) and ccd >= 0,
                f"contact_ccd_passes must be an integer >= 0 (got {ccd!r})")
        for name in ("newton_iters", "pcg_maxiter", "line_search_steps", "static_newton_iters",
                     "contact_max_qp_iterations", "contact_newton_iters"):
            require(isinstance(o[name], (int, np.integer)) and not isinstance(o[name], bool) and o[name] >= 1,
                    f"{name} must be an integer >= 1 (got {o[name]!r})")
        for name, positive in (("tol", True), ("static_rtol", True), ("pcg_rtol", False), ("pcg_atol", False)):
            val = o[name]
            ok = isinstance(val, (int, float)) and math.isfinite(val) and (val > 0 if positive else val >= 0)
            require(ok, f"{name} must be {'> 0' if positive else '>= 0'} (got {val!r})")
        eps_v = o["friction_eps_v"]
        require(isinstance(eps_v, (int, float)) and not isinstance(eps_v, bool) and math.isfinite(eps_v) and eps_v > 0,
                f"friction_eps_v must be > 0 m/s (got {eps_v!r})")
        prox = o["contact_proximity"]
        require(prox is None or (isinstance(prox, (int, float)) and not isinstance(prox, bool) and math.isfinite(prox)
                                 and prox >= 0), f"contact_proximity must be None or >= 0 m (got {prox!r})")
        require(o["damping_scheme"] in DAMPING_SCHEMES,
                f"damping_scheme must be one of {', '.join(DAMPING_SCHEMES)} (got {o['damping_scheme']!r})")
        self._obstacles = tuple(contact_obstacle(ob) for ob in w.obstacles)
        self.models = [compact_model_of(w, r) for r in range(w.n_rods)]
        masks = [dirichlet_mask(w, r) for r in range(w.n_rods)]
        N, E, J, R = w.n_vertices, w.n_edges, w.n_joints, w.n_rods
        # moving root clamps: (rod, motion) and their rest root x0, edge midpoint c0, segment-0 quaternion q0
        self._drives = []
        rod_drive = np.full(R, -1, dtype=np.int64)
        rest = []
        for r, rod in enumerate(w.rods):
            for c in rod.boundary.clamps:
                if c.motion is not None and c.edge % rod.n_edges == 0 and c.slide_axis is None:  # the others: end_clamps
                    x0 = np.array(rod.rest_positions[:2], dtype=float)
                    rod_drive[r] = len(self._drives)
                    self._drives.append((r, c.motion))
                    rest.append((x0[0], x0.mean(axis=0), self.models[r].rest_q[0]))
        D = len(rest)
        self._no_drive = (np.zeros((1, 0, 3, 3)), np.zeros((1, 0, 3)))
        nd = 3 * max(m.n for m in self.models) if o["precond"] == "direct" else 1
        o_int = I_SECTIONS + len(FSECTIONS)  # the int sections follow the section table in ibuf
        header = {I_NROD: R, I_NV: N, I_NE: E, I_NJ: J, I_ND: D, I_NDENSE: nd, I_VSTART: o_int,
                  I_ESTART: o_int + R + 1, I_JSTART: o_int + 2 * (R + 1), I_DRIVE: o_int + 3 * (R + 1),
                  I_FAILED: o_int + 3 * (R + 1) + R}
        ib, fb, f = arenas({"v": N, "e": E, "j": J, "r": R, "d": D, "o": 1, "n": nd}, header)
        ib = np.concatenate([ib, w.rod_vertex_start, w.rod_edge_start, w.rod_joint_start, rod_drive,
                             np.zeros(R)]).astype(np.int64)
        self._ib, self._fb, self._f = ib, fb, f
        self._vstart = ib[o_int:o_int + R + 1]
        self._estart = ib[o_int + R + 1:o_int + 2 * (R + 1)]
        self._jstart = ib[o_int + 2 * (R + 1):o_int + 3 * (R + 1)]
        self._rod_drive, self._failed = ib[o_int + 3 * (R + 1):o_int + 3 * (R + 1) + R], ib[header[I_FAILED]:]
        for name in ("lengths", "masses", "Jr", "lbar", "Kh", "ubar"):
            f[name][...] = np.concatenate([getattr(m, name) for m in self.models])
        f["free"][...] = ~np.concatenate(masks)  # 1: free, 0: held
        self._gravity = f["gravity"][0]
        self._gravity[:] = w.loads.gravity
        self._damping = float(w.loads.damping)
        f["tol"][:] = float(o["tol"])
        g = float(np.linalg.norm(self._gravity))
        scale = np.array([float(m.masses.sum()) * g * float(m.lengths.sum()) if g > 0
                          else float(m.Kh.mean()) / float(m.lengths.sum()) for m in self.models])
        f["static_tol"][:] = float(o["static_rtol"]) * np.maximum(1e-6, scale)
        iopt = [PRECONDITIONERS[o["precond"]], o["newton_iters"], o["pcg_maxiter"], o["line_search_steps"],
                int(bool(o["tension_stiffness"])), int(bool(o["recenter_every_iteration"])), int(bool(o["warm_start"]))]
        ib[I_IOPT:I_IOPT + 7] = iopt
        # the static solve: its own iteration limit, the tension stiffness and re-centering of the
        # first-wave static solve, no warm start
        ib[I_SIOPT:I_SIOPT + 7] = [iopt[0], o["static_newton_iters"], iopt[2], iopt[3], 1, 1, 0]
        dt = self._dt
        exponential = o["damping_scheme"] == "exponential"
        fb[F_DT], fb[F_A_IN] = dt, 1.0 / dt**2
        fb[F_A_D] = 0.0 if exponential else self._damping / dt
        fb[F_DECAY] = math.exp(-self._damping * dt) if (exponential and self._damping > 0) else 1.0
        fb[F_RTOL], fb[F_ATOL], fb[F_SRTOL], fb[F_SATOL] = float(o["pcg_rtol"]), float(o["pcg_atol"]), 1e-10, 0.0
        for k, name in enumerate(("drive_x0", "drive_c0", "drive_q0")):
            f[name][...] = np.array([e[k] for e in rest], dtype=float).reshape(f[name].shape)
        self._drive_rest = (f["drive_x0"], f["drive_c0"], f["drive_q0"])
        self._driver = advance_rods if R > 1 else advance_rods_serial
        self._dense = (f["A"], f["L"]) if o["precond"] == "direct" else None  # the driver's dense storage
        # the driver's and the frame fill's ahead-of-time entries (rodlab.aot, where built), inserted
        # into their numba dispatchers: numba's type dispatch runs an entry for a call of its exact
        # signature (an int64 step count, this simulator's ib/fb, drive/history/dense None), the JIT
        # for any other (a numpy int32 step count, a read-only frame array, several rods' parallel driver)
        aot.seed(self._driver)
        aot.seed(write_frames)
        self._checked = None  # the arrays of the last state checked by _own (advance's fast path)
        self._frames = None  # the arrays of the frame fields last deferred, while _checked holds them
        self._contact = None
        self._joint = None
        self._cgeom = None
        joint = bool(w.contact.rods or w.loads.point_forces or needs_rows(w) or w.contact.has_friction)
        if self._obstacles or joint:
            from ..compact.active_set import ConstrainedSolver
            from ..compact.sqp import SolverOptions

            # the joint solver (one SQP over every rod) takes contact_precond; obstacles alone keep
            # precond (the per-rod active-set driver of the first wave)
            sopts = SolverOptions(precond=o["contact_precond"] if joint else o["precond"], max_newton=int(o["newton_iters"]), tol=float(o["tol"]),
                                  pcg_rtol=float(o["pcg_rtol"]), pcg_atol=float(o["pcg_atol"]),
                                  pcg_maxiter=int(o["pcg_maxiter"]), line_search_steps=int(o["line_search_steps"]),
                                  tension_stiffness=bool(o["tension_stiffness"]))
            self._contact = [ConstrainedSolver(md, sopts, fixed=masks[r], obstacles=self._obstacles,
                                               gravity=tuple(self._gravity), damping=self._damping,
                                               proximity=None if prox is None else float(prox),
                                               max_qp_iterations=int(o["contact_max_qp_iterations"]),
                                               damping_scheme=o["damping_scheme"])
                             for r, md in enumerate(self.models)]
            from ..compact.contact_world import WorldContactSolver, contact_geometry

            if joint:  # rod contact, point forces, clamp rows or friction: one SQP over every rod
                self._joint = WorldContactSolver(w, self._contact, rods=w.contact.rods,
                                                 proximity=None if prox is None else float(prox),
                                                 max_qp_iterations=int(o["contact_max_qp_iterations"]),
                                                 ccd_passes=int(ccd), max_newton=int(o["contact_newton_iters"]),
                                                 friction_eps_v=float(eps_v))
                self._cgeom = self._joint.geometry
            else:
                self._cgeom = contact_geometry(w)
        self._last = CallStats()

    # ---- state -------------------------------------------------------------------------------
    def initial_state(self) -> State:
        w = self.world
        state = State.zeros_for(w)
        s = np.zeros((w.n_vertices, 3))
        s[w.rod_vertex_start[:-1]] = w.vertex_rest_x[w.rod_vertex_start[:-1]]
        q = np.ascontiguousarray(np.concatenate([m.rest_q for m in self.models]))
        state.solver = {"s": s, "qref": q.copy(), "q": q, "omega": np.zeros((w.n_edges, 3))}
        if self._contact is not None:
            state.solver["contact_active"] = np.zeros((0, 4 if self._joint is not None else 3), dtype=np.int64)
        state.method = self.method
        self._write_common(state)
        return state

    def _own(self, state: State) -> dict:
        """The compact unknowns of ``state``; a state of another method is converted from its common
        fields (positions, velocities, material frames; the segments' angular velocity from the
        tangents' rates, without spin about them). Checks the nine arrays the driver steps
        (``batch.STATE_ARRAYS``: shape, C-contiguous float64, writeable, aligned) and records
        their addresses in ``ibuf`` for it (docs/compact.md, "Per-call cost")."""
        w = self.world
        shapes = {"s": (w.n_vertices, 3), "qref": (w.n_edges, 4), "q": (w.n_edges, 4), "omega": (w.n_edges, 3)}
        if state.method == self.method:
            for k, shape in shapes.items():
                a = state.solver.get(k)
                if a is None or a.shape != shape:
                    raise ModelError(f"state.solver[{k!r}] of a compact state must have shape {shape} "
                                     f"(got {None if a is None else a.shape})")
                if not (a.flags.c_contiguous and a.dtype == np.float64):
                    state.solver[k] = np.ascontiguousarray(a, dtype=np.float64)
        else:
            m1, _ = state.material_frames()
            s = np.zeros((w.n_vertices, 3))
            q = np.empty((w.n_edges, 4))
            omega = np.empty((w.n_edges, 3))
            for r, md in enumerate(self.models):
                x = np.array(state.rod_x(r))
                qr = frames_from_polyline(x, m1[w.rod_edges(r)])
                p = np.empty_like(x)
                chain_forward(np.vstack([x[:1], np.zeros((md.m, 3))]), md.lengths, qr, p, np.empty((md.m, 4)),
                              np.empty((md.m, 3, 3)), np.empty((md.m, 4, 3)), False)
                s[w.rod_vertex_start[r]] = x[0]
                state.rod_x(r)[...] = p
                e = np.diff(x, axis=0)
                t = e / np.linalg.norm(e, axis=1)[:, None]
                w_world = np.cross(t, np.diff(state.rod_v(r), axis=0)) / np.linalg.norm(e, axis=1)[:, None]
                R = quat_matrices(qr)
                omega[w.rod_edges(r)] = np.einsum("kji,kj->ki", R, w_world)
                q[w.rod_edges(r)] = qr
            state.solver = {"s": s, "qref": q.copy(), "q": q, "omega": omega}
            state.method = self.method
        for name, shape in (("vertex_x", (w.n_vertices, 3)), ("vertex_v", (w.n_vertices, 3)),
                            ("edge_ref_d1", (w.n_edges, 3)), ("edge_theta", (w.n_edges,)),
                            ("joint_ref_twist", (w.n_joints,))):
            a = getattr(state, name)
            require(a.shape == shape and a.flags.c_contiguous and a.dtype == np.float64,
                    f"state.{name} must be a C-contiguous float64 array of shape {shape} (got {a.shape})")
        sv = state.solver
        arrays = tuple(sv[name] if k < 4 else getattr(state, name) for k, (name, _, _) in enumerate(STATE_ARRAYS))
        for (name, _, _), a in zip(STATE_ARRAYS, arrays):
            where = f"state.solver[{name!r}]" if name in shapes else f"state.{name}"
            require(a.flags.writeable and a.flags.aligned, f"{where} must be a writeable, aligned array (it is "
                                                           f"{'read-only' if not a.flags.writeable else 'unaligned'})")
        # the compiled driver reads and writes these arrays at their addresses (batch._state_views):
        # _checked keeps them alive while their addresses are in ib, and advance calls the driver
        # only after checking (_own_fast) that the state still holds these very arrays
        self._ib[I_STATE:I_STATE + len(STATE_ARRAYS)] = [a.ctypes.data for a in arrays]
        self._checked = (sv, *arrays)
        self._frames = None
        return sv

    def _own_fast(self, state: State, frames: dict | None) -> tuple[dict, bool]:
        """:meth:`_own` in about half a microsecond when ``state`` holds the very arrays it checked
        last (an array's shape, dtype and layout cannot change in place), else :meth:`_own`.
        ``frames``: the frame fields this simulator left unwritten on ``state``
        (``state.deferred_by(self)``), or None; the dict of the last deferral (:attr:`_frames`)
        holds the checked frame arrays. Returns ``(state.solver, whether that deferral is still
        pending)``: the slow path fills it first (from the arrays of the call that deferred it)."""
        c, sv = self._checked, state.solver
        if frames is None or frames is not self._frames:
            if frames is None:
                d1, theta, twist = state.edge_ref_d1, state.edge_theta, state.joint_ref_twist
            else:
                d1, theta, twist = frames["edge_ref_d1"], frames["edge_theta"], frames["joint_ref_twist"]
            same = c is not None and c[7] is d1 and c[8] is theta and c[9] is twist
        else:
            same = True
        if (same and c[0] is sv and state.method == "compact" and c[1] is sv.get("s") and c[2] is sv.get("qref")
                and c[3] is sv.get("q") and c[4] is sv.get("omega") and c[5] is state.vertex_x
                and c[6] is state.vertex_v):
            return sv, frames is not None
        state.resolve()
        self._check_layout(state)
        return self._own(state), False

    def _defer_frames(self, state: State) -> None:
        """Leave the frame fields (``edge_ref_d1``, ``edge_theta``, ``joint_ref_twist``) of the call
        just made unwritten until they are read (:meth:`State.defer`, docs/world.md "Deferred
        outputs"): the fill is :func:`write_frames` on the arrays this call stepped (those recorded
        by :meth:`_own`), the computation the driver would have made at the call's end. The next
        ``advance`` of this simulator finds them unread (``state.deferred_by``) and leaves them
        pending, so a loop of ``advance(state, 1)`` pays no O(n) output per call."""
        _, _, _, q, _, p, _, d1, theta, twist = self._checked
        vs, es, js = self._vstart, self._estart, self._jstart

        def fill(_state):
            write_frames(vs, es, js, p, q, d1, theta, twist)

        state.defer(FRAME_FIELDS, fill, self)
        self._frames = state.deferred_by(self)

    def _write_common(self, state: State) -> None:
        write_frames(self._vstart, self._estart, self._jstart, state.vertex_x, state.solver["q"],
                             state.edge_ref_d1, state.edge_theta, state.joint_ref_twist)

    # ---- stepping ----------------------------------------------------------------------------
    def _drive_targets(self, t: float, nsteps: int, static: bool) -> tuple[np.ndarray, np.ndarray]:
        """Rotations (nsteps, D, 3, 3) and translations (nsteps, D, 3) of the moving clamps at the
        end of each of the next ``nsteps`` steps from time ``t`` (static: at ``t``)."""
        D = len(self._drives)
        if D == 0:
            return self._no_drive
        K = max(nsteps, 1)
        times = np.empty(K)
        for k in range(K):
            if not static:
                t += self._dt  # accumulated as state.t is, so the targets' times are the states' times
            times[k] = t
        dR, dd = np.empty((K, D, 3, 3)), np.empty((K, D, 3))
        for d, (r, motion) in enumerate(self._drives):  # every time at once (rodlab.motions)
            dR[:, d], dd[:, d] = sample_motion(motion, times, f"clamp motion of rod {r}")
        require(bool(np.isfinite(dR).all() and np.isfinite(dd).all()),
                "clamp motion must return a finite rotation and translation")
        return dR, dd

    def _run(self, state: State, nsteps: int, static: bool) -> tuple[int, int, int, int, float, float]:
        """``nsteps`` steps (or one static solve) of every rod in one compiled call; the common
        frame fields are written by the static solve and deferred after time steps
        (:meth:`_defer_frames`); returns (steps done, Newton iterations, PCG iterations,
        stalled steps, worst residual, wall time [s])."""
        frames = None if static else state.deferred_by(self)
        sv, pending = self._own_fast(state, frames)
        drive = self._drive_targets(state.t, nsteps, static) if self._drives else None
        if self._integ:
            hist = self._history(sv)
        else:  # backward Euler keeps no history; a BDF2 history left in sv is marked stale (bdf2_dt = 0)
            hist = None
            stale = sv.get("bdf2_dt")
            if stale is not None:
                stale[...] = 0.0
        t0 = perf_counter()
        done, newton, linear, stalled, residual = self._driver(nsteps, static, self._ib, self._fb, drive, hist,
                                                               self._dense)
        wall = perf_counter() - t0
        if not static:
            dt = self._dt
            for _ in range(done):
                state.t += dt  # step by step: t as a loop of advance(state, 1) calls makes it
            if not pending:
                self._defer_frames(state)
        self._last = done
        return done, newton, linear, stalled, residual, wall

    def _history(self, sv: dict) -> tuple:
        """BDF2's history in ``sv`` (the previous step's start: ``bdf2_x``, ``bdf2_v`` (N, 3),
        ``bdf2_q`` (E, 4), ``bdf2_omega`` (E, 3), and ``bdf2_dt`` (1,) its step [s], 0 = none);
        missing or malformed entries are replaced by an empty history (the next step is then a
        backward-Euler step)."""
        w = self.world
        rows = {"v": w.n_vertices, "e": w.n_edges}
        out = []
        ok = True
        for key, entity, cols in _HISTORY:
            a = sv.get(key)
            if (a is None or a.__class__ is not np.ndarray or a.shape != (rows[entity], cols) or a.dtype != np.float64
                    or not a.flags.c_contiguous):
                a = sv[key] = np.zeros((rows[entity], cols))
                ok = False
            out.append(a)
        a = sv.get("bdf2_dt")
        if a is None or a.__class__ is not np.ndarray or a.shape != (1,) or a.dtype != np.float64 or not ok:
            a = sv["bdf2_dt"] = np.zeros(1)
        out.append(a)
        return tuple(out)

    @property
    def last_call(self) -> CallStats:
        """What the last ``advance`` / ``solve_static`` call did (:class:`CallStats`)."""
        last = self._last
        if isinstance(last, CallStats):
            return last
        sums = self._fb[F_NEWTON:F_RESIDUAL].tolist()  # Newton, PCG, solves, stalled steps
        return CallStats(int(last), int(sums[2]), int(sums[3]))

    def _run_contact(self, state: State, nsteps: int) -> tuple[int, float, int, int, float, str]:
        """``nsteps`` steps of every rod by the active-set SQP (:class:`ConstrainedSolver`, Python).
        Returns (steps done, wall time [s], Newton iterations, PCG iterations, last residual,
        failure description or "")."""
        from ..compact.contact_world import obstacle_min_gap
        from ..compact.sqp import CompactState

        sv = self._own(state)
        w, dt = self.world, self._dt
        arrays = (sv["s"], sv["qref"], state.vertex_x, sv["q"], state.vertex_v, sv["omega"])
        active = np.asarray(sv.get("contact_active", np.zeros((0, 3), dtype=np.int64)), dtype=np.int64).reshape(-1, 3)
        prev = [{("i", int(o), int(j)) for rr, o, j in active if rr == r} for r in range(w.n_rods)]
        views = []
        for r in range(w.n_rods):
            vs, es = w.rod_vertices(r), w.rod_edges(r)
            views.append(tuple(a[sl] for a, sl in zip(arrays, (vs, es, vs, es, vs, es))))
        newton = pcg = solves = stalled = qp = 0
        c_sum = c_max = c_last = 0
        viol, resid, why, done = 0.0, 0.0, "", 0
        gap = math.inf
        t0 = time.perf_counter()
        for k in range(nsteps):
            backup = [np.array(a) for a in arrays]
            drive_R, drive_shift = self._drive_targets(state.t, 1, False)
            count = 0
            for r, solver in enumerate(self._contact):
                s_r, qref_r, p_r, q_r, v_r, om_r = views[r]
                d = int(self._rod_drive[r])
                if d >= 0:
                    _drive_root(s_r, qref_r, drive_R[0, d], drive_shift[0, d], *(a[d] for a in self._drive_rest))
                solver._active_prev = prev[r]  # the active set lives in the state, not the solver
                st = solver.step(CompactState(state.t, s_r, qref_r, p_r, q_r, v_r, om_r), dt)
                if not np.all(np.isfinite(solver.ws.p)):
                    why = f"non-finite step of rod {r}"
                    break
                prev[r] = set(solver._active_prev)
                newton += st.newton_iters
                pcg += st.pcg_iters
                solves += st.solves
                stalled += 0 if st.success else 1
                qp += st.qp_iterations
                count += st.active_constraints
                viol = max(viol, st.max_violation)
                resid = st.residual
            if why:
                for a, b in zip(arrays, backup):
                    a[...] = b
                break
            state.t += dt
            done += 1
            c_sum += count
            c_max = max(c_max, count)
            c_last = count
            gap = min(gap, obstacle_min_gap(self._cgeom, state.vertex_x))
        wall = time.perf_counter() - t0
        self._gap = gap
        rows = [(r, key[1], key[2]) for r in range(w.n_rods) for key in sorted(prev[r])]
        sv["contact_active"] = np.array(rows, dtype=np.int64).reshape(-1, 3)
        self._write_common(state)
        self._last = CallStats(done, solves, stalled, c_last, c_sum, c_max, qp, viol)
        return done, wall, newton, pcg, resid, why

    def _run_joint(self, state: State, nsteps: int) -> tuple[int, float, int, int, float, str]:
        """``nsteps`` steps of every rod at once with rod-rod, self and obstacle contact
        (:class:`rodlab.compact.contact_world.WorldContactSolver`, Python). Returns as
        :meth:`_run_contact`; the active set lives in ``state.solver["contact_active"]`` (K, 4)
        int64 rows ``(0, segment a, segment b, 0)`` (edge-edge) or ``(1, rod, obstacle, vertex)``."""
        from ..compact.contact_world import contact_min_gap, rod_states

        sv = self._own(state)
        w, dt, joint = self.world, self._dt, self._joint
        arrays = (sv["s"], sv["qref"], state.vertex_x, sv["q"], state.vertex_v, sv["omega"])
        rows = np.asarray(sv.get("contact_active", np.zeros((0, 4), dtype=np.int64)), dtype=np.int64)
        active = set()
        if rows.ndim == 2 and rows.shape[1] == 4:
            active = {("e", int(a), int(b)) if k == 0 else ("o", int(a), int(b), int(c)) for k, a, b, c in rows}
        states = rod_states(w, *arrays)
        newton = pcg = solves = stalled = qp = 0
        c_sum = c_max = c_last = 0
        viol, resid, why, done, gap = 0.0, 0.0, "", 0, math.inf
        t0 = time.perf_counter()
        for i in range(nsteps):
            backup = [np.array(a) for a in arrays]
            if self._drives:
                drive_R, drive_shift = self._drive_targets(state.t, 1, False)
                for r, st in enumerate(states):
                    d = int(self._rod_drive[r])
                    if d >= 0:
                        _drive_root(st.s, st.qref, drive_R[0, d], drive_shift[0, d], *(a[d] for a in self._drive_rest))
            info = joint.step(states, state.t, dt, state.vertex_x, state.vertex_v, active)
            if not info.finite or not np.all(np.isfinite(state.vertex_x)):
                why = "non-finite step"
                for a, b in zip(arrays, backup):
                    a[...] = b
                break
            newton += info.newton
            pcg += info.pcg
            solves += info.solves
            stalled += 0 if info.success else 1
            qp += info.qp
            viol = max(viol, info.max_violation)
            resid = info.residual
            state.t += dt
            done += 1
            c_sum += info.active
            c_max = max(c_max, info.active)
            c_last = info.active
            if i > 0 and w.contact.rods:  # the last step's end: from this step's detection at its start
                gap = min(gap, joint.start_min_gap())
            if not w.contact.rods:
                gap = min(gap, contact_min_gap(self._cgeom, state.vertex_x, False))
        if done and w.contact.rods:  # the call's last step
            gap = min(gap, joint.end_min_gap(state.vertex_x, state.vertex_v, dt))
        wall = time.perf_counter() - t0
        self._gap = gap
        out = [(0, k[1], k[2], 0) if k[0] == "e" else (1, k[1], k[2], k[3]) for k in sorted(active)]
        sv["contact_active"] = np.array(out, dtype=np.int64).reshape(-1, 4)
        self._write_common(state)
        self._last = CallStats(done, solves, stalled, c_last, c_sum, c_max, qp, viol)
        return done, wall, newton, pcg, resid, why

    def advance(self, state: State, nsteps: int = 1) -> StepReport:
        """Advance ``state`` in place by ``nsteps`` implicit-Euler steps (Zhao et al., Alg. 1; with
        obstacles Alg. 1 + Alg. 2, one rod after the other), or BDF2 steps (``integrator``)."""
        if nsteps.__class__ is not int or nsteps < 0 or state.__class__ is not State:  # the checks' slow path
            self._check_steps(state, nsteps)
        if self._contact is not None:
            self._check_layout(state)
            run = self._run_joint if self._joint is not None else self._run_contact
            done, wall, newton, linear, residual, why = run(state, nsteps)
            last = self._last
            extra = dict(contact_min_gap=self._gap, contacts_sum=last.contacts_sum, contacts_max=last.contacts_max)
            if why:
                report = StepReport(done, False, why, newton, linear, residual, wall, **extra)
                self._fail(state, None, report, f"step {done + 1} of this call is not finite ({why})")
            if last.stalled_steps == 0:
                return StepReport(done, True, "ok", newton, linear, residual, wall, **extra)
            return StepReport(done, False, f"{last.stalled_steps} rod step(s) stopped on a PCG or line-search failure "
                              "(kept)", newton, linear, residual, wall, **extra)
        done, newton, linear, stalled, residual, wall = self._run(state, nsteps, False)
        if done == 0:
            residual = 0.0
        if done < nsteps:
            bad = [int(r) for r in np.nonzero(self._failed)[0]]
            report = StepReport(done, False, f"non-finite step of rod(s) {bad}", newton, linear, residual, wall)
            self._fail(state, None, report, f"step {done + 1} of this call is not finite (rod(s) {bad})")
        if stalled == 0:
            return step_report(done, True, "ok", newton, linear, residual, wall)
        return StepReport(done, False, f"{stalled} rod step(s) stopped on a PCG or line-search failure (kept)", newton,
                          linear, residual, wall)

    def solve_static(self, state: State) -> StaticReport:
        """Static equilibrium under gravity (inertia dropped): SQP from the current state with the
        tension stiffness and re-centering after every iteration, PCG to 1e-10 relative. Moving
        clamps are held at their pose at ``state.t``. Not with obstacles (the active-set driver
        only steps in time): :class:`UnsupportedFeature`."""
        self._check_layout(state)
        if self._contact is not None:
            what = "rod contact or point forces" if self._joint is not None else "obstacles"
            raise UnsupportedFeature(f"method compact has no static solve with {what} (step it in time, with damping)")
        snapshot = state.copy()
        done, _, _, _, _, wall = self._run(state, 1, True)
        stats = self._f["stats"]
        iters, residual = int(self._f["totals"][:, 0].sum()), float(stats[:, 3].max())
        if done < 1:
            report = StaticReport(False, "non-finite iterate", iters, residual, wall)
            self._fail(state, snapshot, report, "static solve gave a non-finite state")
        bad = [r for r in range(self.world.n_rods) if stats[r, 4] == 0.0]
        if bad:
            why = "PCG failure" if np.any(stats[bad, 7]) else ("line search made no progress" if np.any(stats[bad, 6])
                                                                 else "Newton iteration limit reached")
            report = StaticReport(False, f"rod(s) {bad}: {why}", iters, residual, wall)
            self._fail(state, snapshot, report, f"static solve did not converge for rod(s) {bad} ({why})")
        return StaticReport(True, "converged", iters, residual, wall)

    def elastic_energy(self, state: State) -> float:
        """Bending and twisting energy (Zhao et al., Eq. 29) of every rod [J]."""
        sv = self._own(state)
        w = self.world
        total = 0.0
        for r, md in enumerate(self.models):
            vs, es = w.rod_vertices(r), w.rod_edges(r)
            n, m = md.n, md.m
            p, q = np.empty((n, 3)), np.empty((m, 4))
            chain_forward(np.ascontiguousarray(sv["s"][vs]), md.lengths, np.ascontiguousarray(sv["qref"][es]), p, q,
                          np.empty((m, 3, 3)), np.empty((m, 4, 3)), False)
            comps = np.zeros(4)
            eval_energy(p, q, p, p, q, np.zeros((m, 3)), md.masses, md.Jr, md.lbar, md.Kh, md.ubar, np.zeros(3), 0.0, 0.0,
                        np.empty((n, 3)), np.empty((m, 4)), np.empty(n), np.empty((m, 4, 4)), np.empty((m - 1, 4, 4)),
                        0, comps)
            total += float(comps[0])
        return total


__all__ = ["CallStats", "CompactSimulator", "advance_rods", "advance_rods_serial", "compact_model_of", "contact_obstacle",
           "dirichlet_mask", "write_frames"]
