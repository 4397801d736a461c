"""``World``: everything a simulation holds that does not change while it runs.

Rods (open or closed, any rest polyline and rest material frame, per-edge stiffness), rigid
bodies and welds of rod end edges to them, boundary conditions (clamps, pins, sliding clamps,
prescribed motion: kept on each rod's :class:`rodlab.model.BoundaryConditions`), obstacles and
loads. Built by :class:`rodlab.world.WorldBuilder`; immutable afterwards.

Besides the per-rod models, the world is stored flat, entity-first, with per-rod offsets
(MuJoCo's ``mjModel``): rod ``r``'s vertices are ``rod_vertex_start[r]:rod_vertex_start[r + 1]``
of every ``vertex_*`` array, its edges ``rod_edge_start[r]:rod_edge_start[r + 1]`` of every
``edge_*`` array, so one compiled loop can cover every rod. SI units throughout.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ..model import Material, ModelError, PointForce, Rod, require
from .obstacles import Obstacle


@dataclass(frozen=True)
class RodMaterial:
    """The material and circular cross-section a rod was built from (compact and galpha take
    their stiffness and inertia from these): ``E``, ``G`` [Pa], ``rho`` [kg/m^3], ``radius`` [m]."""

    E: float
    G: float
    rho: float
    radius: float


@dataclass(frozen=True, eq=False)
class Body:
    """A rigid body: ``mass`` [kg], ``inertia`` (3, 3) [kg m^2] about its centre of mass in body
    coordinates, initial centre ``position`` (3,) [m] and ``orientation`` unit quaternion
    (w, x, y, z), body -> world."""

    mass: float
    inertia: np.ndarray
    position: np.ndarray
    orientation: np.ndarray

    def __post_init__(self):
        require(math.isfinite(self.mass) and self.mass > 0, f"body mass must be > 0 kg (got {self.mass})")
        inertia = np.array(self.inertia, dtype=float)
        require(inertia.shape == (3, 3), f"body inertia must have shape (3, 3) (got {inertia.shape})")
        require(bool(np.allclose(inertia, inertia.T, rtol=1e-12, atol=0.0)), "body inertia must be symmetric")
        require(bool(np.all(np.linalg.eigvalsh(inertia) > 0)), "body inertia must be positive definite")
        position = np.array(self.position, dtype=float).reshape(-1)
        require(position.shape == (3,) and bool(np.all(np.isfinite(position))), f"body position must be a finite 3-vector (got {self.position})")
        quat = np.array(self.orientation, dtype=float).reshape(-1)
        require(quat.shape == (4,) and bool(np.all(np.isfinite(quat))) and np.linalg.norm(quat) > 0,
                f"body orientation must be a nonzero quaternion (w, x, y, z) (got {self.orientation})")
        quat = quat / np.linalg.norm(quat)
        for name, value in (("inertia", inertia), ("position", position), ("orientation", quat)):
            value.setflags(write=False)
            object.__setattr__(self, name, value)


@dataclass(frozen=True)
class Weld:
    """Rod ``rod``'s end edge ``edge`` (0 or -1) welded to body ``body``: the edge's two
    vertices and its material frame move with the body (Bergou et al. 2008, Sec. 8)."""

    rod: int
    edge: int
    body: int


@dataclass(frozen=True)
class RodPointForce:
    """A force [N] on vertex ``vertex`` of rod ``rod``, constant or a function of time."""

    rod: int
    force: PointForce


@dataclass(frozen=True)
class RodPointTorque:
    """A couple [N m], in world coordinates, on vertex ``vertex`` of rod ``rod``: a constant
    3-vector or a function of time ``torque(t) -> (3,)``. A method that models the couple at a
    rod's end (galpha: the end load of its boundary value problem) takes it there; methods without
    it refuse the world's "point torques" feature."""

    rod: int
    vertex: int
    torque: np.ndarray | Callable[[float], np.ndarray]

    def at(self, t: float) -> np.ndarray:
        """The couple [N m] at time ``t`` [s]; a function returning anything but a finite
        3-vector is an error naming the rod and vertex."""
        value = np.asarray(self.torque(t) if callable(self.torque) else self.torque, dtype=float)
        if value.shape != (3,) or not np.all(np.isfinite(value)):
            raise ModelError(f"point torque on vertex {self.vertex} of rod {self.rod} must be a finite 3-vector N m "
                             f"(got {value!r} at t = {t:g} s)")
        return value


WindVelocity = Callable[[np.ndarray, float], np.ndarray]
"""``velocity(x, t) -> u``: air velocity [m/s] (N, 3) at positions ``x`` (N, 3) and time ``t``."""


