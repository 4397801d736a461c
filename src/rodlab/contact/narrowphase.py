"""Narrowphase: closest points between segments and against static obstacles (compiled, scalar).

Every function is a numba ``@njit`` kernel over 3-vectors passed as tuples ``(x, y, z)`` of
``float`` [m] (no arrays are allocated, so they can be called from inside any compiled loop) and
returns a tuple. Conventions (see ``docs/contact.md``):

* a segment is ``P(s) = p0 + s (p1 - p0)``, ``s`` in [0, 1]; a second one ``Q(t)``;
* a *normal* is a unit vector pointing from the second object (``b``: a segment or an obstacle)
  toward the first (``a``: the point or segment asked about);
* obstacle distances are *signed* (negative inside the solid) for plane, sphere, capsule and
  cylinder, unsigned for a triangle (a mesh need not be closed), as in
  :mod:`rodlab.world.obstacles`;
* where the minimum is not unique (parallel segments, a segment parallel to a plane or to a
  cylinder axis) the choice is deterministic: the middle of the set of minimisers when it is an
  interval, and a fixed fallback normal when the distance is exactly zero. Nothing returns NaN:
  zero-length segments and coincident points are handled explicitly.

Algorithms: the minimum of the convex quadratic ``|P(s) - Q(t)|^2`` over the unit square is its
unconstrained minimiser when that lies inside, else the best of the four edge minima (each a
point-segment projection); the closest point on a triangle by its Voronoi regions (edge and
vertex regions tested with barycentric sign tests), as laid out in C. Ericson, *Real-Time
Collision Detection*, 2005, Sec. 5.1.
"""
from __future__ import annotations

import math

from numba import njit

from ..geometry._vec import JIT

PARALLEL_SIN2 = 1e-20
"""Segments whose directions have ``sin^2(angle) <= PARALLEL_SIN2`` are treated as parallel."""

TINY = 1e-300
"""Squared lengths at or below this are zero-length [m^2]."""


# ---- 3-vector helpers on tuples ------------------------------------------------------------------
@njit(**JIT)
def vrow(x, i):
    """Row ``i`` of an (N, 3) array as a tuple."""
    return (x[i, 0], x[i, 1], x[i, 2])


@njit(**JIT)
def vsub(a, b):
    return (a[0] - b[0], a[1] - b[1], a[2] - b[2])


@njit(**JIT)
def vadd(a, b):
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2])


@njit(**JIT)
def vscale(a, c):
    return (a[0] * c, a[1] * c, a[2] * c)


@njit(**JIT)
def vaxpy(c, a, b):
    """``b + c a``."""
    return (b[0] + c * a[0], b[1] + c * a[1], b[2] + c * a[2])


@njit(**JIT)
def vdot(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


@njit(**JIT)
def vcross(a, b):
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


@njit(**JIT)
def vnorm(a):
    return math.sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2])


@njit(**JIT)
def vlerp(a, b, s):
    """``a + s (b - a)``."""
    return (a[0] + s * (b[0] - a[0]), a[1] + s * (b[1] - a[1]), a[2] + s * (b[2] - a[2]))


@njit(**JIT)
def clamp01(v):
    return 0.0 if v < 0.0 else (1.0 if v > 1.0 else v)


@njit(**JIT)
def any_perpendicular(u):
    """A unit vector perpendicular to ``u`` (deterministic; ``(0, 0, 1)`` when ``u`` is zero)."""
    ax, ay, az = abs(u[0]), abs(u[1]), abs(u[2])
    if ax <= ay and ax <= az:
        w = (0.0, u[2], -u[1])
    elif ay <= az:
        w = (-u[2], 0.0, u[0])
    else:
        w = (u[1], -u[0], 0.0)
    n = vnorm(w)
    if n <= 0.0:
        return (0.0, 0.0, 1.0)
    return vscale(w, 1.0 / n)


@njit(**JIT)
def unit_or(v, fallback):
    """``v / |v|``, or ``fallback`` when ``v`` is zero."""
    n = vnorm(v)
    if n * n <= TINY:
        return fallback
    return vscale(v, 1.0 / n)


REL_ZERO = 1e-13
"""A separation below ``REL_ZERO`` times the objects' size is rounding noise: its direction is not
used as a normal."""


@njit(**JIT)
def unit_rel(v, scale, fallback):
    """``v / |v|``, or ``fallback`` when ``|v| <= REL_ZERO * scale`` (``v`` is rounding noise)."""
    n = vnorm(v)
    if n * n <= TINY or n <= REL_ZERO * scale:
        return fallback
    return vscale(v, 1.0 / n)


