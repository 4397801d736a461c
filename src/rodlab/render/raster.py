"""Camera and z-buffer rasteriser: triangles -> an RGB image, nearest surface wins per pixel.

The camera is z-up by default (rodlab's gravity is along -z). Perspective or orthographic; depth
is compared through a key that is affine in screen space (``-1 / depth`` in perspective, the
depth itself in orthographic), so interpolating it with the screen-space barycentrics is exact.
Shading: ambient + Lambert of a light above and left of the camera, computed per vertex from its
normal and interpolated over the triangle (Gouraud), times the triangle's colour.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import njit

from ..aot import kernel
from ..model import require


@dataclass
class Camera:
    """``eye``, ``target`` (3,) [m], ``up`` (3,); ``fov_deg`` vertical field of view of a
    perspective camera, or ``ortho_height`` [m] (the world height the image spans) for an
    orthographic one; ``width`` x ``height`` pixels."""

    eye: np.ndarray
    target: np.ndarray
    up: np.ndarray = (0.0, 0.0, 1.0)
    width: int = 800
    height: int = 600
    fov_deg: float = 30.0
    ortho_height: float | None = None

    def __post_init__(self):
        self.eye = np.asarray(self.eye, dtype=float)
        self.target = np.asarray(self.target, dtype=float)
        self.up = np.asarray(self.up, dtype=float)
        require(self.width >= 8 and self.height >= 8, f"image size must be at least 8 x 8 pixels (got {self.width} x {self.height})")
        require(0.5 <= self.fov_deg <= 150, f"camera fov_deg must be in [0.5, 150] (got {self.fov_deg})")
        require(self.ortho_height is None or self.ortho_height > 0, f"camera ortho_height must be > 0 m (got {self.ortho_height})")
        f = self.target - self.eye
        require(np.linalg.norm(f) > 0, "camera eye and target must differ")
        f = f / np.linalg.norm(f)
        r = np.cross(f, self.up)
        require(np.linalg.norm(r) > 1e-9, "camera up must not be parallel to the view direction")
        r /= np.linalg.norm(r)
        self.forward, self.right, self.true_up = f, r, np.cross(r, f)

    @property
    def orthographic(self) -> bool:
        return self.ortho_height is not None

    def scaled(self, factor: int) -> "Camera":
        return Camera(self.eye, self.target, self.up, self.width * factor, self.height * factor, self.fov_deg, self.ortho_height)

    def focal_px(self) -> float:
        """Pixels per unit of (lateral offset / depth) for perspective, per metre for orthographic."""
        if self.orthographic:
            return self.height / self.ortho_height
        return 0.5 * self.height / math.tan(math.radians(0.5 * self.fov_deg))

    def pixel_size_at_target(self) -> float:
        """Metres per pixel at the target's depth."""
        if self.orthographic:
            return self.ortho_height / self.height
        return float(np.linalg.norm(self.target - self.eye)) / self.focal_px()

    def project(self, p: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Screen coordinates ``(sx, sy)`` [px] (origin top left, y down), depth key (smaller =
        nearer) and depth [m] of points ``p`` (V, 3)."""
        d = np.asarray(p, dtype=float) - self.eye
        xc, yc, zc = d @ self.right, d @ self.true_up, d @ self.forward
        f = self.focal_px()
        if self.orthographic:
            return 0.5 * self.width + f * xc, 0.5 * self.height - f * yc, zc, zc
        safe = np.where(zc > 1e-12, zc, 1e-12)
        return 0.5 * self.width + f * xc / safe, 0.5 * self.height - f * yc / safe, -1.0 / safe, zc

    def light_direction(self) -> np.ndarray:
        """Unit vector towards the light: behind the camera, above and to the left."""
        v = -self.forward + 0.7 * self.true_up - 0.45 * self.right
        return v / np.linalg.norm(v)


def view_direction(azimuth_deg: float, elevation_deg: float) -> np.ndarray:
    """Unit vector from the target to the eye, z up (matplotlib's azim/elev convention)."""
    az, el = math.radians(azimuth_deg), math.radians(elevation_deg)
    return np.array([math.cos(el) * math.cos(az), math.cos(el) * math.sin(az), math.sin(el)])


def fit_camera(points: np.ndarray, *, azimuth: float = -60.0, elevation: float = 25.0, width: int = 800,
               height: int = 600, fov_deg: float = 30.0, orthographic: bool = False, margin: float = 1.08,
               up=(0.0, 0.0, 1.0)) -> Camera:
    """A camera looking from (``azimuth``, ``elevation``) [deg] that fits ``points`` (K, 3) [m]
    into the image with ``margin``: the target is the middle of their extent across the view,
    the distance the least that keeps every point inside (exact for perspective)."""
    pts = np.asarray(points, dtype=float).reshape(-1, 3)
    require(pts.shape[0] >= 1 and bool(np.all(np.isfinite(pts))), "camera fit needs finite points")
    back = view_direction(azimuth, elevation)
    up = np.asarray(up, dtype=float)
    if abs(float(back @ up)) > 0.999:  # looking straight down or up: image up is +y
        up = np.array([0.0, 1.0, 0.0])
    fwd = -back
    right = np.cross(fwd, up)
    right /= np.linalg.norm(right)
    true_up = np.cross(right, fwd)
    centre = 0.5 * (pts.min(axis=0) + pts.max(axis=0))
    a, b = (pts - centre) @ right, (pts - centre) @ true_up
    centre = centre + 0.5 * (a.max() + a.min()) * right + 0.5 * (b.max() + b.min()) * true_up
    a, b, c = (pts - centre) @ right, (pts - centre) @ true_up, (pts - centre) @ fwd
    span = max(float(np.ptp(pts, axis=0).max()), 1e-6)
    aspect = width / height
    if orthographic:
        h = max(2 * float(np.abs(b).max()), 2 * float(np.abs(a).max()) / aspect, 1e-3 * span) * margin
        eye = centre - (2.0 * span + 1.0) * fwd
        return Camera(eye, centre, up, width, height, fov_deg, h)
    ty = math.tan(math.radians(0.5 * fov_deg)) / margin
    tx = ty * aspect
    dist = float(np.max(np.maximum(np.abs(a) / tx, np.abs(b) / ty) - c))
    dist = max(dist, float(np.max(-c)) + 0.05 * span, 1e-3 * span)
    return Camera(centre - dist * fwd, centre, up, width, height, fov_deg, None)


@njit(cache=True)
def _rasterize(sx, sy, key, shade, tri, tri_color, cull, image, zbuf):  # pragma: no cover - compiled
    h, w = zbuf.shape
    for t in range(tri.shape[0]):
        i, j, k = tri[t, 0], tri[t, 1], tri[t, 2]
        x0, y0, x1, y1, x2, y2 = sx[i], sy[i], sx[j], sy[j], sx[k], sy[k]
        area = (x1 - x0) * (y2 - y0) - (x2 - x0) * (y1 - y0)
        if abs(area) < 1e-12 or not (area == area) or (cull[t] and area > 0.0):  # y down: front faces have area < 0
            continue
        xmin = max(int(math.floor(min(x0, x1, x2))), 0)
        xmax = min(int(math.ceil(max(x0, x1, x2))), w - 1)
        ymin = max(int(math.floor(min(y0, y1, y2))), 0)
        ymax = min(int(math.ceil(max(y0, y1, y2))), h - 1)
        if xmin > xmax or ymin > ymax:
            continue
        inv = 1.0 / area
        z0, z1, z2 = key[i], key[j], key[k]
        s0, s1, s2 = shade[i], shade[j], shade[k]
        cr, cg, cb = tri_color[t, 0], tri_color[t, 1], tri_color[t, 2]
        # per row, the barycentrics are affine in the pixel centre cx: w_i = a_i cx + b_i; the
        # covered span is where all three are >= 0 (thin slanted triangles: far less than the box)
        a0 = (y1 - y2) * inv
        a1 = (y2 - y0) * inv
        a2 = -(a0 + a1)
        for py in range(ymin, ymax + 1):
            cy = py + 0.5
            b0 = (x1 * (y2 - cy) - x2 * (y1 - cy)) * inv
            b1 = (x2 * (y0 - cy) - x0 * (y2 - cy)) * inv
            b2 = 1.0 - b0 - b1
            lo, hi = -1e30, 1e30
            empty = False
            for a, b in ((a0, b0), (a1, b1), (a2, b2)):
                if abs(a) < 1e-14:
                    if b < 0.0:
                        empty = True
                elif a > 0.0:
                    lo = max(lo, -b / a)
                else:
                    hi = min(hi, -b / a)
            if empty or lo > hi:
                continue
            start = max(xmin, int(math.floor(lo - 0.5)))
            stop = min(xmax, int(math.ceil(hi - 0.5)))
            for px in range(start, stop + 1):
                cx = px + 0.5
                w0 = a0 * cx + b0
                w1 = a1 * cx + b1
                w2 = a2 * cx + b2
                if w0 < 0.0 or w1 < 0.0 or w2 < 0.0:
                    continue
                z = w0 * z0 + w1 * z1 + w2 * z2
                if z < zbuf[py, px]:
                    zbuf[py, px] = z
                    s = w0 * s0 + w1 * s1 + w2 * s2
                    image[py, px, 0] = cr * s
                    image[py, px, 1] = cg * s
                    image[py, px, 2] = cb * s


_BUFFERS: dict = {}


def _buffers(h: int, w: int) -> tuple[np.ndarray, np.ndarray]:
    """Colour and depth buffers reused between frames of one size (fresh memory costs more to
    touch than the drawing itself); the last two sizes are kept."""
    key = (h, w)
    if key not in _BUFFERS:
        while len(_BUFFERS) >= 2:
            _BUFFERS.pop(next(iter(_BUFFERS)))
        _BUFFERS[key] = (np.empty((h, w, 3), dtype=np.float32), np.empty((h, w)))
    return _BUFFERS[key]


BACKGROUND = (1.0, 1.0, 1.0)
AMBIENT = 0.32


def rasterize(mesh, camera: Camera, *, background=BACKGROUND, ambient: float = AMBIENT, supersample: int = 1) -> np.ndarray:
    """Draw ``mesh`` (:class:`rodlab.render.mesh.Mesh`) with ``camera``: (height, width, 3) uint8.
    Triangles with a vertex behind the eye are left out, and so are the back faces of closed
    surfaces (``mesh.closed``). ``supersample`` s: drawn at s x the
    size and averaged over s x s blocks (anti-aliasing)."""
    require(isinstance(supersample, (int, np.integer)) and 1 <= supersample <= 4, f"supersample must be 1, 2, 3 or 4 (got {supersample})")
    cam = camera.scaled(int(supersample)) if supersample > 1 else camera
    image, zbuf = _buffers(cam.height, cam.width)
    _clear_call(image, zbuf, np.asarray(background, dtype=np.float32))
    if len(mesh.triangles):
        sx, sy, key, depth = cam.project(mesh.vertices)
        n = mesh.normals
        two = np.broadcast_to(np.asarray(mesh.two_sided, dtype=bool), (len(n),))
        if np.any(two):
            facing_away = np.sum(n * (mesh.vertices - cam.eye), axis=1) > 0
            n = np.where((two & facing_away)[:, None], -n, n)
        shade = ambient + (1.0 - ambient) * np.clip(n @ cam.light_direction(), 0.0, None)
        tri = np.asarray(mesh.triangles, dtype=np.int64)
        near = 1e-6 * max(float(np.linalg.norm(cam.target - cam.eye)), 1e-9)
        keep = np.all(depth[tri] > near, axis=1) if not cam.orthographic else np.ones(len(tri), dtype=bool)
        _rasterize_call(sx, sy, np.ascontiguousarray(key, dtype=float), np.ascontiguousarray(shade, dtype=float),
                   np.ascontiguousarray(tri[keep]), np.ascontiguousarray(mesh.colors[keep], dtype=float),
                   np.ascontiguousarray(np.broadcast_to(np.asarray(mesh.closed, dtype=bool), (len(tri),))[keep]), image, zbuf)
    out = np.empty((camera.height, camera.width, 3), dtype=np.uint8)
    _downsample_call(image, int(supersample), out)
    return out


@njit(cache=True)
def _clear(image, zbuf, background):  # pragma: no cover - compiled
    h, w = zbuf.shape
    for y in range(h):
        for x in range(w):
            zbuf[y, x] = np.inf
            image[y, x, 0] = background[0]
            image[y, x, 1] = background[1]
            image[y, x, 2] = background[2]


@njit(cache=True)
def _downsample(image, s, out):  # pragma: no cover - compiled
    h, w = out.shape[0], out.shape[1]
    scale = np.float32(255.0 / (s * s))
    for y in range(h):
        for x in range(w):
            a0 = a1 = a2 = np.float32(0.0)
            for i in range(s):
                for j in range(s):
                    a0 += image[y * s + i, x * s + j, 0]
                    a1 += image[y * s + i, x * s + j, 1]
                    a2 += image[y * s + i, x * s + j, 2]
            out[y, x, 0] = min(max(int(a0 * scale + 0.5), 0), 255)
            out[y, x, 1] = min(max(int(a1 * scale + 0.5), 0), 255)
            out[y, x, 2] = min(max(int(a2 * scale + 0.5), 0), 255)


# rasterize() calls these from Python: their ahead-of-time entries where built (rodlab.aot), else the dispatchers
_clear_call, _rasterize_call, _downsample_call = map(kernel, (_clear, _rasterize, _downsample))