@dataclass(frozen=True)
class Wind:
    """Linear drag against a wind field: force per unit length ``drag (u(x, t) - v)`` [N/m],
    lumped on each vertex with its Voronoi length. ``drag`` [N s/m^2]."""

    velocity: WindVelocity
    drag: float

    def __post_init__(self):
        require(callable(self.velocity), "wind velocity must be a function velocity(x, t) -> (N, 3) array")
        require(math.isfinite(self.drag) and self.drag > 0, f"wind drag must be > 0 N s/m^2 (got {self.drag})")


@dataclass(frozen=True)
class ContactSettings:
    """How rods touch (issue "Contact and friction"). Obstacles always push rods out; these
    settings add rod-rod and self contact and Coulomb friction.

    ``rods``: rods collide with each other and themselves (segments within ``skip`` edges of
    each other on one rod are neighbours and never collide; ``"auto"``: per rod the least count
    that leaves a straight rod at rest without overlap, :func:`rodlab.contact.from_world`).
    ``friction``: Coulomb coefficient mu [-] of every rod-rod pair, the same for sticking
    (|f_t| <= mu f_n) and sliding (f_t = mu f_n against the slip); ``pair_friction``: overrides
    per pair of rods ``((ra, rb, mu), ...)`` (order of ``ra``, ``rb`` does not matter);
    ``obstacle_friction`` (M,): mu per obstacle, in world order (set by
    :meth:`rodlab.world.WorldBuilder.add_obstacle`). ``thickness`` [m]: contact radius of every
    rod when given (Zhao et al.'s delta / 2), else each rod's own radius."""

    rods: bool = False
    friction: float = 0.0
    pair_friction: tuple[tuple[int, int, float], ...] = ()
    obstacle_friction: tuple[float, ...] = ()
    thickness: float | None = None
    skip: int | str = "auto"

    def __post_init__(self):
        require(math.isfinite(self.friction) and self.friction >= 0, f"contact friction must be >= 0 (got {self.friction})")
        for ra, rb, mu in self.pair_friction:
            require(math.isfinite(mu) and mu >= 0, f"pair friction of rods ({ra}, {rb}) must be >= 0 (got {mu})")
        for m, mu in enumerate(self.obstacle_friction):
            require(math.isfinite(mu) and mu >= 0, f"friction of obstacle {m} must be >= 0 (got {mu})")
        if self.thickness is not None:
            require(math.isfinite(self.thickness) and self.thickness > 0, f"contact thickness must be > 0 m (got {self.thickness})")
        require(self.skip == "auto" or (isinstance(self.skip, (int, np.integer)) and not isinstance(self.skip, bool) and self.skip >= 1),
                f"contact skip must be \"auto\" or an integer >= 1 (got {self.skip!r})")

    def rod_friction(self, ra: int, rb: int) -> float:
        """Coulomb mu between rods ``ra`` and ``rb`` (``ra == rb``: self contact)."""
        for a, b, mu in self.pair_friction:
            if {a, b} == {ra, rb} and (a == b) == (ra == rb):
                return float(mu)
        return float(self.friction)

    def rod_friction_table(self, n_rods: int) -> np.ndarray:
        """(R, R) table of :meth:`rod_friction`, symmetric, for compiled kernels."""
        table = np.full((n_rods, n_rods), float(self.friction))
        for a, b, mu in self.pair_friction:
            table[a, b] = table[b, a] = float(mu)
        return table

    @property
    def has_friction(self) -> bool:
        return (self.rods and (self.friction > 0 or any(mu > 0 for _, _, mu in self.pair_friction))) \
            or any(mu > 0 for mu in self.obstacle_friction)


@dataclass(frozen=True)
class WorldLoads:
    """Loads on every rod: ``gravity`` [m/s^2], viscous ``damping`` [1/s] (force ``-damping m v``),
    optional ``wind``, point forces and point torques (couples) on chosen vertices."""

    gravity: tuple[float, float, float] = (0.0, 0.0, 0.0)
    damping: float = 0.0
    wind: Wind | None = None
    point_forces: tuple[RodPointForce, ...] = ()
    point_torques: tuple[RodPointTorque, ...] = ()

    def __post_init__(self):
        g = tuple(float(c) for c in self.gravity)
        require(len(g) == 3 and all(math.isfinite(c) for c in g), f"gravity must be a finite 3-vector m/s^2 (got {self.gravity})")
        object.__setattr__(self, "gravity", g)
        require(math.isfinite(self.damping) and self.damping >= 0, f"damping must be >= 0 1/s (got {self.damping})")