# ---- point and segment against segment -----------------------------------------------------------
@njit(**JIT)
def point_segment(p, a, b):
    """Closest point of segment ``a``-``b`` to point ``p``: ``(t, distance)`` with ``t`` in [0, 1]
    (``t = 0`` for a zero-length segment)."""
    d = vsub(b, a)
    dd = vdot(d, d)
    t = 0.0
    if dd > TINY:
        t = clamp01(vdot(vsub(p, a), d) / dd)
    return t, vnorm(vsub(p, vlerp(a, b, t)))


@njit(**JIT)
def _contact_normal(pa, pb, d1, d2):
    """Unit normal from ``pb`` toward ``pa``; when they coincide, ``d1 x d2`` (segments crossing),
    else a vector perpendicular to ``d1`` (or ``d2``), else ``(0, 0, 1)``."""
    fallback = unit_or(vcross(d1, d2), any_perpendicular(unit_or(d1, unit_or(d2, (0.0, 0.0, 1.0)))))
    return unit_rel(vsub(pa, pb), vnorm(d1) + vnorm(d2), fallback)


@njit(**JIT)
def segment_segment(p0, p1, q0, q1):
    """Closest points of segments ``P = p0-p1`` and ``Q = q0-q1``.

    Returns ``(s, t, distance, normal)``: parameters in [0, 1] of the closest points
    ``P(s)``, ``Q(t)``, their distance [m] and the unit normal from ``Q(t)`` toward ``P(s)``.
    Parallel segments that overlap get the middle of the overlap (in ``s``); zero-length segments
    take parameter 0.
    """
    d1 = vsub(p1, p0)
    d2 = vsub(q1, q0)
    a = vdot(d1, d1)
    e = vdot(d2, d2)
    # the four edges of the unit square: endpoints against the other segment
    t, dist = point_segment(p0, q0, q1)
    best_s, best_t, best = 0.0, t, dist
    t, dist = point_segment(p1, q0, q1)
    if dist < best:
        best_s, best_t, best = 1.0, t, dist
    s, dist = point_segment(q0, p0, p1)
    if dist < best:
        best_s, best_t, best = s, 0.0, dist
    s, dist = point_segment(q1, p0, p1)
    if dist < best:
        best_s, best_t, best = s, 1.0, dist
    if a > TINY and e > TINY:
        r = vsub(p0, q0)
        b = vdot(d1, d2)
        c = vdot(d1, r)
        f = vdot(d2, r)
        denom = a * e - b * b
        if denom > PARALLEL_SIN2 * a * e:
            # unconstrained minimiser of the quadratic; taken when inside and not worse
            s = (b * f - c * e) / denom
            t = (a * f - b * c) / denom
            if 0.0 <= s <= 1.0 and 0.0 <= t <= 1.0:
                dist = vnorm(vsub(vlerp(p0, p1, s), vlerp(q0, q1, t)))
                if dist <= best:
                    best_s, best_t, best = s, t, dist
        else:
            # parallel: the projections of q0, q1 on P's line bound the overlap in s
            sq0 = -c / a
            sq1 = (b - c) / a
            lo = max(0.0, min(sq0, sq1))
            hi = min(1.0, max(sq0, sq1))
            if lo <= hi:
                s = 0.5 * (lo + hi)
                t, dist = point_segment(vlerp(p0, p1, s), q0, q1)
                scale = math.sqrt(a) + math.sqrt(e) + best
                if dist <= best + 1e-12 * scale:
                    best_s, best_t, best = s, t, dist
    pa = vlerp(p0, p1, best_s)
    pb = vlerp(q0, q1, best_t)
    return best_s, best_t, vnorm(vsub(pa, pb)), _contact_normal(pa, pb, d1, d2)


# ---- a point against obstacles: (signed distance, closest surface point, outward normal) --------
@njit(**JIT)
def point_plane(x, o, n):
    """Point ``x`` against the plane through ``o`` with unit normal ``n`` (free side ``n.(x-o) > 0``):
    ``(signed distance, closest point on the plane, n)``."""
    d = vdot(vsub(x, o), n)
    return d, vaxpy(-d, n, x), n


