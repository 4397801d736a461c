"""Barrier contact and lagged smoothed friction for implicit DER (IPC; issue "Contact and friction").

The contact model of Li et al., "Incremental Potential Contact: intersection- and inversion-free,
large-deformation dynamics" (ACM TOG 2020), applied to rods: every pair of primitives closer than
``dhat`` adds a smooth log barrier on their gap to the incremental potential that Newton minimises,
and Coulomb friction enters as a lagged, mollified dissipative potential.

Primitives (one row of a contact table, ``ptype``):

* ``SEG_SEG`` (0): two segments of rods (4 moving points), gap = centre-line distance minus both radii;
* ``SEG_FIXSEG`` (1): a rod segment against a fixed segment (a capsule's axis, an infinite or capped
  cylinder's axis, a triangle edge of a mesh), minus the rod radius plus the obstacle's radius;
* ``SEG_FIXPT`` (2): a rod segment against a fixed point (a sphere's centre);
* ``VERT_PLANE`` (3): a rod vertex against a plane (signed distance; the closest point of a segment to a
  plane is one of its vertices);
* ``VERT_FIXTRI`` (4): a rod vertex against a fixed triangle of a mesh.

Distances (IPC Sec. 4.2, "distance types"): the squared distance ``D = |w|^2`` between the closest
points, ``w = sum_i c_i(u) X_i`` an affine combination of the primitive's points ``X_i`` whose
coefficients are affine in the closest-point parameters ``u`` (segment parameters ``s``, ``t``; a
triangle's barycentric ``(u, v)``). The *type* is which parameters are interior (free) at the
minimiser: both (edge-edge, point-triangle), one (point-edge) or none (point-point). With the type
fixed, the envelope theorem gives ``dD/dX_i = 2 c_i w`` and the second derivative
``H = 2 c c^T (x) I - J^T A^{-1} J`` with ``A_ab = 2 W_a . W_b``, ``W_a = dw/du_a`` and
``J_{a,i} = 2 G_{ai} w + 2 c_i W_a`` (``G_a = dc/du_a``): the Hessian of the minimum over the free
parameters (the implicit-function theorem on ``dD/du = 0``), which equals the explicit formulas of
the point-point, point-edge, edge-edge and point-triangle distances. Nearly parallel segments
(``|e_a x e_b|^2 <= 1e-10 |e_a|^2 |e_b|^2``) are measured as point-edge (the distance is the same;
IPC mollifies this case instead).

Barrier (IPC Eq. 6, here on the gap ``g`` [m] rather than the squared distance):
``B(g) = -kappa (g - dhat)^2 ln(g / dhat)`` for ``0 < g < dhat``, 0 beyond; ``kappa`` [N/m].
``g = sqrt(D) - r_sum``; ``dg = dD / (2 sqrt D)``,
``d2g = d2D / (2 sqrt D) - dD dD^T / (4 D^{3/2})``; the contact's Hessian
``kappa (b'' dg dg^T + b' d2g)`` is projected to positive semi-definite by clamping its eigenvalues
at zero (IPC Sec. 5, per-stencil projection), on the rows of the moving points only. For two
segments the Hessian's range is spanned by ``c (x) e_j`` (``j < 3``) and ``G_a (x) n`` (``n`` the
unit normal; ``J_a`` and ``dg`` are combinations of these): rank at most 5 of 12, so its
eigenproblem is solved in an orthonormal basis of that span (5 x 5 instead of 12 x 12, the same
projection up to round-off).

Friction (IPC Sec. 5.1-5.3, lagged once per time step): at the step's start each active contact fixes
its normal force ``lambda = kappa |b'(g)|`` [N], its closest-point coefficients ``c`` and a tangent
basis ``T`` (3 x 2) orthogonal to the contact normal. The relative tangential displacement over
the step is ``u = T^T sum_i c_i (x_i - x_i^n)`` and friction adds ``mu lambda f0(|u|)`` with IPC's
mollifier ``f0(y) = -y^3 / (3 eps^2) + y^2 / eps + eps / 3`` for ``y < eps = eps_v h``, ``f0(y) = y``
beyond: kinetic friction ``mu lambda`` against the slip above the sliding speed ``eps_v`` [m/s],
a stiff spring below it (static friction, with creep of order ``eps_v``). Its gradient is
``mu lambda f1(y) / y T u`` per point (times ``c_i``), ``f1 = f0'``, and its Hessian
``mu lambda T [f1 / y I + (f1' y - f1) / y^3 u u^T] T^T`` is positive semi-definite as it stands.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from ..geometry._vec import JIT

SEG_SEG, SEG_FIXSEG, SEG_FIXPT, VERT_PLANE, VERT_FIXTRI = 0, 1, 2, 3, 4
PARALLEL = 1e-10
"""Relative ``|e_a x e_b|^2 / (|e_a|^2 |e_b|^2)`` below which two segments are measured as point-edge."""

N_POINTS = np.array([4, 4, 3, 1, 4], dtype=np.int64)  # points of each primitive type (moving first)
N_MOVING = np.array([4, 2, 2, 1, 1], dtype=np.int64)


# ---- barrier ----------------------------------------------------------------------------------
@njit(**JIT)
def barrier(g, dhat):
    """``(b, b', b'')`` of ``b(g) = -(g - dhat)^2 ln(g / dhat)`` [m^2] (0 for ``g >= dhat``; ``inf``
    for ``g <= 0``)."""
    if g >= dhat:
        return 0.0, 0.0, 0.0
    if g <= 0.0:
        return math.inf, -math.inf, math.inf
    d = g - dhat
    lg = math.log(g / dhat)
    return -d * d * lg, -2.0 * d * lg - d * d / g, -2.0 * lg - 4.0 * d / g + d * d / (g * g)


# ---- closest points and distance types --------------------------------------------------------
@njit(**JIT)
def _clamp01(v):
    return 0.0 if v < 0.0 else (1.0 if v > 1.0 else v)


@njit(**JIT)
def _seg_seg_type(X, c0, G):
    """Closest points of segments ``X[0]X[1]`` and ``X[2]X[3]``; fills ``c0`` (4,) and ``G`` (2, 4);
    returns ``(na, u0, u1)``: the number of free parameters and their values."""
    ea = X[1] - X[0]
    eb = X[3] - X[2]
    r = X[0] - X[2]
    a = ea @ ea
    e = eb @ eb
    b = ea @ eb
    c = ea @ r
    f = eb @ r
    den = a * e - b * b
    if a <= 0.0 or e <= 0.0:
        s = 0.0
        t = _clamp01(f / e) if e > 0.0 else 0.0
        if a > 0.0:
            s = _clamp01(-c / a)
        sfree = False
        tfree = e > 0.0 and 0.0 < t < 1.0
        if a > 0.0 and not tfree:
            sfree = 0.0 < s < 1.0
    elif den <= PARALLEL * a * e:
        t = f / e
        if 0.0 <= t <= 1.0:
            s = 0.0
            sfree, tfree = False, 0.0 < t < 1.0
        else:
            t = _clamp01(t)
            s = _clamp01((b * t - c) / a)
            sfree, tfree = 0.0 < s < 1.0, False
    else:
        s = _clamp01((b * f - c * e) / den)
        t = (b * s + f) / e
        if t < 0.0:
            t = 0.0
            s = _clamp01(-c / a)
        elif t > 1.0:
            t = 1.0
            s = _clamp01((b - c) / a)
        sfree, tfree = 0.0 < s < 1.0, 0.0 < t < 1.0
    G[:, :] = 0.0
    na = 0
    u0 = 0.0
    u1 = 0.0
    if sfree:
        c0[0], c0[1] = 1.0, 0.0
        G[na, 0], G[na, 1] = -1.0, 1.0
        u0 = s
        na += 1
    else:
        c0[0], c0[1] = 1.0 - s, s
    if tfree:
        c0[2], c0[3] = -1.0, 0.0
        G[na, 2], G[na, 3] = 1.0, -1.0
        if na == 0:
            u0 = t
        else:
            u1 = t
        na += 1
    else:
        c0[2], c0[3] = -(1.0 - t), -t
    return na, u0, u1


@njit(**JIT)
def _seg_point_type(X, c0, G):
    """Point ``X[2]`` against segment ``X[0]X[1]`` (``w = X(s) - X[2]``)."""
    ea = X[1] - X[0]
    a = ea @ ea
    s = _clamp01(((X[2] - X[0]) @ ea) / a) if a > 0.0 else 0.0
    G[:, :] = 0.0
    c0[2] = -1.0
    c0[3] = 0.0
    if 0.0 < s < 1.0:
        c0[0], c0[1] = 1.0, 0.0
        G[0, 0], G[0, 1] = -1.0, 1.0
        return 1, s, 0.0
    c0[0], c0[1] = 1.0 - s, s
    return 0, 0.0, 0.0


@njit(**JIT)
def _point_triangle_type(X, c0, G):
    """Point ``X[0]`` against triangle ``X[1]X[2]X[3]`` (``w = X[0] - closest point``), by the
    Voronoi regions of the triangle (C. Ericson, *Real-Time Collision Detection*, 2005, Sec. 5.1.5)."""
    p, a, b, c = X[0], X[1], X[2], X[3]
    ab = b - a
    ac = c - a
    ap = p - a
    d1 = ab @ ap
    d2 = ac @ ap
    G[:, :] = 0.0
    c0[0] = 1.0
    if d1 <= 0.0 and d2 <= 0.0:
        c0[1], c0[2], c0[3] = -1.0, 0.0, 0.0
        return 0, 0.0, 0.0
    bp = p - b
    d3 = ab @ bp
    d4 = ac @ bp
    if d3 >= 0.0 and d4 <= d3:
        c0[1], c0[2], c0[3] = 0.0, -1.0, 0.0
        return 0, 0.0, 0.0
    vc = d1 * d4 - d3 * d2
    if vc <= 0.0 and d1 >= 0.0 and d3 <= 0.0:  # edge ab: a + u ab
        c0[1], c0[2], c0[3] = -1.0, 0.0, 0.0
        G[0, 1], G[0, 2] = 1.0, -1.0
        return 1, d1 / (d1 - d3), 0.0
    cp = p - c
    d5 = ab @ cp
    d6 = ac @ cp
    if d6 >= 0.0 and d5 <= d6:
        c0[1], c0[2], c0[3] = 0.0, 0.0, -1.0
        return 0, 0.0, 0.0
    vb = d5 * d2 - d1 * d6
    if vb <= 0.0 and d2 >= 0.0 and d6 <= 0.0:  # edge ac
        c0[1], c0[2], c0[3] = -1.0, 0.0, 0.0
        G[0, 1], G[0, 3] = 1.0, -1.0
        return 1, d2 / (d2 - d6), 0.0
    va = d3 * d6 - d5 * d4
    if va <= 0.0 and (d4 - d3) >= 0.0 and (d5 - d6) >= 0.0:  # edge bc: b + w (c - b)
        c0[1], c0[2], c0[3] = 0.0, -1.0, 0.0
        G[0, 2], G[0, 3] = 1.0, -1.0
        return 1, (d4 - d3) / ((d4 - d3) + (d5 - d6)), 0.0
    den = 1.0 / (va + vb + vc)
    c0[1], c0[2], c0[3] = -1.0, 0.0, 0.0
    G[0, 1], G[0, 2] = 1.0, -1.0
    G[1, 1], G[1, 3] = 1.0, -1.0
    return 2, vb * den, vc * den


@njit(**JIT)
def distance_type(ptype, X, c0, G):
    """Distance type of a primitive (module docstring): fills ``c0`` (4,), ``G`` (2, 4); returns
    ``(na, u0, u1)``. Not for ``VERT_PLANE``."""
    if ptype == SEG_SEG or ptype == SEG_FIXSEG:
        return _seg_seg_type(X, c0, G)
    if ptype == SEG_FIXPT:
        return _seg_point_type(X, c0, G)
    return _point_triangle_type(X, c0, G)


@njit(**JIT)
def sq_distance(X, c0, G, na, u0, u1, want, grad, hess):
    """``D = |w|^2`` of a primitive of the given type at points ``X`` (4, 3); ``want`` 1: its
    gradient into ``grad`` (12,), 2: also its Hessian into ``hess`` (12, 12) (module docstring).
    Returns ``(D, c)``: the closest-point coefficients ``c`` (4,)."""
    c = c0.copy()
    if na >= 1:
        c += u0 * G[0]
    if na >= 2:
        c += u1 * G[1]
    w = np.zeros(3)
    for i in range(4):
        w += c[i] * X[i]
    D = w @ w
    if want >= 1:
        for i in range(4):
            for k in range(3):
                grad[3 * i + k] = 2.0 * c[i] * w[k]
    if want >= 2:
        hess[:, :] = 0.0
        for i in range(4):
            for j in range(4):
                for k in range(3):
                    hess[3 * i + k, 3 * j + k] = 2.0 * c[i] * c[j]
        if na > 0:
            W = np.zeros((na, 3))
            for a in range(na):
                for i in range(4):
                    W[a] += G[a, i] * X[i]
            J = np.zeros((na, 12))
            for a in range(na):
                for i in range(4):
                    for k in range(3):
                        J[a, 3 * i + k] = 2.0 * G[a, i] * w[k] + 2.0 * c[i] * W[a, k]
            # hess -= J^T A^{-1} J with A_ab = 2 W_a . W_b (1 x 1 or 2 x 2, inverted in closed form)
            a00 = 2.0 * (W[0] @ W[0])
            if na == 1:
                for p in range(12):
                    jp = J[0, p] / a00
                    for r in range(12):
                        hess[p, r] -= jp * J[0, r]
            else:
                a01 = 2.0 * (W[0] @ W[1])
                a11 = 2.0 * (W[1] @ W[1])
                det = a00 * a11 - a01 * a01
                i00, i01, i11 = a11 / det, -a01 / det, a00 / det
                for p in range(12):
                    y0 = i00 * J[0, p] + i01 * J[1, p]
                    y1 = i01 * J[0, p] + i11 * J[1, p]
                    for r in range(12):
                        hess[p, r] -= y0 * J[0, r] + y1 * J[1, r]
    return D, c


@njit(**JIT)
def gap_derivatives(ptype, X, rsum, want, dg, d2g):
    """Gap ``g`` [m] of a primitive at points ``X`` (4, 3) with radius sum ``rsum`` [m] (for
    ``VERT_PLANE``: ``X[1]`` a point of the plane, ``X[2]`` its unit normal). ``want`` 1 / 2: its
    gradient ``dg`` (12,) and Hessian ``d2g`` (12, 12) with respect to all four points. Returns
    ``(g, c, n)``: the closest-point coefficients (4,) and the unit normal (3,)."""
    c0 = np.zeros(4)
    G = np.zeros((2, 4))
    if ptype == VERT_PLANE:
        n = X[2].copy()
        g = (X[0] - X[1]) @ n - rsum
        c = np.zeros(4)
        c[0] = 1.0
        if want >= 1:
            dg[:] = 0.0
            dg[0:3] = n
        if want >= 2:
            d2g[:, :] = 0.0
        return g, c, n
    na, u0, u1 = distance_type(ptype, X, c0, G)
    gD = np.zeros(12)
    hD = np.zeros((12, 12))
    D, c = sq_distance(X, c0, G, na, u0, u1, want, gD, hD)
    dist = math.sqrt(D)
    w = np.zeros(3)
    for i in range(4):
        w += c[i] * X[i]
    n = w / dist if dist > 0.0 else np.zeros(3)
    if want >= 1:
        dg[:] = gD / (2.0 * dist)
    if want >= 2:
        d2g[:, :] = hD / (2.0 * dist) - np.outer(gD, gD) / (4.0 * D * dist)
    return dist - rsum, c, n


@njit(**JIT)
def _project_psd(H):
    """``H`` (symmetric) with its negative eigenvalues set to zero: ``V max(lam, 0) V^T``."""
    lam, V = np.linalg.eigh(H)
    m = H.shape[0]
    out = np.zeros((m, m))
    for k in range(m):
        if lam[k] > 0.0:
            for i in range(m):
                vi = lam[k] * V[i, k]
                for j in range(m):
                    out[i, j] += vi * V[j, k]
    return out


@njit(**JIT)
def _project_psd_span(H, B, r):
    """:func:`_project_psd` of an ``H`` (m, m) whose range lies in the span of the first ``r`` rows of
    ``B`` (r, m): with ``Q`` an orthonormal basis of that span (modified Gram-Schmidt, twice),
    ``H = Q^T (Q H Q^T) Q`` and the projection is ``Q^T proj(Q H Q^T) Q``: an ``r x r`` eigenproblem
    instead of ``m x m``. Vectors already in the span of the previous ones (relative norm left below
    1e-8) are dropped."""
    m = H.shape[0]
    Q = np.empty((r, m))
    nq = 0
    for a in range(r):
        v = B[a].copy()
        n0 = math.sqrt(v @ v)
        if n0 == 0.0:
            continue
        for _ in range(2):
            for b in range(nq):
                v -= (Q[b] @ v) * Q[b]
        nv = math.sqrt(v @ v)
        if nv <= 1e-8 * n0:
            continue
        Q[nq] = v / nv
        nq += 1
    Q = Q[:nq]
    QH = np.empty((nq, m))  # (H Q^T)^T
    for b in range(nq):
        for i in range(m):
            QH[b, i] = H[i] @ Q[b]
    M = np.empty((nq, nq))
    for a in range(nq):
        for b in range(nq):
            M[a, b] = 0.5 * (Q[a] @ QH[b] + Q[b] @ QH[a])
    P = _project_psd(M)
    PQ = np.zeros((nq, m))
    for a in range(nq):
        for b in range(nq):
            PQ[a] += P[a, b] * Q[b]
    out = np.zeros((m, m))
    for a in range(nq):
        for i in range(m):
            qa = Q[a, i]
            for j in range(m):
                out[i, j] += qa * PQ[a, j]
    return out


@njit(**JIT)
def _points(k, ptype, pv, pfix, x, X):
    nm = N_MOVING[ptype[k]]
    for i in range(4):
        if i < nm:
            X[i] = x[pv[k, i]]
        else:
            X[i] = pfix[k, i]


@njit(**JIT)
def barrier_eval(ptype, pv, pfix, prsum, x, dhat, kappa, want, loc_grad, loc_hess, gaps):
    """Barrier energy [J] of a contact table at positions ``x`` (N, 3) [m]: ``sum kappa b(g)``.
    ``want`` 1 / 2: each contact's gradient (K, 12) and PSD-projected Hessian (K, 12, 12) on its
    moving points (rows ``3 i + k`` of moving point ``i``; the rest zero). ``gaps`` (K,) receives
    each gap. Returns ``inf`` when some gap is <= 0."""
    K = ptype.shape[0]
    E = 0.0
    X = np.empty((4, 3))
    dg = np.zeros(12)
    d2g = np.zeros((12, 12))
    c0 = np.zeros(4)
    G = np.zeros((2, 4))
    span = np.zeros((5, 12))
    for k in range(K):
        _points(k, ptype, pv, pfix, x, X)
        g, c, n = gap_derivatives(ptype[k], X, prsum[k], want, dg, d2g)
        gaps[k] = g
        b, b1, b2 = barrier(g, dhat)
        if g <= 0.0:
            return math.inf
        E += kappa * b
        if want >= 1:
            m = 3 * N_MOVING[ptype[k]]
            loc_grad[k, :] = 0.0
            if b1 != 0.0:
                loc_grad[k, :m] = kappa * b1 * dg[:m]
            if want >= 2:
                loc_hess[k, :, :] = 0.0
                if ptype[k] == VERT_PLANE:  # kappa b'' n n^T: positive semi-definite as it stands (b'' > 0)
                    for i in range(3):
                        for j in range(3):
                            loc_hess[k, i, j] = kappa * (b2 * dg[i] * dg[j])
                elif b1 != 0.0 or b2 != 0.0:
                    H = np.empty((m, m))
                    for i in range(m):
                        for j in range(m):
                            H[i, j] = kappa * (b2 * dg[i] * dg[j] + b1 * 0.5 * (d2g[i, j] + d2g[j, i]))
                    if ptype[k] == SEG_SEG:
                        # H's range: c (x) e_j (j < 3) and G_a (x) n (a < na) (module docstring), rank <= 5 of 12
                        na = distance_type(SEG_SEG, X, c0, G)[0]
                        for a in range(3):
                            span[a, :] = 0.0
                            for i in range(4):
                                span[a, 3 * i + a] = c[i]
                        for a in range(na):
                            for i in range(4):
                                for j in range(3):
                                    span[3 + a, 3 * i + j] = G[a, i] * n[j]
                        loc_hess[k, :, :] = _project_psd_span(H, span, 3 + na)
                    else:
                        loc_hess[k, :m, :m] = _project_psd(H)
    return E


# ---- friction ---------------------------------------------------------------------------------
@njit(**JIT)
def friction_setup(ptype, pv, pfix, prsum, pmu, x, dhat, kappa, fc, fbasis, fweight):
    """Lagged friction of a contact table at the step's start positions ``x``: per contact its
    closest-point coefficients ``fc`` (K, 4) (moving points; 0 on fixed ones), tangent basis
    ``fbasis`` (K, 3, 2) and weight ``fweight`` (K,) = ``mu lambda`` [N] with ``lambda = kappa
    |b'(g)|`` (module docstring). Returns the number of contacts with a normal force."""
    K = ptype.shape[0]
    X = np.empty((4, 3))
    dg = np.zeros(12)
    d2g = np.zeros((12, 12))
    active = 0
    for k in range(K):
        _points(k, ptype, pv, pfix, x, X)
        g, c, n = gap_derivatives(ptype[k], X, prsum[k], 0, dg, d2g)
        b, b1, b2 = barrier(g, dhat)
        nm = N_MOVING[ptype[k]]
        for i in range(4):
            fc[k, i] = c[i] if i < nm else 0.0
        fweight[k] = pmu[k] * kappa * abs(b1) if g > 0.0 else 0.0
        if b1 != 0.0:
            active += 1
        # a tangent basis: the axis least aligned with n, made orthogonal
        ax = 0
        if abs(n[1]) < abs(n[ax]):
            ax = 1
        if abs(n[2]) < abs(n[ax]):
            ax = 2
        e = np.zeros(3)
        e[ax] = 1.0
        t1 = e - (e @ n) * n
        nt = math.sqrt(t1 @ t1)
        if nt == 0.0:
            t1[:] = 0.0
            t1[0] = 1.0
        else:
            t1 /= nt
        t2 = np.cross(n, t1)
        for j in range(3):
            fbasis[k, j, 0] = t1[j]
            fbasis[k, j, 1] = t2[j]
    return active


