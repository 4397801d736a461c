"""``WorldBuilder``: add rods, boundary conditions, bodies, welds, obstacles and loads, then
``build()`` a frozen :class:`rodlab.world.World`.

    b = WorldBuilder(gravity=(0, 0, -9.81), damping=1.0)
    r = b.add_rod(shapes.straight(50, 1.0), E=1e8, G=1e8 / 3, rho=1000, radius=0.01)
    b.clamp(r, "start")
    world = b.build()

Rods are numbered in the order they are added; so are bodies. Ends are named ``"start"`` (edge 0)
and ``"end"`` (the last edge) or given as edge indices (negative counts from the end).
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np

from ..model import BoundaryConditions, Clamp, CrossSection, Material, PointForce, Rod, require
from .obstacles import Capsule, Cylinder, Obstacle, Plane, Sphere, TriangleMesh
from .world import Body, ContactSettings, RodMaterial, RodPointForce, RodPointTorque, Weld, Wind, World, WorldLoads

ENDS = ("start", "end")


def _end_edge(end, n_edges: int, what: str) -> int:
    if isinstance(end, str):
        require(end in ENDS, f"{what} must be one of {', '.join(ENDS)} or an edge index (got {end!r})")
        return 0 if end == "start" else n_edges - 1
    require(isinstance(end, (int, np.integer)) and -n_edges <= end < n_edges,
            f"{what} edge must be in [-{n_edges}, {n_edges - 1}] (got {end!r})")
    return int(end) % n_edges


def _per_edge(value, ne: int, name: str, unit: str, *, positive: bool = True, pair: bool = False) -> np.ndarray:
    """``value`` as per-edge values: a number (every edge), or an array (ne,) (one per edge); with
    ``pair`` (bending) also two numbers (an anisotropic section, every edge) or (ne, 2). Returns (ne,)
    or, with ``pair``, (ne, 2)."""
    a = np.asarray(value, dtype=float)
    if pair and a.shape == (2,):
        a = np.tile(a, (ne, 1))
    elif a.ndim == 0:
        a = np.full((ne, 2) if pair else ne, float(a))
    elif pair and a.shape == (ne,):
        a = np.stack([a, a], axis=1)
    shapes = "a number, two numbers, (n_edges,) or (n_edges, 2)" if pair else "a number or (n_edges,)"
    require(a.shape == ((ne, 2) if pair else (ne,)), f"{name} must be {shapes} with n_edges = {ne} (got shape {a.shape})")
    ok = np.all(a > 0) if positive else np.all(a >= 0)
    require(bool(np.all(np.isfinite(a)) and ok), f"{name} must be {'> 0' if positive else '>= 0'} {unit} and finite")
    return a


def edge_values_from_joints(joint_values, n_edges: int, name: str = "joint values") -> np.ndarray:
    """Per-edge values (n_edges,) whose joint means ``(e_{i-1} + e_i) / 2`` are ``joint_values``
    (n_edges - 1,) of an open rod (how the der-implicit method derives a joint's stiffness from its two
    edges, exact for a uniform rod). Of the one-parameter family of solutions, the one whose smallest
    value is largest; :class:`rodlab.model.ModelError` when no solution is positive everywhere."""
    k = np.asarray(joint_values, dtype=float)
    require(n_edges >= 2 and k.shape == (n_edges - 1,) and bool(np.all(np.isfinite(k)) and np.all(k > 0)),
            f"{name} must be finite and > 0 with shape ({n_edges - 1},) (one per joint; got shape {k.shape})")
    s = np.zeros(n_edges)  # particular solution with e_0 = 0; every solution is s_j + (-1)^j c
    for j in range(1, n_edges):
        s[j] = 2.0 * k[j - 1] - s[j - 1]
    c = 0.5 * (s[1::2].min() - s[0::2].min())
    e = s + c * (1.0 - 2.0 * (np.arange(n_edges) % 2))
    require(bool(np.all(e > 0)), f"{name} vary too fast from joint to joint to be the means of positive per-edge "
                                 f"values (smallest possible edge value {e.min():.3g})")
    return e


class WorldBuilder:
    """Collects a world's parts; :meth:`build` validates and freezes them (module docstring)."""

    def __init__(self, *, gravity=(0.0, 0.0, 0.0), damping: float = 0.0):
        self._rods: list[dict] = []
        self._bodies: list[Body] = []
        self._welds: list[Weld] = []
        self._obstacles: list[Obstacle] = []
        self._obstacle_friction: list[float] = []
        self._contact: dict = {}
        self._point_forces: list[RodPointForce] = []
        self._point_torques: list[RodPointTorque] = []
        self._wind: Wind | None = None
        self.gravity = gravity
        self.damping = damping

    # ---- rods ---------------------------------------------------------------------------------
    def add_rod(self, points, *, E: float | None = None, G: float | None = None, rho: float | None = None,
                radius: float | None = None, section: CrossSection | None = None,
                bending: float | tuple[float, float] | None = None, twisting: float | None = None,
                linear_density: float | None = None, stretching: float = 0.0,
                closed: bool = False, rest_d1=None, rest_curvature=None, rest_twist=None,
                joint_bending=None, joint_twisting=None) -> int:
        """Add a rod at rest along ``points`` (n, 3) [m]; returns its index.

        Either a material (``E``, ``G`` [Pa], ``rho`` [kg/m^3]) with a circular ``radius`` [m] or an
        elliptical ``section``, or stiffness values directly (``bending`` [N m^2], one value or the
        two of an anisotropic section, ``twisting`` [N m^2], ``linear_density`` [kg/m], optional
        ``stretching`` [N], ``radius`` for drawing and contact). ``rest_d1`` (n_edges, 3): rest
        material director m1 (default: the rest polyline's Bishop frame); ``rest_curvature``
        (n_joints, 4) and ``rest_twist`` (n_joints,) override those of the rest shape.

        A rod given by stiffness may vary along its length: ``bending`` (n_edges,) or (n_edges, 2),
        ``twisting``, ``stretching`` and ``linear_density`` (n_edges,) take one value per edge; an
        open rod may instead give its bending and twisting stiffness per joint, ``joint_bending`` and
        ``joint_twisting`` (n_joints,) [N m^2] (isotropic; then ``bending`` / ``twisting`` are
        omitted), stored as the per-edge values whose joint means they are
        (:func:`edge_values_from_joints`; the der-implicit method takes them back exactly).
        """
        pts = np.asarray(points, dtype=float)
        nmin = 3 if closed else 2
        require(pts.ndim == 2 and pts.shape[1] == 3 and pts.shape[0] >= nmin and bool(np.all(np.isfinite(pts))),
                f"points must be a finite (n, 3) array with n >= {nmin} vertices for {'a closed' if closed else 'an open'} rod "
                f"(got shape {pts.shape})")
        seg = np.linalg.norm(np.diff(np.vstack([pts, pts[:1]]) if closed else pts, axis=0), axis=1)
        require(bool(np.all(seg > 0)), f"points has a zero-length edge (edge {int(np.argmin(seg))}): edge lengths must be > 0 m")
        by_material = any(v is not None for v in (E, G, rho))
        require((joint_bending is None and joint_twisting is None) or not closed,
                "joint_bending and joint_twisting are for open rods only")
        require(joint_bending is None or bending is None, "give bending or joint_bending, not both")
        require(joint_twisting is None or twisting is None, "give twisting or joint_twisting, not both")
        ne_rod = pts.shape[0] if closed else pts.shape[0] - 1
        if joint_bending is not None:
            bending = edge_values_from_joints(joint_bending, ne_rod, "joint_bending")
        if joint_twisting is not None:
            twisting = edge_values_from_joints(joint_twisting, ne_rod, "joint_twisting")
        by_stiffness = any(v is not None for v in (bending, twisting, linear_density))
        require(by_material != by_stiffness,
                "add_rod needs either a material (E, G, rho with radius or section) or stiffness values "
                "(bending, twisting, linear_density), not both")
        if by_material:
            require(None not in (E, G, rho), "add_rod with a material needs all of E, G and rho")
            require((radius is None) != (section is None), "add_rod with a material needs exactly one of radius and section")
            sec = section if section is not None else CrossSection.circle(float(radius))
            rod = Rod.from_material(points, Material(float(E), float(G), float(rho)), sec, closed=closed,
                                    rest_d1=rest_d1, rest_curvature=rest_curvature, rest_twist=rest_twist)
            circular = sec.a1 == sec.a2
            material = RodMaterial(float(E), float(G), float(rho), float(sec.a1)) if circular else None
        else:
            require(all(v is not None for v in (bending, twisting, linear_density)),
                    "add_rod by stiffness needs bending, twisting and linear_density")
            arrays = {"bending_stiffness": _per_edge(bending, ne_rod, "bending stiffness", "N m^2", pair=True),
                      "twisting_stiffness": _per_edge(twisting, ne_rod, "twisting stiffness", "N m^2"),
                      "linear_density": _per_edge(linear_density, ne_rod, "linear density", "kg/m"),
                      "stretching_stiffness": _per_edge(stretching, ne_rod, "stretching stiffness", "N", positive=False)}
            rod = Rod.from_stiffness(points, bending=1.0, twisting=1.0, linear_density=1.0, stretching=0.0,
                                     radius=0.01 if radius is None else float(radius), closed=closed, rest_d1=rest_d1,
                                     rest_curvature=rest_curvature, rest_twist=rest_twist)
            from dataclasses import replace

            rod = replace(rod, **arrays)
            material = None
        self._rods.append({"rod": rod, "material": material, "clamps": [], "pins": []})
        return len(self._rods) - 1

    def rest_positions(self, r: int) -> np.ndarray:
        """The rest polyline (n, 3) [m] of rod ``r`` added so far (read-only)."""
        return self._rod(r)["rod"].rest_positions

    def _rod(self, r: int) -> dict:
        require(isinstance(r, (int, np.integer)) and 0 <= r < len(self._rods),
                f"rod index must be in [0, {len(self._rods) - 1}] (got {r!r})")
        return self._rods[int(r)]

    def clamp(self, r: int, end="start", *, motion: Callable | None = None, free_rotation: bool = False,
              slide_axis=None) -> None:
        """Clamp an edge of rod ``r`` (its two vertices and material frame). ``motion(t) -> (R, d)``
        moves it rigidly about its initial midpoint; ``free_rotation`` holds positions only (a
        swivel); ``slide_axis`` lets it slide along that direction (see :class:`rodlab.model.Clamp`)."""
        entry = self._rod(r)
        edge = _end_edge(end, entry["rod"].n_edges, "clamp end")
        require(edge not in [c.edge for c in entry["clamps"]], f"rod {r} edge {edge} is clamped twice")
        entry["clamps"].append(Clamp(edge, motion, free_rotation, None if slide_axis is None else tuple(float(c) for c in slide_axis)))

    def pin(self, r: int, vertex: int) -> None:
        """Hold vertex ``vertex`` of rod ``r`` in place (its frame stays free)."""
        entry = self._rod(r)
        nv = entry["rod"].n_vertices
        require(isinstance(vertex, (int, np.integer)) and -nv <= vertex < nv, f"pin vertex of rod {r} must be in [-{nv}, {nv - 1}] (got {vertex!r})")
        entry["pins"].append(int(vertex) % nv)

    # ---- bodies ------------------------------------------------------------------------------
    def add_body(self, mass: float, inertia, position=(0.0, 0.0, 0.0), orientation=(1.0, 0.0, 0.0, 0.0)) -> int:
        """Add a rigid body (``inertia`` (3, 3) or its 3 principal values [kg m^2]); returns its index."""
        inertia = np.asarray(inertia, dtype=float)
        if inertia.shape == (3,):
            inertia = np.diag(inertia)
        self._bodies.append(Body(float(mass), inertia, position, orientation))
        return len(self._bodies) - 1

    def weld(self, r: int, end, body: int) -> None:
        """Weld rod ``r``'s end edge (``"start"`` / ``"end"``) to ``body`` (Bergou et al. 2008, Sec. 8)."""
        entry = self._rod(r)
        edge = _end_edge(end, entry["rod"].n_edges, "weld end")
        require(0 <= body < len(self._bodies), f"weld body index must be in [0, {len(self._bodies) - 1}] (got {body})")
        self._welds.append(Weld(int(r), edge, int(body)))

    # ---- obstacles and loads -----------------------------------------------------------------
    def add_obstacle(self, obstacle: Obstacle, *, friction: float = 0.0) -> int:
        """Add a static obstacle with Coulomb coefficient ``friction`` [-] against every rod."""
        require(isinstance(obstacle, (Plane, Sphere, Capsule, Cylinder, TriangleMesh)),
                f"obstacle must be a Plane, Sphere, Capsule, Cylinder or TriangleMesh (got {type(obstacle).__name__})")
        mu = float(friction)
        require(math.isfinite(mu) and mu >= 0, f"obstacle friction must be >= 0 (got {friction})")
        self._obstacles.append(obstacle)
        self._obstacle_friction.append(mu)
        return len(self._obstacles) - 1

    def set_contact(self, *, rods: bool = True, friction: float = 0.0, pair_friction=(), thickness: float | None = None,
                    skip: int | str = "auto") -> None:
        """Turn on rod-rod and self contact (``rods``) with Coulomb ``friction`` [-] between rods,
        per-pair overrides ``pair_friction`` ``((ra, rb, mu), ...)``, an optional contact
        ``thickness`` [m] (radius of every rod for contact) and the neighbour ``skip``
        (:class:`rodlab.world.world.ContactSettings`)."""
        self._contact = dict(rods=bool(rods), friction=float(friction),
                             pair_friction=tuple((int(a), int(b), float(mu)) for a, b, mu in pair_friction),
                             thickness=None if thickness is None else float(thickness), skip=skip)

    def set_wind(self, velocity, drag: float) -> None:
        """Linear drag ``drag (u(x, t) - v)`` per unit length; ``velocity`` a function
        ``(x (N, 3), t) -> (N, 3)`` or a constant 3-vector [m/s]."""
        if not callable(velocity):
            u = np.asarray(velocity, dtype=float).reshape(3)
            velocity = lambda x, t, u=u: np.broadcast_to(u, np.shape(x))
        self._wind = Wind(velocity, float(drag))

    def add_point_force(self, r: int, vertex: int, force) -> None:
        """A force [N] on vertex ``vertex`` of rod ``r``: a 3-vector or a function of time."""
        entry = self._rod(r)
        nv = entry["rod"].n_vertices
        require(isinstance(vertex, (int, np.integer)) and -nv <= vertex < nv,
                f"point force vertex of rod {r} must be in [-{nv}, {nv - 1}] (got {vertex!r})")
        if not callable(force):
            force = np.asarray(force, dtype=float).reshape(3)
            require(bool(np.all(np.isfinite(force))), f"point force must be finite (got {force})")
        self._point_forces.append(RodPointForce(int(r), PointForce(int(vertex) % nv, force)))

    def add_point_torque(self, r: int, vertex: int, torque) -> None:
        """A couple [N m] in world coordinates on vertex ``vertex`` of rod ``r`` (negative counts
        from the end): a 3-vector or a function of time ``torque(t) -> (3,)``. Uses the world
        feature "point torques" (galpha takes it on a rod's last vertex as its end torque)."""
        entry = self._rod(r)
        nv = entry["rod"].n_vertices
        require(isinstance(vertex, (int, np.integer)) and not isinstance(vertex, bool) and -nv <= vertex < nv,
                f"point torque vertex of rod {r} must be in [-{nv}, {nv - 1}] (got {vertex!r})")
        if not callable(torque):
            value = np.asarray(torque, dtype=float)
            require(value.shape in ((3,), (1, 3), (3, 1)) and bool(np.all(np.isfinite(value))),
                    f"point torque must be a finite 3-vector N m or a function of time (got {torque!r})")
            torque = value.reshape(3)
            torque.setflags(write=False)
        self._point_torques.append(RodPointTorque(int(r), int(vertex) % nv, torque))

    # ---- freeze -----------------------------------------------------------------------------
    def build(self) -> World:
        require(len(self._rods) >= 1, "a world needs at least one rod (WorldBuilder.add_rod)")
        require(math.isfinite(float(self.damping)) and self.damping >= 0, f"damping must be >= 0 1/s (got {self.damping})")
        rods = []
        for entry in self._rods:
            rod = entry["rod"]
            if entry["clamps"] or entry["pins"]:
                from dataclasses import replace

                rod = replace(rod, boundary=BoundaryConditions(tuple(entry["clamps"]), tuple(sorted(set(entry["pins"])))))
            rods.append(rod)
        loads = WorldLoads(tuple(float(c) for c in np.asarray(self.gravity, dtype=float).reshape(3)), float(self.damping),
                           self._wind, tuple(self._point_forces), point_torques=tuple(self._point_torques))
        return World(tuple(rods), tuple(e["material"] for e in self._rods), tuple(self._bodies), tuple(self._welds),
                     tuple(self._obstacles), loads,
                     ContactSettings(**self._contact, obstacle_friction=tuple(self._obstacle_friction)))
