"""What to draw, and drawing one frame: :class:`RenderScene` (rods' layout, cross-sections and
colours, obstacles, bodies) and :func:`render_frame` (positions + directors -> RGB image).

A scene comes from a :class:`rodlab.world.World` (:meth:`RenderScene.from_world`: every rod's real
radius, elliptical where its bending stiffness is anisotropic, the obstacles and rigid bodies) or
from the arrays a run folder keeps (:meth:`RenderScene.from_arrays`: positions and a radius).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..model import require
from . import mesh as M
from .raster import Camera, fit_camera, rasterize

ROD_PALETTE = np.array([(0.22, 0.42, 0.69), (0.80, 0.37, 0.16), (0.25, 0.58, 0.30), (0.60, 0.25, 0.55),
                        (0.62, 0.45, 0.25), (0.16, 0.55, 0.60), (0.70, 0.22, 0.30), (0.40, 0.40, 0.45)])
HAIR_COLOR = (0.42, 0.26, 0.13)
STRIPE_COLOR = (0.97, 0.93, 0.78)
FRAMES_MATERIAL = "material frames"
FRAMES_TRANSPORTED = "parallel-transported frames"


@dataclass
class RenderScene:
    """Rods ``rod_offsets`` (R + 1,) into the flat vertex arrays, ``rod_closed`` (R,), semi-axes
    ``rod_a1`` / ``rod_a2`` (R,) [m] along m1 / m2, ``rod_color`` (R, 3); ``obstacles``
    (:mod:`rodlab.world.obstacles`); bodies as boxes: ``body_half`` (B, 3) [m], ``body_axes``
    (B, 3, 3) in body coordinates, ``body_q0`` (B, 4) initial orientations (used when a frame
    gives none). ``radius_note``: where the radius came from (for captions)."""

    rod_offsets: np.ndarray
    rod_closed: np.ndarray
    rod_a1: np.ndarray
    rod_a2: np.ndarray
    rod_color: np.ndarray
    obstacles: tuple = ()
    body_half: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    body_axes: np.ndarray = field(default_factory=lambda: np.zeros((0, 3, 3)))
    body_q0: np.ndarray = field(default_factory=lambda: np.zeros((0, 4)))
    radius_note: str = ""

    def __post_init__(self):
        self.rod_offsets = np.asarray(self.rod_offsets, dtype=np.int64)
        n_r = len(self.rod_offsets) - 1
        require(n_r >= 1 and self.rod_offsets[0] == 0 and bool(np.all(np.diff(self.rod_offsets) >= 2)),
                "rod_offsets must start at 0 and give every rod at least 2 vertices")
        self.rod_closed = np.broadcast_to(np.asarray(self.rod_closed, dtype=bool), (n_r,)).copy()
        self.rod_a1 = np.broadcast_to(np.asarray(self.rod_a1, dtype=float), (n_r,)).copy()
        self.rod_a2 = np.broadcast_to(np.asarray(self.rod_a2, dtype=float), (n_r,)).copy()
        require(bool(np.all(np.isfinite(self.rod_a1)) and np.all(self.rod_a1 > 0) and np.all(np.isfinite(self.rod_a2))
                     and np.all(self.rod_a2 > 0)), "rod radius (semi-axes) must be finite and > 0 m")
        self.rod_color = np.broadcast_to(np.asarray(self.rod_color, dtype=float), (n_r, 3)).copy()

    @property
    def n_rods(self) -> int:
        return len(self.rod_offsets) - 1

    @property
    def n_vertices(self) -> int:
        return int(self.rod_offsets[-1])

    @property
    def n_edges(self) -> int:
        """Edges of all rods (a closed rod has as many edges as vertices, an open one one fewer)."""
        return int(np.sum(np.where(self.rod_closed, 0, -1) + np.diff(self.rod_offsets)))

    @classmethod
    def from_world(cls, world, colors=None) -> "RenderScene":
        """Every rod's cross-section from ``world``: the larger semi-axis is the rod's radius, the
        ratio ``a1 / a2 = sqrt(B1 / B2)`` of its bending stiffnesses (an ellipse's second moments
        ``pi a1^3 a2 / 4`` and ``pi a1 a2^3 / 4``); obstacles; bodies as the uniform boxes of
        their mass and inertia."""
        radius = np.asarray(world.rod_radius, dtype=float)
        b = np.asarray(world.edge_bend_stiffness, dtype=float)
        ratio = np.ones(world.n_rods)
        for r in range(world.n_rods):
            br = b[world.rod_edges(r)]
            if len(br) and np.all(br > 0):
                ratio[r] = float(np.sqrt(np.mean(br[:, 0]) / np.mean(br[:, 1])))
        a1 = np.where(ratio >= 1.0, radius, radius * ratio)
        a2 = np.where(ratio >= 1.0, radius / ratio, radius)
        half, axes = [], []
        for body in world.bodies:
            h, ax = M.body_box(body.mass, body.inertia)
            half.append(h)
            axes.append(ax)
        q0 = np.array([b.orientation for b in world.bodies]).reshape(-1, 4)
        return cls(world.rod_vertex_start, world.rod_closed, a1, a2, default_colors(world.n_rods) if colors is None else colors,
                   tuple(world.obstacles), np.array(half).reshape(-1, 3), np.array(axes).reshape(-1, 3, 3), q0,
                   "radius from the world")

    @classmethod
    def from_arrays(cls, rod_offsets, radius, *, rod_closed=False, obstacles=(), colors=None, radius_note: str = "") -> "RenderScene":
        """Circular rods of ``radius`` [m] (one value or one per rod) laid out by ``rod_offsets``."""
        offsets = np.asarray(rod_offsets, dtype=np.int64)
        n_r = len(offsets) - 1
        return cls(offsets, rod_closed, radius, radius, default_colors(n_r) if colors is None else colors, tuple(obstacles),
                   radius_note=radius_note)


def body_records(world) -> list[dict]:
    """The world's rigid bodies as the boxes pictures and the viewer draw (JSON-ready): ``half``
    sizes (3,) [m] and ``axes`` (3, 3, rows of the column matrix, body coordinates) of the uniform
    box of the body's mass and inertia (:func:`rodlab.render.mesh.body_box`), initial ``position``
    (3,) [m] and ``orientation`` (w, x, y, z). ``rodlab run`` stores them in ``trajectory.npz``'s
    metadata ``bodies``."""
    out = []
    for body in world.bodies:
        half, axes = M.body_box(body.mass, body.inertia)
        out.append({"half": [float(v) for v in half], "axes": [float(v) for v in np.asarray(axes).reshape(-1)],
                    "position": [float(v) for v in body.position], "orientation": [float(v) for v in body.orientation]})
    return out


def default_colors(n_rods: int) -> np.ndarray:
    """A palette colour per rod for up to 24 rods; hair brown with a little variation for more."""
    if n_rods <= 24:
        return ROD_PALETTE[np.arange(n_rods) % len(ROD_PALETTE)]
    rng = np.random.default_rng(12)
    return np.clip(np.asarray(HAIR_COLOR) * rng.uniform(0.8, 1.25, size=(n_rods, 1)), 0.0, 1.0)


@dataclass
class FrameInfo:
    """How a frame was drawn: ``frames`` (``FRAMES_MATERIAL`` or ``FRAMES_TRANSPORTED``),
    ``radius_scale`` (>= 1: rods drawn that much thicker than their radius to stay visible),
    ``camera``, ``n_triangles``, ``strips`` (rods under 4 px wide drawn as camera-facing
    strips, without the stripe)."""

    frames: str
    radius_scale: float
    camera: Camera
    n_triangles: int
    strips: bool = False

    def caption(self) -> str:
        if self.strips:
            parts = ["rods under 4 px wide: shaded strips, no d1 stripe"]
            if self.radius_scale > 1.0 + 1e-9:
                parts.append(f"drawn {self.radius_scale:.3g}x their radius")
            return "; ".join(parts)
        parts = ["stripe: d1 of the " + ("material frame" if self.frames == FRAMES_MATERIAL
                                         else "frame parallel-transported from the first edge (twist not stored)")]
        if self.radius_scale > 1.0 + 1e-9:
            parts.append(f"rods drawn {self.radius_scale:.3g}x their radius")
        return "; ".join(parts)


def scene_points(scene: RenderScene, x: np.ndarray, body_x=None) -> np.ndarray:
    """The points a camera must see: rod vertices (any frames, (..., N, 3)), bounded obstacles, bodies."""
    pts = [np.asarray(x, dtype=float).reshape(-1, 3)]
    for ob in scene.obstacles:
        box = M.obstacle_bounds(ob)
        if box is not None:
            pts.append(box)
    if body_x is not None and len(scene.body_half):
        bx = np.asarray(body_x, dtype=float).reshape(-1, 3)
        reach = float(np.max(np.linalg.norm(scene.body_half, axis=1)))
        pts.extend([bx - reach, bx + reach])
    return np.vstack(pts)


def scene_camera(scene: RenderScene, x_all: np.ndarray, *, body_x=None, view: dict | None = None,
                 width: int = 800, height: int = 600) -> Camera:
    """The automatic camera (:func:`rodlab.render.raster.fit_camera`) for every frame of
    ``x_all`` (F, N, 3) or one (N, 3); ``view``: ``azimuth``, ``elevation`` [deg], ``fov_deg``,
    ``orthographic``, ``margin`` overrides (per scene: :data:`rodlab.render.views.SCENE_VIEWS`)."""
    pts = scene_points(scene, x_all, body_x)
    radius = float(max(scene.rod_a1.max(), scene.rod_a2.max()))
    lo, hi = pts.min(axis=0) - radius, pts.max(axis=0) + radius
    return fit_camera(np.vstack([pts, lo, hi]), width=width, height=height, **(view or {}))


def build_mesh(scene: RenderScene, x: np.ndarray, *, edge_m1=None, body_x=None, body_q=None, bounds=None,
               sides: int | None = None, radius_scale: float = 1.0, ribbon_toward: np.ndarray | None = None) -> tuple[M.Mesh, str]:
    """The frame's triangles and which directors the stripe follows (``edge_m1`` (E, 3) given:
    material frames; else parallel-transported). ``ribbon_toward`` (N, 3) unit vectors to the
    eye: draw the rods as camera-facing strips (:func:`rodlab.render.mesh.ribbon_mesh`) instead
    of tubes (for rods a few pixels wide, whose stripe could not be seen)."""
    x = np.asarray(x, dtype=float)
    require(x.ndim == 2 and x.shape[1] == 3 and x.shape[0] == scene.n_vertices,
            f"positions must be (N, 3) with N = {scene.n_vertices} (got {x.shape})")
    require(bool(np.all(np.isfinite(x))), "positions to draw must be finite (got NaN or inf)")
    if ribbon_toward is not None:
        m1, kind = None, FRAMES_MATERIAL if edge_m1 is not None else FRAMES_TRANSPORTED
    elif edge_m1 is None:
        m1, kind = M.transported_d1(x, scene.rod_offsets, scene.rod_closed), FRAMES_TRANSPORTED
    else:
        m1, kind = np.asarray(edge_m1, dtype=float), FRAMES_MATERIAL
        n_e = scene.n_edges
        require(m1.shape == (n_e, 3), f"edge_m1 must be (E, 3) with E = {n_e} (got {m1.shape})")
    if sides is None:
        sides = 12
    if ribbon_toward is not None:
        half = np.maximum(scene.rod_a1, scene.rod_a2) * radius_scale
        parts = [M.ribbon_mesh(x, scene.rod_offsets, scene.rod_closed, ribbon_toward, half, scene.rod_color)]
    else:
        parts = [M.tube_mesh(x, scene.rod_offsets, scene.rod_closed, m1, scene.rod_a1 * radius_scale,
                             scene.rod_a2 * radius_scale, scene.rod_color, STRIPE_COLOR, sides=sides)]
    if scene.obstacles:
        lo, hi = (x.min(axis=0), x.max(axis=0)) if bounds is None else bounds
        parts.extend(M.obstacle_mesh(ob, lo, hi) for ob in scene.obstacles)
    if body_x is not None and len(scene.body_half):
        bx = np.asarray(body_x, dtype=float).reshape(-1, 3)
        bq = scene.body_q0 if body_q is None else np.asarray(body_q, dtype=float).reshape(-1, 4)
        for b in range(len(bx)):
            rot = M.quat_matrix(bq[b]) @ scene.body_axes[b]
            parts.append(M.box_mesh(bx[b], rot, scene.body_half[b]))
    return M.merge(parts), kind


def render_frame(scene: RenderScene, x: np.ndarray, *, edge_m1=None, body_x=None, body_q=None, camera: Camera | None = None,
                 view: dict | None = None, width: int = 800, height: int = 600, supersample: int = 2,
                 min_pixels: float = 1.5, sides: int | None = None, bounds=None) -> tuple[np.ndarray, FrameInfo]:
    """Draw one frame: positions ``x`` (N, 3) [m], optional material directors ``edge_m1``
    (E, 3) (else parallel-transported), bodies at ``body_x`` (B, 3) turned by ``body_q`` (B, 4).
    ``camera``: fixed (animations), else fitted to this frame with ``view``. Rods thinner than
    ``min_pixels`` on screen (at the target's depth) are drawn that thick (the caption says by
    how much). ``bounds``: (lo, hi) box [m] that unbounded obstacles are cut to. Returns the
    (height, width, 3) uint8 image and a :class:`FrameInfo`."""
    x = np.asarray(x, dtype=float)
    if camera is None:
        camera = scene_camera(scene, x, body_x=body_x, view=view, width=width, height=height)
    thinnest = 2.0 * float(min(scene.rod_a1.min(), scene.rod_a2.min()))
    scale = max(1.0, min_pixels * camera.pixel_size_at_target() / thinnest) if min_pixels > 0 else 1.0
    if bounds is None:
        bounds = (x.min(axis=0), x.max(axis=0))
    width_px = scale * thinnest / camera.pixel_size_at_target()
    toward = None
    if sides is None:  # as many sides as the tube's width on screen needs; strips below 4 px
        sides = 6 if width_px < 8 else (8 if width_px < 20 else 12)
        if width_px < 4.0:
            toward = -camera.forward[None, :] if camera.orthographic else M._normalize(camera.eye - x)
    mesh, kind = build_mesh(scene, x, edge_m1=edge_m1, body_x=body_x, body_q=body_q, bounds=bounds, sides=sides,
                            radius_scale=scale, ribbon_toward=toward)
    image = rasterize(mesh, camera, supersample=supersample)
    return image, FrameInfo(kind, scale, camera, len(mesh.triangles), toward is not None)


def render_state(world, state, **kwargs) -> tuple[np.ndarray, FrameInfo]:
    """Draw a :class:`rodlab.world.State` of ``world``: the stripe follows the material director
    d1 of :meth:`State.material_frames`, bodies at their positions and orientations."""
    m1, _ = state.material_frames()
    scene = kwargs.pop("scene", None) or RenderScene.from_world(world)
    return render_frame(scene, state.vertex_x, edge_m1=m1, body_x=state.body_x if world.n_bodies else None,
                        body_q=state.body_q if world.n_bodies else None, **kwargs)