@njit(**JIT)
def point_sphere(x, c, radius):
    """Point against a solid sphere: ``(signed distance, closest surface point, outward normal)``;
    at the centre the normal is ``(0, 0, 1)``."""
    w = vsub(x, c)
    r = vnorm(w)
    n = unit_rel(w, radius, (0.0, 0.0, 1.0))
    return r - radius, vaxpy(radius, n, c), n


@njit(**JIT)
def point_capsule(x, a, b, radius):
    """Point against a solid capsule (segment ``a``-``b`` swept by ``radius``)."""
    t, r = point_segment(x, a, b)
    axis = vlerp(a, b, t)
    n = unit_rel(vsub(x, axis), radius + vnorm(vsub(x, a)) + vnorm(vsub(b, a)),
                 any_perpendicular(unit_or(vsub(b, a), (0.0, 0.0, 1.0))))
    return r - radius, vaxpy(radius, n, axis), n


@njit(**JIT)
def point_cylinder(x, c, u, radius, half_length):
    """Point against a solid capped cylinder: axis through ``c`` along unit ``u``, ``radius``,
    caps at ``c +- half_length u`` (``half_length = inf``: infinite cylinder, no caps)."""
    w = vsub(x, c)
    ax = vdot(w, u)
    rho = vaxpy(-ax, u, w)
    e = unit_rel(rho, radius + vnorm(w), any_perpendicular(u))
    e = unit_or(vaxpy(-vdot(e, u), u, e), any_perpendicular(u))    # exactly across the axis
    r = vnorm(rho)
    sgn = 1.0 if ax >= 0.0 else -1.0
    over_cap = abs(ax) - half_length
    if over_cap <= 0.0 and r <= radius:                    # inside: the nearer of side and cap
        if radius - r <= -over_cap:
            return r - radius, vaxpy(radius, e, vaxpy(ax, u, c)), e
        return over_cap, vadd(vaxpy(sgn * half_length, u, c), rho), vscale(u, sgn)
    if over_cap <= 0.0:                                    # beside the side
        return r - radius, vaxpy(radius, e, vaxpy(ax, u, c)), e
    if r <= radius:                                        # above a cap
        return over_cap, vadd(vaxpy(sgn * half_length, u, c), rho), vscale(u, sgn)
    rim = vaxpy(radius, e, vaxpy(sgn * half_length, u, c))  # beyond the rim
    d = vsub(x, rim)
    return vnorm(d), rim, unit_or(d, e)


@njit(**JIT)
def triangle_barycentric(x, a, b, c):
    """Barycentric coordinates ``(wa, wb, wc)`` (>= 0, sum 1) of the point of triangle ``abc``
    closest to ``x`` (Voronoi regions of vertices, edges and face)."""
    ab = vsub(b, a)
    ac = vsub(c, a)
    ap = vsub(x, a)
    d1 = vdot(ab, ap)
    d2 = vdot(ac, ap)
    if d1 <= 0.0 and d2 <= 0.0:
        return 1.0, 0.0, 0.0
    bp = vsub(x, b)
    d3 = vdot(ab, bp)
    d4 = vdot(ac, bp)
    if d3 >= 0.0 and d4 <= d3:
        return 0.0, 1.0, 0.0
    vc = d1 * d4 - d3 * d2
    if vc <= 0.0 and d1 >= 0.0 and d3 <= 0.0:
        v = d1 / (d1 - d3)
        return 1.0 - v, v, 0.0
    cp = vsub(x, c)
    d5 = vdot(ab, cp)
    d6 = vdot(ac, cp)
    if d6 >= 0.0 and d5 <= d6:
        return 0.0, 0.0, 1.0
    vb = d5 * d2 - d1 * d6
    if vb <= 0.0 and d2 >= 0.0 and d6 <= 0.0:
        w = d2 / (d2 - d6)
        return 1.0 - w, 0.0, w
    va = d3 * d6 - d5 * d4
    if va <= 0.0 and (d4 - d3) >= 0.0 and (d5 - d6) >= 0.0:
        w = (d4 - d3) / ((d4 - d3) + (d5 - d6))
        return 0.0, 1.0 - w, w
    denom = va + vb + vc
    if not denom > 0.0:                                    # degenerate triangle: nearest edge
        tab, dab = point_segment(x, a, b)
        tbc, dbc = point_segment(x, b, c)
        tca, dca = point_segment(x, c, a)
        if dab <= dbc and dab <= dca:
            return 1.0 - tab, tab, 0.0
        if dbc <= dca:
            return 0.0, 1.0 - tbc, tbc
        return tca, 0.0, 1.0 - tca
    v = vb / denom
    w = vc / denom
    return 1.0 - v - w, v, w