@njit(**JIT)
def mollifier(y, eps):
    """IPC's ``(f0, f1, f1')`` at slip ``y`` [m] with ``eps = eps_v h`` [m]."""
    if y >= eps:
        return y, 1.0, 0.0
    return -y * y * y / (3.0 * eps * eps) + y * y / eps + eps / 3.0, -y * y / (eps * eps) + 2.0 * y / eps, \
        -2.0 * y / (eps * eps) + 2.0 / eps


@njit(**JIT)
def friction_eval(ptype, pv, fc, fbasis, fweight, x, x0, eps, want, loc_grad, loc_hess):
    """Friction potential [J] ``sum mu lambda f0(|u|)`` at ``x`` with the step's start ``x0``
    (module docstring); ``want`` 1 / 2: gradient (K, 12) and Hessian (K, 12, 12) per contact on its
    moving points."""
    K = ptype.shape[0]
    E = 0.0
    for k in range(K):
        if want >= 1:
            loc_grad[k, :] = 0.0
        if want >= 2:
            loc_hess[k, :, :] = 0.0
        wgt = fweight[k]
        if wgt == 0.0:
            continue
        nm = N_MOVING[ptype[k]]
        d = np.zeros(3)
        for i in range(nm):
            d += fc[k, i] * (x[pv[k, i]] - x0[pv[k, i]])
        T = fbasis[k]
        u0 = T[0, 0] * d[0] + T[1, 0] * d[1] + T[2, 0] * d[2]
        u1 = T[0, 1] * d[0] + T[1, 1] * d[1] + T[2, 1] * d[2]
        y = math.sqrt(u0 * u0 + u1 * u1)
        f0, f1, f1p = mollifier(y, eps)
        E += wgt * f0
        if want >= 1:
            ratio = f1 / y if y > 0.0 else 2.0 / eps
            for i in range(nm):
                for j in range(3):
                    loc_grad[k, 3 * i + j] = wgt * ratio * fc[k, i] * (T[j, 0] * u0 + T[j, 1] * u1)
            if want >= 2:
                # B = mu lambda T M T^T, M = ratio I + (f1' y - f1) / y^3 u u^T
                cu = (f1p * y - f1) / (y * y * y) if y > 0.0 else 0.0
                m00 = ratio + cu * u0 * u0
                m01 = cu * u0 * u1
                m11 = ratio + cu * u1 * u1
                B = np.empty((3, 3))
                for a in range(3):
                    ta0 = T[a, 0] * m00 + T[a, 1] * m01
                    ta1 = T[a, 0] * m01 + T[a, 1] * m11
                    for b in range(3):
                        B[a, b] = wgt * (ta0 * T[b, 0] + ta1 * T[b, 1])
                for i in range(nm):
                    for l in range(nm):
                        cil = fc[k, i] * fc[k, l]
                        for a in range(3):
                            for b in range(3):
                                loc_hess[k, 3 * i + a, 3 * l + b] = cil * B[a, b]
    return E


__all__ = ["N_MOVING", "N_POINTS", "SEG_FIXPT", "SEG_FIXSEG", "SEG_SEG", "VERT_FIXTRI", "VERT_PLANE", "barrier",
           "barrier_eval", "distance_type", "friction_eval", "friction_setup", "gap_derivatives", "mollifier",
           "sq_distance"]
