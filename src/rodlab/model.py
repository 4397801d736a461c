"""What a rod *is*: rest geometry, material, cross-section, boundary conditions, loads.

Everything here is immutable and built once (docs/architecture.md: Model / State / Simulator). SI units:
lengths [m], moduli [Pa], densities [kg/m^3], stiffnesses [N m^2] (bending, twisting) and [N]
(stretching), linear densities [kg/m], forces [N], time [s].
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from .aot import kernel
from .geometry import curves as _curves
from .geometry.curves import any_perpendicular, edge_count, joint_count

# Python calls of compiled kernels: their ahead-of-time entries where built (rodlab.aot)
_compute_edges, _compute_tangents, _bishop_frames = map(kernel, (
    _curves.compute_edges, _curves.compute_tangents, _curves.bishop_frames))


class ModelError(ValueError):
    """A model parameter is out of its allowed range (the message names it and the range)."""


class SimulationError(RuntimeError):
    """A step or a static solve failed. ``report`` (where given) says how far it got (iterations,
    residual); the state passed in holds the last good step. One class for every method."""

    def __init__(self, message: str, report=None):
        super().__init__(message)
        self.report = report


def require(condition: bool, message: str) -> None:
    if not condition:
        raise ModelError(message)


def check_steps(nsteps, name: str = "nsteps") -> int:
    """``nsteps`` as a Python ``int`` if it is an integer (``int`` or a numpy integer, not ``bool``)
    ``>= 0``; else :class:`ModelError` naming ``name`` and the allowed range."""
    ok = isinstance(nsteps, (int, np.integer)) and not isinstance(nsteps, (bool, np.bool_)) and nsteps >= 0
    require(ok, f"{name} must be an integer >= 0 (got {nsteps!r})")
    return int(nsteps)


def check_vector3(value, name: str, unit: str) -> tuple[float, float, float]:
    """``value`` as a tuple of three finite floats, else :class:`ModelError` naming ``name``."""
    try:
        a = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise ModelError(f"{name} must be a finite 3-vector {unit} (got {value!r})") from None
    require(a.shape == (3,) and bool(np.all(np.isfinite(a))), f"{name} must be a finite 3-vector {unit} (got {value!r})")
    return (float(a[0]), float(a[1]), float(a[2]))


def check_rest_positions(points, closed: bool, name: str = "rest_positions") -> np.ndarray:
    """``points`` as a C-contiguous float64 (n, 3) array of finite coordinates [m] with
    ``n >= 2`` (open rod) or ``n >= 3`` (closed), else :class:`ModelError` naming ``name``."""
    nmin = 3 if closed else 2
    kind = "closed" if closed else "open"
    article = "a" if closed else "an"
    try:
        x = np.ascontiguousarray(points, dtype=float)
    except (TypeError, ValueError):
        raise ModelError(f"{name} must be a numeric (n, 3) array [m] (got {type(points).__name__})") from None
    require(x.ndim == 2 and x.shape[1] == 3, f"{name} must have shape (n, 3) [m] (got {x.shape})")
    require(x.shape[0] >= nmin, f"{name}: {article} {kind} rod needs at least {nmin} vertices (got {x.shape[0]})")
    bad = np.flatnonzero(~np.all(np.isfinite(x), axis=1))
    require(bad.size == 0, f"{name} must be finite (vertex {bad[0] if bad.size else 0} is not)")
    return x


DAMPING_SCHEMES = ("implicit", "exponential")
"""How a stepper discretises the viscous damping ``-c m v`` (docs/damping.md): ``implicit`` takes the
force at the end of the step, inside the step's solve (velocity factor ``1 / (1 + c h)`` for an
explicit step); ``exponential`` integrates the linear decay exactly and splits it off the step,
scaling the velocities by ``exp(-c h)`` (as PyElastica's AnalyticalLinearDamper does)."""


def check_damping_scheme(scheme: str) -> str:
    require(scheme in DAMPING_SCHEMES, f"damping_scheme must be one of {', '.join(DAMPING_SCHEMES)} (got {scheme!r})")
    return scheme


@dataclass(frozen=True)
class Material:
    """Linear elastic material: Young's modulus ``E`` [Pa], shear modulus ``G`` [Pa], density ``rho`` [kg/m^3]."""

    E: float
    G: float
    rho: float

    def __post_init__(self):
        require(math.isfinite(self.E) and self.E > 0, f"E must be > 0 Pa (got {self.E})")
        require(math.isfinite(self.G) and self.G > 0, f"G must be > 0 Pa (got {self.G})")
        require(math.isfinite(self.rho) and self.rho > 0, f"rho must be > 0 kg/m^3 (got {self.rho})")


@dataclass(frozen=True)
class CrossSection:
    """Elliptical cross-section with semi-axis ``a1`` along the material director m1 and ``a2`` along m2 [m].

    A circle has ``a1 == a2``. Second moments: ``I_m2 = pi a1^3 a2 / 4`` resists curvature that
    turns the tangent toward m1 (material curvature component ``omega_1 = kb . m2``),
    ``I_m1 = pi a1 a2^3 / 4`` the other; torsion constant ``J = pi a1^3 a2^3 / (a1^2 + a2^2)``.
    """

    a1: float
    a2: float

    @classmethod
    def circle(cls, radius: float) -> "CrossSection":
        return cls(radius, radius)

    def __post_init__(self):
        require(self.a1 > 0 and math.isfinite(self.a1), f"cross-section semi-axis a1 must be > 0 m (got {self.a1})")
        require(self.a2 > 0 and math.isfinite(self.a2), f"cross-section semi-axis a2 must be > 0 m (got {self.a2})")

    @property
    def area(self) -> float:
        return math.pi * self.a1 * self.a2

    @property
    def second_moments(self) -> tuple[float, float]:
        """``(I for omega_1, I for omega_2)`` [m^4]."""
        return math.pi * self.a1**3 * self.a2 / 4.0, math.pi * self.a1 * self.a2**3 / 4.0

    @property
    def torsion_constant(self) -> float:
        return math.pi * self.a1**3 * self.a2**3 / (self.a1**2 + self.a2**2)


RigidMotion = Callable[[float], tuple[np.ndarray, np.ndarray]]
"""``motion(t) -> (R, d)``: rotation matrix and translation applied to a clamp's initial pose,
rotating about the clamped edge's initial midpoint: ``x(t) = R (x0 - c0) + c0 + d``."""


@dataclass(frozen=True)
class Clamp:
    """Clamp one edge: both its vertices and its material frame follow ``motion`` (or stay put).

    ``edge`` may be negative (``-1`` is the last edge).
    """

    edge: int
    motion: RigidMotion | None = None
    free_rotation: bool = False
    """hold (or move) only the edge's two vertices and let the rod spin about the edge: a
    swivel, through which twist escapes"""
    slide_axis: tuple[float, float, float] | None = None
    """let the clamp slide freely along this direction (usually along the clamped edge, which must
    be an end edge of an open rod) under the forces on it, like a weight hanging from a turning
    chuck: the clamped edge translates rigidly along it; ``motion`` then acts across the axis and
    turns the clamp about it (DER only)"""


def twist_about_axis(axis, rate: float, ramp: float = 0.0, total: float | None = None) -> RigidMotion:
    """Prescribed rotation about unit ``axis`` at ``rate`` [rad/s], optionally ramped in over
    ``ramp`` [s] (smooth start) and stopped at angle ``total`` [rad]: a
    :class:`rodlab.motions.AxisRotation` by a :class:`rodlab.motions.RampedRate` (callable as
    ``motion(t)``, and sampled at many times at once by ``motion.sample(times)``)."""
    from .motions import AxisRotation, RampedRate

    return AxisRotation(axis, RampedRate(rate, ramp, 0.0, total))


@dataclass(frozen=True)
class BoundaryConditions:
    """Clamped edges and pinned vertices (positions held or prescribed, frames free)."""

    clamps: tuple[Clamp, ...] = ()
    fixed_vertices: tuple[int, ...] = ()


@dataclass(frozen=True)
class PointForce:
    """A force [N] on one vertex, constant or a function of time."""

    vertex: int
    force: np.ndarray | Callable[[float], np.ndarray]

    def __post_init__(self):
        require(isinstance(self.vertex, (int, np.integer)) and not isinstance(self.vertex, (bool, np.bool_)),
                f"point force vertex must be an integer index (got {self.vertex!r})")
        if not callable(self.force):
            f = np.array(check_vector3(self.force, "point force", "N"))
            f.setflags(write=False)
            object.__setattr__(self, "force", f)

    def at(self, t: float) -> np.ndarray:
        return np.asarray(self.force(t) if callable(self.force) else self.force, dtype=float)


@dataclass(frozen=True)
class Loads:
    """External loads: gravity [m/s^2], viscous damping rate ``damping`` [1/s] (force ``-damping m v``), point forces."""

    gravity: tuple[float, float, float] = (0.0, 0.0, 0.0)
    damping: float = 0.0
    point_forces: tuple[PointForce, ...] = ()

    def __post_init__(self):
        object.__setattr__(self, "gravity", check_vector3(self.gravity, "gravity", "m/s^2"))
        require(isinstance(self.damping, (int, float, np.integer, np.floating)) and not isinstance(self.damping, bool)
                and math.isfinite(self.damping) and self.damping >= 0, f"damping must be a finite number >= 0 1/s (got {self.damping!r})")
        object.__setattr__(self, "damping", float(self.damping))
        object.__setattr__(self, "point_forces", tuple(self.point_forces))
        for pf in self.point_forces:
            require(isinstance(pf, PointForce), f"point_forces must hold PointForce entries (got {type(pf).__name__})")

    def check_for(self, rod: "Rod") -> "Loads":
        """``self`` if every point force's vertex lies on ``rod`` (index in ``[-n, n - 1]``), else
        :class:`ModelError` naming the force and the allowed range."""
        nv = rod.n_vertices
        for k, pf in enumerate(self.point_forces):
            require(-nv <= pf.vertex < nv, f"point force {k}: vertex must be in [-{nv}, {nv - 1}] for this "
                                           f"{nv}-vertex rod (got {pf.vertex})")
        return self


@dataclass(frozen=True, eq=False)
class Rod:
    """A discrete rod: rest polyline, rest material frame, stiffness and mass per edge.

    Build with :meth:`from_material` (E, G, rho and a cross-section) or :meth:`from_stiffness`
    (bending and twisting stiffness given directly, as the DER validation cases do).

    Arrays (all float64, read-only):
      rest_positions (nv, 3) [m]; rest_d1 (ne, 3) rest material director m1 (unit, normal to
      the rest tangent); bending_stiffness (ne, 2) [N m^2] for the two material curvature
      components; twisting_stiffness (ne,) [N m^2]; stretching_stiffness (ne,) [N];
      linear_density (ne,) [kg/m]; radius [m] for drawing and contact.
    """

    rest_positions: np.ndarray
    rest_d1: np.ndarray
    bending_stiffness: np.ndarray
    twisting_stiffness: np.ndarray
    stretching_stiffness: np.ndarray
    linear_density: np.ndarray
    radius: float
    closed: bool = False
    boundary: BoundaryConditions = field(default_factory=BoundaryConditions)
    rest_curvature: np.ndarray | None = None
    """optional (nj, 4) rest material curvatures overriding those of the rest polyline: a naturally
    straight ring (zeros) or a naturally curved rod held in another shape"""
    rest_twist: np.ndarray | None = None
    """optional (nj,) rest twist [rad] overriding that of the rest frame (a closed ring's glue
    angle: an isotropic ring closed after twisting its ends by T has -T at its closing joint)"""

    def __post_init__(self):
        x = check_rest_positions(self.rest_positions, self.closed)
        nv = x.shape[0]
        ne = edge_count(nv, self.closed)
        _check_edge_lengths(x, self.closed)
        for name, shape in (
            ("rest_d1", (ne, 3)),
            ("bending_stiffness", (ne, 2)),
            ("twisting_stiffness", (ne,)),
            ("stretching_stiffness", (ne,)),
            ("linear_density", (ne,)),
        ):
            a = np.ascontiguousarray(getattr(self, name), dtype=float)
            require(a.shape == shape, f"{name} must have shape {shape} (got {a.shape})")
            require(np.all(np.isfinite(a)), f"{name} must be finite")
            if name != "rest_d1":
                require(np.all(a > 0) if name in ("bending_stiffness", "twisting_stiffness", "linear_density") else np.all(a >= 0), f"{name} must be > 0")
            a.setflags(write=False)
            object.__setattr__(self, name, a)
        x.setflags(write=False)
        object.__setattr__(self, "rest_positions", x)
        nj = joint_count(nv, self.closed)
        for name, shape in (("rest_curvature", (nj, 4)), ("rest_twist", (nj,))):
            a = getattr(self, name)
            if a is not None:
                a = np.array(a, dtype=float)
                require(a.shape == shape and np.all(np.isfinite(a)), f"{name} must be a finite array of shape {shape} (got {a.shape})")
                a.setflags(write=False)
                object.__setattr__(self, name, a)
        require(self.radius > 0, f"radius must be > 0 m (got {self.radius})")
        for c in self.boundary.clamps:
            require(-ne <= c.edge < ne, f"clamp edge must be in [-{ne}, {ne - 1}] (got {c.edge})")
        for v in self.boundary.fixed_vertices:
            require(-nv <= v < nv, f"fixed vertex must be in [-{nv}, {nv - 1}] (got {v})")

    # ---- sizes -------------------------------------------------------------------------------
    @property
    def n_vertices(self) -> int:
        return self.rest_positions.shape[0]

    @property
    def n_edges(self) -> int:
        return edge_count(self.n_vertices, self.closed)

    @property
    def n_joints(self) -> int:
        return joint_count(self.n_vertices, self.closed)

    # ---- derived rest quantities -------------------------------------------------------------
    @property
    def rest_edges(self) -> np.ndarray:
        x = self.rest_positions
        return (np.roll(x, -1, axis=0) - x)[: self.n_edges]

    @property
    def rest_lengths(self) -> np.ndarray:
        return np.linalg.norm(self.rest_edges, axis=1)

    @property
    def total_length(self) -> float:
        return float(self.rest_lengths.sum())

    @property
    def vertex_masses(self) -> np.ndarray:
        """Lumped masses [kg]: half of each adjacent edge's mass."""
        m_edge = self.linear_density * self.rest_lengths
        m = np.zeros(self.n_vertices)
        m[: self.n_edges] += 0.5 * m_edge
        idx = (np.arange(self.n_edges) + 1) % self.n_vertices
        np.add.at(m, idx, 0.5 * m_edge)
        return m

    def clamped_edges(self) -> list[int]:
        return sorted({c.edge % self.n_edges for c in self.boundary.clamps})

    def fixed_vertex_mask(self) -> np.ndarray:
        """Vertices whose positions are prescribed (clamped edges' ends and pinned vertices)."""
        mask = np.zeros(self.n_vertices, dtype=bool)
        for j in self.clamped_edges():
            mask[j] = True
            mask[(j + 1) % self.n_vertices] = True
        for v in self.boundary.fixed_vertices:
            mask[v % self.n_vertices] = True
        return mask

    # ---- constructors --------------------------------------------------------------------------
    @classmethod
    def from_material(
        cls,
        rest_positions,
        material: Material,
        section: CrossSection,
        *,
        closed: bool = False,
        rest_d1=None,
        boundary: BoundaryConditions = BoundaryConditions(),
        rest_curvature=None,
        rest_twist=None,
    ) -> "Rod":
        x = check_rest_positions(rest_positions, closed)
        _check_edge_lengths(x, closed)
        ne = edge_count(x.shape[0], closed)
        i1, i2 = section.second_moments
        return cls(
            rest_positions=x,
            rest_d1=default_rest_d1(x, closed) if rest_d1 is None else rest_d1,
            bending_stiffness=np.tile([material.E * i1, material.E * i2], (ne, 1)),
            twisting_stiffness=np.full(ne, material.G * section.torsion_constant),
            stretching_stiffness=np.full(ne, material.E * section.area),
            linear_density=np.full(ne, material.rho * section.area),
            radius=max(section.a1, section.a2),
            closed=closed,
            boundary=boundary,
            rest_curvature=rest_curvature,
            rest_twist=rest_twist,
        )

    @classmethod
    def from_stiffness(
        cls,
        rest_positions,
        *,
        bending: float | tuple[float, float],
        twisting: float,
        linear_density: float = 1.0,
        stretching: float = 0.0,
        radius: float = 0.01,
        closed: bool = False,
        rest_d1=None,
        boundary: BoundaryConditions = BoundaryConditions(),
        rest_curvature=None,
        rest_twist=None,
    ) -> "Rod":
        x = check_rest_positions(rest_positions, closed)
        _check_edge_lengths(x, closed)
        ne = edge_count(x.shape[0], closed)
        b = (bending, bending) if np.isscalar(bending) else tuple(bending)
        require(all(v > 0 for v in b), f"bending stiffness must be > 0 N m^2 (got {bending})")
        require(twisting > 0, f"twisting stiffness must be > 0 N m^2 (got {twisting})")
        return cls(
            rest_positions=x,
            rest_d1=default_rest_d1(x, closed) if rest_d1 is None else rest_d1,
            bending_stiffness=np.tile(b, (ne, 1)),
            twisting_stiffness=np.full(ne, float(twisting)),
            stretching_stiffness=np.full(ne, float(stretching)),
            linear_density=np.full(ne, float(linear_density)),
            radius=radius,
            closed=closed,
            boundary=boundary,
            rest_curvature=rest_curvature,
            rest_twist=rest_twist,
        )


def _check_edge_lengths(x: np.ndarray, closed: bool) -> None:
    """Refuse a zero-length edge (before a rest frame is built from the tangents)."""
    ne = edge_count(x.shape[0], closed)
    lengths = np.linalg.norm(np.roll(x, -1, axis=0)[:ne] - x[:ne], axis=1)
    bad = np.flatnonzero(~(lengths > 0))
    require(bad.size == 0, f"rest_positions has a zero-length edge (edge {bad[0] if bad.size else 0}): edge lengths must be > 0 m")


def default_rest_d1(x: np.ndarray, closed: bool) -> np.ndarray:
    """A twist-free rest frame: the Bishop frame of the rest polyline, seeded on edge 0."""
    nv = x.shape[0]
    ne = edge_count(nv, closed)
    e = np.empty((ne, 3))
    _compute_edges(np.ascontiguousarray(x, dtype=float), closed, e)
    lengths = np.empty(ne)
    t = np.empty((ne, 3))
    _compute_tangents(e, lengths, t)
    u = np.empty((ne, 3))
    v = np.empty((ne, 3))
    _bishop_frames(t, any_perpendicular(t[0]), closed, u, v)
    return u