@njit(**JIT)
def triangle_normal(a, b, c):
    """Unit normal of triangle ``abc`` by its winding (``(0, 0, 1)`` if degenerate)."""
    return unit_or(vcross(vsub(b, a), vsub(c, a)), (0.0, 0.0, 1.0))


@njit(**JIT)
def point_triangle(x, a, b, c):
    """Point against a triangle: ``(distance >= 0, closest point, normal, wa, wb, wc)``; the
    normal is the face normal, turned toward ``x``, when ``x`` lies on the triangle."""
    wa, wb, wc = triangle_barycentric(x, a, b, c)
    q = (wa * a[0] + wb * b[0] + wc * c[0], wa * a[1] + wb * b[1] + wc * c[1], wa * a[2] + wb * b[2] + wc * c[2])
    d = vsub(x, q)
    fn = triangle_normal(a, b, c)
    if vdot(vsub(x, a), fn) < 0.0:
        fn = vscale(fn, -1.0)
    size = vnorm(vsub(b, a)) + vnorm(vsub(c, a))
    return vnorm(d), q, unit_rel(d, size, fn), wa, wb, wc


# ---- a segment against obstacles: (s, signed distance, closest surface point, normal) ------------
@njit(**JIT)
def segment_plane(p0, p1, o, n):
    """Segment against a plane: the deeper endpoint (the midpoint when the segment is parallel to
    the plane to within 1e-12 of its length)."""
    d0 = vdot(vsub(p0, o), n)
    d1 = vdot(vsub(p1, o), n)
    if abs(d0 - d1) <= 1e-12 * vnorm(vsub(p1, p0)):
        s = 0.5
    else:
        s = 0.0 if d0 < d1 else 1.0
    d, q, nn = point_plane(vlerp(p0, p1, s), o, n)
    return s, d, q, nn


@njit(**JIT)
def segment_sphere(p0, p1, c, radius):
    """Segment against a solid sphere: its point nearest the centre."""
    s, _ = point_segment(c, p0, p1)
    d, q, nn = point_sphere(vlerp(p0, p1, s), c, radius)
    if vnorm(vsub(vlerp(p0, p1, s), c)) <= REL_ZERO * radius:  # through the centre: a normal across it
        nn = any_perpendicular(unit_or(vsub(p1, p0), (0.0, 0.0, 1.0)))
        q = vaxpy(radius, nn, c)
    return s, d, q, nn


@njit(**JIT)
def segment_capsule(p0, p1, a, b, radius):
    """Segment against a solid capsule (segment ``a``-``b`` of ``radius``)."""
    s, t, r, nn = segment_segment(p0, p1, a, b)
    return s, r - radius, vaxpy(radius, nn, vlerp(a, b, t)), nn


@njit(**JIT)
def _cylinder_sd(p0, p1, s, c, u, radius, half_length):
    d, _, _ = point_cylinder(vlerp(p0, p1, s), c, u, radius, half_length)
    return d


@njit(**JIT)
def segment_cylinder(p0, p1, c, u, radius, half_length):
    """Segment against a solid capped cylinder (``half_length = inf``: infinite). The radial
    distance to the axis is minimised exactly (the middle of the segment when it is parallel to
    the axis); with caps the signed distance, convex along the segment, is minimised by 80 steps
    of golden-section search (bracket 0.618^80 ~ 2e-17)."""
    w0 = vsub(p0, c)
    d = vsub(p1, p0)
    a0 = vaxpy(-vdot(w0, u), u, w0)                        # radial offset at s = 0 and its rate
    bb = vaxpy(-vdot(d, u), u, d)
    den = vdot(bb, bb)
    if den <= 1e-24 * max(vdot(d, d), TINY):
        s = 0.5
    else:
        s = clamp01(-vdot(a0, bb) / den)
    if half_length < math.inf:
        lo, hi = 0.0, 1.0
        g = 0.5 * (math.sqrt(5.0) - 1.0)
        x1 = hi - g * (hi - lo)
        x2 = lo + g * (hi - lo)
        f1 = _cylinder_sd(p0, p1, x1, c, u, radius, half_length)
        f2 = _cylinder_sd(p0, p1, x2, c, u, radius, half_length)
        for _ in range(80):
            if f1 <= f2:
                hi, x2, f2 = x2, x1, f1
                x1 = hi - g * (hi - lo)
                f1 = _cylinder_sd(p0, p1, x1, c, u, radius, half_length)
            else:
                lo, x1, f1 = x1, x2, f2
                x2 = lo + g * (hi - lo)
                f2 = _cylinder_sd(p0, p1, x2, c, u, radius, half_length)
        best = 0.5 * (lo + hi)
        fb = _cylinder_sd(p0, p1, best, c, u, radius, half_length)
        for cand in (0.0, 1.0, s):                         # endpoints and the side minimiser
            fc = _cylinder_sd(p0, p1, cand, c, u, radius, half_length)
            if fc < fb:
                best, fb = cand, fc
        s = best
    dist, q, nn = point_cylinder(vlerp(p0, p1, s), c, u, radius, half_length)
    return s, dist, q, nn