def _frozen(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    a.setflags(write=False)
    return a


@dataclass(frozen=True, eq=False)
class World:
    """An immutable simulation world (module docstring). Build with :class:`WorldBuilder`.

    Per rod ``r``: ``rods[r]`` (:class:`rodlab.model.Rod`: rest polyline, rest frame, stiffness,
    mass, boundary conditions) and ``rod_material[r]`` (:class:`RodMaterial` or ``None`` when the
    rod was given stiffness values directly). Flat arrays, set on construction:

    - ``rod_vertex_start`` (R + 1,), ``rod_edge_start`` (R + 1,), ``rod_joint_start`` (R + 1,): offsets;
    - ``rod_closed`` (R,) bool, ``rod_radius`` (R,) [m];
    - ``vertex_rest_x`` (N, 3) [m], ``vertex_mass`` (N,) [kg] (lumped), ``vertex_fixed`` (N,) bool
      (clamped or pinned: position prescribed);
    - ``edge_rest_length`` (E,) [m], ``edge_rest_d1`` (E, 3), ``edge_bend_stiffness`` (E, 2) [N m^2],
      ``edge_twist_stiffness`` (E,) [N m^2], ``edge_stretch_stiffness`` (E,) [N],
      ``edge_linear_density`` (E,) [kg/m].
    """

    rods: tuple[Rod, ...]
    rod_material: tuple[RodMaterial | None, ...]
    bodies: tuple[Body, ...] = ()
    welds: tuple[Weld, ...] = ()
    obstacles: tuple[Obstacle, ...] = ()
    loads: WorldLoads = field(default_factory=WorldLoads)
    contact: ContactSettings = field(default_factory=ContactSettings)

    def __post_init__(self):
        require(len(self.rods) >= 1, "a world needs at least one rod")
        self._check_contact()
        require(len(self.rod_material) == len(self.rods), "rod_material needs one entry per rod")
        for r, rod in enumerate(self.rods):
            require(isinstance(rod, Rod), f"rods[{r}] must be a rodlab.Rod (got {type(rod).__name__})")
        self._check_welds()
        for pf in self.loads.point_forces:
            require(0 <= pf.rod < len(self.rods), f"point force rod index must be in [0, {len(self.rods) - 1}] (got {pf.rod})")
            nv = self.rods[pf.rod].n_vertices
            require(-nv <= pf.force.vertex < nv, f"point force vertex of rod {pf.rod} must be in [-{nv}, {nv - 1}] (got {pf.force.vertex})")
        for pt in self.loads.point_torques:
            require(isinstance(pt, RodPointTorque), f"point torques must be RodPointTorque records (got {type(pt).__name__})")
            require(0 <= pt.rod < len(self.rods), f"point torque rod index must be in [0, {len(self.rods) - 1}] (got {pt.rod})")
            nv = self.rods[pt.rod].n_vertices
            require(-nv <= pt.vertex < nv, f"point torque vertex of rod {pt.rod} must be in [-{nv}, {nv - 1}] (got {pt.vertex})")
        counts = np.array([[rod.n_vertices, rod.n_edges, rod.n_joints] for rod in self.rods], dtype=np.int64)
        starts = np.zeros((len(self.rods) + 1, 3), dtype=np.int64)
        np.cumsum(counts, axis=0, out=starts[1:])
        flat = {
            "rod_vertex_start": starts[:, 0],
            "rod_edge_start": starts[:, 1],
            "rod_joint_start": starts[:, 2],
            "rod_closed": np.array([rod.closed for rod in self.rods], dtype=bool),
            "rod_radius": np.array([rod.radius for rod in self.rods], dtype=float),
            "vertex_rest_x": np.concatenate([rod.rest_positions for rod in self.rods]),
            "vertex_mass": np.concatenate([rod.vertex_masses for rod in self.rods]),
            "vertex_fixed": np.concatenate([rod.fixed_vertex_mask() for rod in self.rods]),
            "edge_rest_length": np.concatenate([rod.rest_lengths for rod in self.rods]),
            "edge_rest_d1": np.concatenate([rod.rest_d1 for rod in self.rods]),
            "edge_bend_stiffness": np.concatenate([rod.bending_stiffness for rod in self.rods]),
            "edge_twist_stiffness": np.concatenate([rod.twisting_stiffness for rod in self.rods]),
            "edge_stretch_stiffness": np.concatenate([rod.stretching_stiffness for rod in self.rods]),
            "edge_linear_density": np.concatenate([rod.linear_density for rod in self.rods]),
        }
        for name, value in flat.items():
            object.__setattr__(self, name, _frozen(value))

    def _check_contact(self) -> None:
        c = self.contact
        require(isinstance(c, ContactSettings), f"contact must be ContactSettings (got {type(c).__name__})")
        require(len(c.obstacle_friction) in (0, len(self.obstacles)),
                f"contact obstacle_friction needs one value per obstacle ({len(self.obstacles)}, got {len(c.obstacle_friction)})")
        for a, b, _ in c.pair_friction:
            require(0 <= a < len(self.rods) and 0 <= b < len(self.rods),
                    f"pair friction rod indices must be in [0, {len(self.rods) - 1}] (got ({a}, {b}))")

    def obstacle_friction(self, m: int) -> float:
        """Coulomb mu between any rod and obstacle ``m`` (0 when not set)."""
        return float(self.contact.obstacle_friction[m]) if self.contact.obstacle_friction else 0.0

    def _check_welds(self) -> None:
        seen = set()
        for w in self.welds:
            require(0 <= w.rod < len(self.rods), f"weld rod index must be in [0, {len(self.rods) - 1}] (got {w.rod})")
            require(0 <= w.body < len(self.bodies), f"weld body index must be in [0, {len(self.bodies) - 1}] (got {w.body})")
            rod = self.rods[w.rod]
            require(not rod.closed, f"rod {w.rod} is closed: only an open rod's end edge can be welded")
            end = w.edge % rod.n_edges
            require(end in (0, rod.n_edges - 1), f"weld edge of rod {w.rod} must be its first (0) or last (-1) edge (got {w.edge})")
            require((w.rod, end) not in seen, f"rod {w.rod} edge {end} is welded twice")
            require(end not in rod.clamped_edges(), f"rod {w.rod} edge {end} is both clamped and welded")
            seen.add((w.rod, end))

    # ---- sizes ------------------------------------------------------------------------------
    @property
    def n_rods(self) -> int:
        return len(self.rods)

    @property
    def n_vertices(self) -> int:
        return int(self.rod_vertex_start[-1])

    @property
    def n_edges(self) -> int:
        return int(self.rod_edge_start[-1])

    @property
    def n_joints(self) -> int:
        return int(self.rod_joint_start[-1])

    @property
    def n_bodies(self) -> int:
        return len(self.bodies)

    def rod_vertices(self, r: int) -> slice:
        """Rod ``r``'s slice of every ``vertex_*`` array."""
        return slice(int(self.rod_vertex_start[r]), int(self.rod_vertex_start[r + 1]))

    def rod_edges(self, r: int) -> slice:
        """Rod ``r``'s slice of every ``edge_*`` array."""
        return slice(int(self.rod_edge_start[r]), int(self.rod_edge_start[r + 1]))

    def rod_joints(self, r: int) -> slice:
        return slice(int(self.rod_joint_start[r]), int(self.rod_joint_start[r + 1]))

    # ---- what the world asks of a solver -----------------------------------------------------
    def features(self) -> set[str]:
        """Names of the features this world uses (solvers refuse the ones they do not have)."""
        used = set()
        for rod in self.rods:
            if rod.closed:
                used.add("closed rods")
            for c in rod.boundary.clamps:
                if c.motion is not None:
                    used.add("prescribed clamp motion")
                if c.free_rotation:
                    used.add("swivel clamps")
                if c.slide_axis is not None:
                    used.add("sliding clamps")
            if rod.boundary.fixed_vertices:
                used.add("pinned vertices")
            if not np.allclose(rod.bending_stiffness[:, 0], rod.bending_stiffness[:, 1], rtol=1e-12):
                used.add("anisotropic bending")
            if rod.rest_curvature is not None or rod.rest_twist is not None:
                used.add("rest curvature overrides")
        if self.bodies:
            used.add("rigid bodies")
        if self.obstacles:
            used.add("obstacles")
        if self.contact.rods:
            used.add("rod contact")
        if self.contact.has_friction:
            used.add("friction")
        if self.loads.wind is not None:
            used.add("wind")
        if self.loads.point_forces:
            used.add("point forces")
        if self.loads.point_torques:
            used.add("point torques")
        if any(m is None for m in self.rod_material):
            used.add("rods given by stiffness")
        return used

    def point_forces_of(self, r: int) -> tuple[PointForce, ...]:
        return tuple(pf.force for pf in self.loads.point_forces if pf.rod == r)

    def point_torques_of(self, r: int) -> tuple[RodPointTorque, ...]:
        """The point torques on rod ``r``."""
        return tuple(pt for pt in self.loads.point_torques if pt.rod == r)

    def total_mass(self) -> float:
        return float(self.vertex_mass.sum()) + sum(b.mass for b in self.bodies)


def rod_material_of(material: Material, radius: float) -> RodMaterial:
    return RodMaterial(float(material.E), float(material.G), float(material.rho), float(radius))


__all__ = ["Body", "ContactSettings", "ModelError", "RodMaterial", "RodPointForce", "RodPointTorque", "Weld", "Wind", "World", "WorldLoads"]
