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
from .world import Body, RodMaterial, RodPointForce, Weld, Wind, World, WorldLoads

ENDS = ("start", "end")


def _end_edge(end, n_edges: int, what: str) -> int:
    if isinstance(end, str):
        require(end in ENDS, f"{what} must be one of {', '.join(ENDS)} or an edge index (got {end!r})")
        return 0 if end == "start" else n_edges - 1
    require(isinstance(end, (int, np.integer)) and -n_edges <= end < n_edges,
            f"{what} edge must be in [-{n_edges}, {n_edges - 1}] (got {end!r})")
    return int(end) % n_edges


class WorldBuilder:
    """Collects a world's parts; :meth:`build` validates and freezes them (module docstring)."""

    def __init__(self, *, gravity=(0.0, 0.0, 0.0), damping: float = 0.0):
        self._rods: list[dict] = []
        self._bodies: list[Body] = []
        self._welds: list[Weld] = []
        self._obstacles: list[Obstacle] = []
        self._point_forces: list[RodPointForce] = []
        self._wind: Wind | None = None
        self.gravity = gravity
        self.damping = damping

    # ---- rods ---------------------------------------------------------------------------------
    def add_rod(self, points, *, E: float | None = None, G: float | None = None, rho: float | None = None,
                radius: float | None = None, section: CrossSection | None = None,
                bending: float | tuple[float, float] | None = None, twisting: float | None = None,
                linear_density: float | None = None, stretching: float = 0.0,
                closed: bool = False, rest_d1=None, rest_curvature=None, rest_twist=None) -> int:
        """Add a rod at rest along ``points`` (n, 3) [m]; returns its index.

        Either a material (``E``, ``G`` [Pa], ``rho`` [kg/m^3]) with a circular ``radius`` [m] or an
        elliptical ``section``, or stiffness values directly (``bending`` [N m^2], one value or the
        two of an anisotropic section, ``twisting`` [N m^2], ``linear_density`` [kg/m], optional
        ``stretching`` [N], ``radius`` for drawing and contact). ``rest_d1`` (n_edges, 3): rest
        material director m1 (default: the rest polyline's Bishop frame); ``rest_curvature``
        (n_joints, 4) and ``rest_twist`` (n_joints,) override those of the rest shape.
        """
        pts = np.asarray(points, dtype=float)
        nmin = 3 if closed else 2
        require(pts.ndim == 2 and pts.shape[1] == 3 and pts.shape[0] >= nmin and bool(np.all(np.isfinite(pts))),
                f"points must be a finite (n, 3) array with n >= {nmin} vertices for {'a closed' if closed else 'an open'} rod "
                f"(got shape {pts.shape})")
        seg = np.linalg.norm(np.diff(np.vstack([pts, pts[:1]]) if closed else pts, axis=0), axis=1)
        require(bool(np.all(seg > 0)), f"points has a zero-length edge (edge {int(np.argmin(seg))}): edge lengths must be > 0 m")
        by_material = any(v is not None for v in (E, G, rho))
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
            require(None not in (bending, twisting, linear_density), "add_rod by stiffness needs bending, twisting and linear_density")
            rod = Rod.from_stiffness(points, bending=bending, twisting=float(twisting), linear_density=float(linear_density),
                                     stretching=float(stretching), radius=0.01 if radius is None else float(radius),
                                     closed=closed, rest_d1=rest_d1, rest_curvature=rest_curvature, rest_twist=rest_twist)
            material = None
        self._rods.append({"rod": rod, "material": material, "clamps": [], "pins": []})
        return len(self._rods) - 1

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
    def add_obstacle(self, obstacle: Obstacle) -> int:
        require(isinstance(obstacle, (Plane, Sphere, Capsule, Cylinder, TriangleMesh)),
                f"obstacle must be a Plane, Sphere, Capsule, Cylinder or TriangleMesh (got {type(obstacle).__name__})")
        self._obstacles.append(obstacle)
        return len(self._obstacles) - 1

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
                           self._wind, tuple(self._point_forces))
        return World(tuple(rods), tuple(e["material"] for e in self._rods), tuple(self._bodies), tuple(self._welds),
                     tuple(self._obstacles), loads)