@njit(**JIT)
def segment_triangle(p0, p1, a, b, c):
    """Segment against a triangle: ``(s, distance >= 0, closest point on the triangle, normal)``.
    Candidates: both endpoints against the face, the segment against the three edges, and the
    segment's crossing of the face (distance 0, normal the face normal turned toward ``p0``)."""
    d, q, nn, _, _, _ = point_triangle(p0, a, b, c)
    best_s, best, best_q, best_n = 0.0, d, q, nn
    d, q, nn, _, _, _ = point_triangle(p1, a, b, c)
    if d < best:
        best_s, best, best_q, best_n = 1.0, d, q, nn
    for k in range(3):
        ea = a if k == 0 else (b if k == 1 else c)
        eb = b if k == 0 else (c if k == 1 else a)
        s, t, d, nn = segment_segment(p0, p1, ea, eb)
        if d < best:
            best_s, best, best_q, best_n = s, d, vlerp(ea, eb, t), nn
    fn = triangle_normal(a, b, c)
    h0 = vdot(vsub(p0, a), fn)
    h1 = vdot(vsub(p1, a), fn)
    if (h0 > 0.0 and h1 < 0.0) or (h0 < 0.0 and h1 > 0.0):
        s = h0 / (h0 - h1)
        x = vlerp(p0, p1, s)
        wa, wb, wc = triangle_barycentric(x, a, b, c)
        q = (wa * a[0] + wb * b[0] + wc * c[0], wa * a[1] + wb * b[1] + wc * c[1], wa * a[2] + wb * b[2] + wc * c[2])
        d = vnorm(vsub(x, q))
        if d < best:
            best_s, best, best_q = s, d, q
            best_n = fn if h0 > 0.0 else vscale(fn, -1.0)
    return best_s, best, best_q, best_n


# ---- dispatch on the flat obstacle rows of rodlab.contact.geometry ------------------------------
PLANE, SPHERE, CAPSULE, CYLINDER, MESH = 0, 1, 2, 3, 4
"""``obstacle_kind`` codes; ``obstacle_param`` rows: plane (point, normal), sphere (centre,
radius), capsule (a, b, radius), cylinder (point, unit axis, radius, half length), mesh (unused)."""


@njit(**JIT)
def point_obstacle(x, kind, prm):
    """A point against analytic obstacle row ``prm`` of kind ``kind`` (not a mesh):
    ``(signed distance, closest surface point, outward normal)``."""
    if kind == PLANE:
        return point_plane(x, (prm[0], prm[1], prm[2]), (prm[3], prm[4], prm[5]))
    if kind == SPHERE:
        return point_sphere(x, (prm[0], prm[1], prm[2]), prm[3])
    if kind == CAPSULE:
        return point_capsule(x, (prm[0], prm[1], prm[2]), (prm[3], prm[4], prm[5]), prm[6])
    return point_cylinder(x, (prm[0], prm[1], prm[2]), (prm[3], prm[4], prm[5]), prm[6], prm[7])


@njit(**JIT)
def segment_obstacle(p0, p1, kind, prm):
    """A segment against analytic obstacle row ``prm``: ``(s, signed distance, closest surface
    point, outward normal)``."""
    if kind == PLANE:
        return segment_plane(p0, p1, (prm[0], prm[1], prm[2]), (prm[3], prm[4], prm[5]))
    if kind == SPHERE:
        return segment_sphere(p0, p1, (prm[0], prm[1], prm[2]), prm[3])
    if kind == CAPSULE:
        return segment_capsule(p0, p1, (prm[0], prm[1], prm[2]), (prm[3], prm[4], prm[5]), prm[6])
    return segment_cylinder(p0, p1, (prm[0], prm[1], prm[2]), (prm[3], prm[4], prm[5]), prm[6], prm[7])
