"""The Discrete Elastic Rods stencil, written once: one joint (the two edges around a vertex) and one edge.

Every DER user evaluates its energy, gradient and Hessian through these functions: the explicit
stepper and the rigid-body coupling (``rodlab.der.kernels``), the implicit stepper
(``rodlab.der_implicit.energies`` and its 2D bending variants) and the sag-free derivatives
(``rodlab.inverse.kernels``, through the implicit stepper's curvature Jacobians). They are inlined
numba functions on scalars, or writing into the caller's arrays: nothing allocates, so they belong
in the innermost loops.

Joint ``k`` joins edge ``e`` (in) to edge ``f`` (out) at vertex ``b``; its local unknowns are
``(x_a, theta_e, x_b, theta_f, x_c)`` (11 values), with ``e = x_b - x_a`` and ``f = x_c - x_b``.
Positions enter only through the two edges, so every derivative is given as the pair
``(d/de, d/df)`` and the caller scatters it: ``d/dx_a = -d/de``, ``d/dx_b = d/de - d/df``,
``d/dx_c = d/df``.

Quantities (Bergou, Wardetzky, Robinson, Audoly and Grinspun, "Discrete Elastic Rods", 2008):

* curvature binormal ``kb = 2 t_e x t_f / chi``, ``chi = 1 + t_e . t_f`` (Eq. 1), ``|kb| = 2 tan(phi/2)``;
* material curvature seen from each edge (the "4D curvature", Eq. 2):
  ``w = (kb . m2_e, -kb . m1_e, kb . m2_f, -kb . m1_f)``;
* twist ``m = theta_f - theta_e + mref`` with the reference twist ``mref`` of time-parallel reference
  frames (Bergou, Audoly, Vouga, Wardetzky and Grinspun, "Discrete Viscous Threads", 2010, Sec. 4.1);
* energy of the joint, with ``l = |ebar_e| + |ebar_f|`` (twice the Voronoi length) and per-row
  bending stiffnesses ``B = (B1_e, B2_e, B1_f, B2_f)`` (anisotropic: Eq. 4):
  ``E = 1/(2 l) sum_r B_r (w_r - wbar_r)^2 + beta (m - mbar)^2 / l`` (Eqs. 4, 5);
* stretching of an edge: ``E = 1/2 ks (|e| / |ebar| - 1)^2 |ebar|``.

Derivatives:

* of ``r . kb`` for a constant 3-vector ``r`` (exact, extensible edges; the 2008 paper's ``grad kb``
  keeps only the part normal to the edges): ``d/de = (2 t_f x r - (r.kb)(t_e + t_f)) / (|e| chi)``,
  ``d/df = (-2 t_e x r - (r.kb)(t_e + t_f)) / (|f| chi)`` (:func:`joint_kb_pullback`);
* the material frames ride on time-parallel reference frames, which move with their tangent without
  turning about it; ``kb`` is normal to both tangents, so ``w`` depends on the positions through
  ``kb`` alone (``r = m2_e, -m1_e, m2_f, -m1_f``), and on the angles through
  ``dw/dtheta_e = (w_1, -w_0, 0, 0)``, ``dw/dtheta_f = (0, 0, w_3, -w_2)``, ``d2w/dtheta^2 = -w``;
* of the twist: ``dm/de = kb / (2|e|)``, ``dm/df = kb / (2|f|)`` (the holonomy gradient, Bergou et al.
  2008, Sec. 7.1, Eq. 9, written per joint), ``dm/dtheta_e = -1``, ``dm/dtheta_f = 1``.

Hessians: the angle block exactly (:func:`joint_angle_gradient_hessian`, the quasistatic twist of the
explicit stepper, Bergou et al. 2008 Sec. 5.1); the 11 x 11 block in the Gauss-Newton form
``sum_r C_r J_r^T J_r`` (:func:`joint_rows` gives the Jacobian rows ``J_r``,
:func:`joint_gn_hessian_add` adds the block into a lower band), as the implicit stepper uses it;
the edge's stretching Hessian exactly, projected to positive semi-definite
(:func:`edge_stretch_hessian`). tests/test_der_joint.py checks every one against finite differences.
"""
from __future__ import annotations

from numba import njit

from ._vec import JIT

PARALLEL_TRANSPORT_EPS = 1e-12

# ---- workspace of the Jacobian rows and the Gauss-Newton block (one flat buffer) ------------------
# compact rows R (5 x 8) at 0, weights C at ROW_WEIGHT, residuals at ROW_RESIDUAL, Gram matrix S (8 x 8,
# lower triangle only) at ROW_GRAM, curvature w (4) at ROW_CURVATURE, weighted rows C R (5 x 8) at
# ROW_WEIGHTED; ROWS_LEN in all. With constant offsets into one buffer the compiler can tell the pieces
# apart (arrays may alias).
ROW_WEIGHT = 40
ROW_RESIDUAL = 45
ROW_GRAM = 50
ROW_CURVATURE = 114
ROW_WEIGHTED = 118
ROWS_LEN = 158


# ---- geometry of a joint ---------------------------------------------------------------------------
@njit(inline="always", **JIT)
def joint_curvature_binormal(te0, te1, te2, tf0, tf1, tf2):
    """Curvature binormal ``kb = 2 t_e x t_f / chi`` of the joint of unit tangents ``t_e``, ``t_f``
    (Bergou et al. 2008, Eq. 1), and ``chi = 1 + t_e . t_f``; returns ``(kb0, kb1, kb2, chi)``.
    Anti-parallel edges (``chi`` <= 1e-12) have no curvature binormal: ValueError."""
    chi = 1.0 + te0 * tf0 + te1 * tf1 + te2 * tf2
    if not chi > PARALLEL_TRANSPORT_EPS:
        raise ValueError("consecutive edges are anti-parallel: curvature binormal undefined")
    s = 2.0 / chi
    return s * (te1 * tf2 - te2 * tf1), s * (te2 * tf0 - te0 * tf2), s * (te0 * tf1 - te1 * tf0), chi


@njit(inline="always", **JIT)
def joint_material_curvature(kb0, kb1, kb2, m1, m2, e, f):
    """4D material curvature ``w = (kb.m2_e, -kb.m1_e, kb.m2_f, -kb.m1_f)`` of a joint (Bergou et al.
    2008, Eq. 2) from the material directors ``m1``, ``m2`` (ne, 3) of its edges ``e``, ``f``."""
    w0 = kb0 * m2[e, 0] + kb1 * m2[e, 1] + kb2 * m2[e, 2]
    w1 = -(kb0 * m1[e, 0] + kb1 * m1[e, 1] + kb2 * m1[e, 2])
    w2 = kb0 * m2[f, 0] + kb1 * m2[f, 1] + kb2 * m2[f, 2]
    w3 = -(kb0 * m1[f, 0] + kb1 * m1[f, 1] + kb2 * m1[f, 2])
    return w0, w1, w2, w3


@njit(inline="always", **JIT)
def joint_kb_pullback(tangents, e, f, ce, cf, kbr, r0, r1, r2):
    """Derivatives of ``r . kb`` (``kbr``, for a constant 3-vector ``r``) with respect to the joint's
    two edges: ``d/de = ce (2 t_f x r - kbr (t_e + t_f))``, ``d/df = cf (-2 t_e x r - kbr (t_e + t_f))``
    with ``ce = 1 / (|e| chi)``, ``cf = 1 / (|f| chi)``; exact for extensible edges. Returns
    ``(d/de (3), d/df (3))``. The one form of the curvature binormal's derivative (module docstring)."""
    te0, te1, te2 = tangents[e, 0], tangents[e, 1], tangents[e, 2]
    tf0, tf1, tf2 = tangents[f, 0], tangents[f, 1], tangents[f, 2]
    s0 = te0 + tf0
    s1 = te1 + tf1
    s2 = te2 + tf2
    de0 = ce * (2.0 * (tf1 * r2 - tf2 * r1) - kbr * s0)
    de1 = ce * (2.0 * (tf2 * r0 - tf0 * r2) - kbr * s1)
    de2 = ce * (2.0 * (tf0 * r1 - tf1 * r0) - kbr * s2)
    df0 = cf * (-2.0 * (te1 * r2 - te2 * r1) - kbr * s0)
    df1 = cf * (-2.0 * (te2 * r0 - te0 * r2) - kbr * s1)
    df2 = cf * (-2.0 * (te0 * r1 - te1 * r0) - kbr * s2)
    return de0, de1, de2, df0, df1, df2


@njit(inline="always", **JIT)
def joint_pullback_scales(tangents, lengths, e, f):
    """``chi = 1 + t_e . t_f`` and the scales ``ce = 1 / (|e| chi)``, ``cf = 1 / (|f| chi)`` of
    :func:`joint_kb_pullback`; returns ``(ce, cf)``."""
    chi = 1.0 + tangents[e, 0] * tangents[f, 0] + tangents[e, 1] * tangents[f, 1] + tangents[e, 2] * tangents[f, 2]
    return 1.0 / (lengths[e] * chi), 1.0 / (lengths[f] * chi)


@njit(inline="always", **JIT)
def joint_holonomy(tau, le, lf):
    """``tau`` times the twist's gradient ``dm/de = kb / (2|e|)``, ``dm/df = kb / (2|f|)`` as the two
    factors of ``kb`` (the holonomy gradient, Bergou et al. 2008, Sec. 7.1, Eq. 9): ``(he, hf)`` with
    ``tau dm/de = he kb``, ``tau dm/df = hf kb``."""
    return 0.5 * tau / le, 0.5 * tau / lf


# ---- energy and generalized stresses of a joint ------------------------------------------------------
@njit(inline="always", **JIT)
def joint_energy(w0, w1, w2, w3, wb0, wb1, wb2, wb3, b0, b1, b2, b3, twist, beta, l):
    """Bending + twisting energy [J] of one joint (Bergou et al. 2008, Eqs. 4, 5):
    ``1/(2 l) sum_r B_r (w_r - wbar_r)^2 + beta twist^2 / l`` with ``twist = m - mbar`` [rad],
    ``B`` [N m^2] per row, ``beta`` [N m^2], ``l`` = twice the Voronoi length [m]."""
    d0 = w0 - wb0
    d1 = w1 - wb1
    d2 = w2 - wb2
    d3 = w3 - wb3
    bend = b0 * d0 * d0 + b1 * d1 * d1 + b2 * d2 * d2 + b3 * d3 * d3
    return 0.5 * bend / l + beta * twist * twist / l


@njit(inline="always", **JIT)
def joint_stresses(w0, w1, w2, w3, wb0, wb1, wb2, wb3, b0, b1, b2, b3, twist, beta, inv_l):
    """``dE/dw_r = B_r (w_r - wbar_r) / l`` (4) and ``dE/dm = 2 beta twist / l`` of :func:`joint_energy`,
    given ``inv_l = 1 / l``; returns ``(g0, g1, g2, g3, tau)``."""
    return (inv_l * b0 * (w0 - wb0), inv_l * b1 * (w1 - wb1), inv_l * b2 * (w2 - wb2), inv_l * b3 * (w3 - wb3),
            2.0 * beta * inv_l * twist)


@njit(inline="always", **JIT)
def joint_kb_gradient(g0, g1, g2, g3, m1, m2, e, f):
    """``dE/dkb = sum_r (dE/dw_r) r_r`` with ``r = (m2_e, -m1_e, m2_f, -m1_f)``: the bending stresses
    :func:`joint_stresses` as one vector along which :func:`joint_kb_pullback` pulls back to the edges."""
    k0 = g0 * m2[e, 0] - g1 * m1[e, 0] + g2 * m2[f, 0] - g3 * m1[f, 0]
    k1 = g0 * m2[e, 1] - g1 * m1[e, 1] + g2 * m2[f, 1] - g3 * m1[f, 1]
    k2 = g0 * m2[e, 2] - g1 * m1[e, 2] + g2 * m2[f, 2] - g3 * m1[f, 2]
    return k0, k1, k2


@njit(inline="always", **JIT)
def joint_angle_gradient_hessian(w0, w1, w2, w3, wb0, wb1, wb2, wb3, b0, b1, b2, b3, inv_l):
    """Bending part of ``dE/dtheta_e``, ``dE/dtheta_f`` and of the exact angle Hessian's diagonal
    (``dw/dtheta = -J w``, ``d2w/dtheta^2 = -w``); returns ``(ge, he, gf, hf)``. The twist adds
    ``-/+ tau`` to the gradient and ``2 beta / l`` to ``[[1, -1], [-1, 1]]`` (:func:`joint_stresses`)."""
    r0 = w0 - wb0
    r1 = w1 - wb1
    r2 = w2 - wb2
    r3 = w3 - wb3
    ge = inv_l * (b0 * r0 * w1 - b1 * r1 * w0)
    he = inv_l * (b0 * w1 * w1 + b1 * w0 * w0 - b0 * r0 * w0 - b1 * r1 * w1)
    gf = inv_l * (b2 * r2 * w3 - b3 * r3 * w2)
    hf = inv_l * (b2 * w3 * w3 + b3 * w2 * w2 - b2 * r2 * w2 - b3 * r3 * w3)
    return ge, he, gf, hf


# ---- Jacobian rows and the Gauss-Newton Hessian block of a joint --------------------------------------
@njit(inline="always", **JIT)
def put_kb_row(R, r, tangents, e, f, ce, cf, w, rx, ry, rz):
    """Row ``r`` of the compact row layout (:func:`joint_rows`): the pullback of ``r . kb``
    (:func:`joint_kb_pullback`) over the two edges into ``R[8r : 8r + 8]``, angle columns zero."""
    d0, d1, d2, d3, d4, d5 = joint_kb_pullback(tangents, e, f, ce, cf, w, rx, ry, rz)
    R[8 * r + 0] = d0
    R[8 * r + 1] = d1
    R[8 * r + 2] = d2
    R[8 * r + 3] = 0.0
    R[8 * r + 4] = d3
    R[8 * r + 5] = d4
    R[8 * r + 6] = d5
    R[8 * r + 7] = 0.0


@njit(inline="always", **JIT)
def joint_rows(tangents, lengths, m1, m2, e, f, R):
    """Jacobian rows of the joint's 4D curvature (rows 0-3) and twist (row 4) over its 11 unknowns,
    compact: ``R[8r : 8r + 8] = [u (3), t0, v (3), t1]`` stands for the row ``[-u, t0, u - v, t1, v]``
    (``u = d/de``, ``v = d/df``, ``t0``, ``t1`` the angle columns). ``w`` goes to
    ``R[ROW_CURVATURE : ROW_CURVATURE + 4]``; returns the joint's curvature binormal ``(kb0, kb1, kb2)``.
    Module docstring for the formulas; every row's weight and residual is the caller's."""
    kb0, kb1, kb2, chi = joint_curvature_binormal(tangents[e, 0], tangents[e, 1], tangents[e, 2],
                                                  tangents[f, 0], tangents[f, 1], tangents[f, 2])
    ce = 1.0 / (lengths[e] * chi)
    cf = 1.0 / (lengths[f] * chi)
    for r in range(4):
        j = e if r < 2 else f
        if r % 2 == 0:
            rx, ry, rz = m2[j, 0], m2[j, 1], m2[j, 2]
        else:
            rx, ry, rz = -m1[j, 0], -m1[j, 1], -m1[j, 2]
        wr = kb0 * rx + kb1 * ry + kb2 * rz
        R[ROW_CURVATURE + r] = wr
        put_kb_row(R, r, tangents, e, f, ce, cf, wr, rx, ry, rz)
    R[3] = R[ROW_CURVATURE + 1]
    R[11] = -R[ROW_CURVATURE + 0]
    R[23] = R[ROW_CURVATURE + 3]
    R[31] = -R[ROW_CURVATURE + 2]
    he, hf = joint_holonomy(1.0, lengths[e], lengths[f])
    R[32] = kb0 * he
    R[33] = kb1 * he
    R[34] = kb2 * he
    R[35] = -1.0
    R[36] = kb0 * hf
    R[37] = kb1 * hf
    R[38] = kb2 * hf
    R[39] = 1.0
    return kb0, kb1, kb2


@njit(inline="always", **JIT)
def joint_rows_gradient(grad, base, R, nrows):
    """Add ``sum_r C_r res_r J_r`` (the gradient of ``1/2 sum_r C_r res_r^2``) of the first ``nrows``
    compact rows ``R`` (weights at ``ROW_WEIGHT``, residuals at ``ROW_RESIDUAL``) into ``grad`` at the
    joint's unknowns ``base .. base + 10``."""
    gux = 0.0
    guy = 0.0
    guz = 0.0
    gvx = 0.0
    gvy = 0.0
    gvz = 0.0
    gt0 = 0.0
    gt1 = 0.0
    for r in range(nrows):
        c = R[ROW_WEIGHT + r] * R[ROW_RESIDUAL + r]
        gux += c * R[8 * r + 0]
        guy += c * R[8 * r + 1]
        guz += c * R[8 * r + 2]
        gt0 += c * R[8 * r + 3]
        gvx += c * R[8 * r + 4]
        gvy += c * R[8 * r + 5]
        gvz += c * R[8 * r + 6]
        gt1 += c * R[8 * r + 7]
    grad[base] -= gux
    grad[base + 1] -= guy
    grad[base + 2] -= guz
    grad[base + 3] += gt0
    grad[base + 4] += gux - gvx
    grad[base + 5] += guy - gvy
    grad[base + 6] += guz - gvz
    grad[base + 7] += gt1
    grad[base + 8] += gvx
    grad[base + 9] += gvy
    grad[base + 10] += gvz


@njit(inline="always", **JIT)
def joint_gn_hessian_add(band, base, R, nrows):
    """Add the Gauss-Newton block ``sum_r C_r J_r^T J_r`` of the first ``nrows`` compact rows ``R``
    (:func:`joint_rows`; weights at ``ROW_WEIGHT``) into the lower band ``band`` (n, >= 11) at the
    joint's unknowns ``base .. base + 10``: the 8 x 8 Gram matrix of the compact rows is mapped to the
    66 lower entries of the 11 x 11 block through ``J = [-u, t0, u - v, t1, v]`` (no 11 x 11
    intermediate)."""
    for r in range(nrows):
        cr = R[ROW_WEIGHT + r]
        for p in range(8):
            R[ROW_WEIGHTED + 8 * r + p] = cr * R[8 * r + p]
    for p in range(8):
        for c in range(p + 1):
            acc = 0.0
            for r in range(nrows):
                acc += R[ROW_WEIGHTED + 8 * r + p] * R[8 * r + c]
            R[ROW_GRAM + 8 * p + c] = acc
    _scatter_gram(band, base, R)


@njit(inline="always", **JIT)
def _gram3(R, p, c, r0, r1, r2):
    """``sum_r C_r R[r, p] R[r, c]`` over rows ``r0 < r1 < r2`` (in that order, from 0.0)."""
    acc = 0.0
    acc += R[ROW_WEIGHTED + 8 * r0 + p] * R[8 * r0 + c]
    acc += R[ROW_WEIGHTED + 8 * r1 + p] * R[8 * r1 + c]
    acc += R[ROW_WEIGHTED + 8 * r2 + p] * R[8 * r2 + c]
    return acc


@njit(inline="always", **JIT)
def joint_gn_hessian_add4d(band, base, R):
    """:func:`joint_gn_hessian_add` over the five rows of :func:`joint_rows` as they are: their angle
    columns hold exact zeros (``theta_e`` enters rows 0, 1 and 4 only, ``theta_f`` rows 2, 3 and 4),
    whose products the Gram matrix leaves out; the other terms are summed in the same order from the
    same 0.0, so every entry is bitwise that of :func:`joint_gn_hessian_add`."""
    for r in range(5):
        cr = R[ROW_WEIGHT + r]
        for p in range(8):
            R[ROW_WEIGHTED + 8 * r + p] = cr * R[8 * r + p]
    for p in range(8):
        if p == 3 or p == 7:
            continue
        for c in range(p + 1):
            if c == 3:
                continue
            acc = 0.0
            for r in range(5):
                acc += R[ROW_WEIGHTED + 8 * r + p] * R[8 * r + c]
            R[ROW_GRAM + 8 * p + c] = acc
    for c in range(3):  # p = 3 > c
        R[ROW_GRAM + 8 * 3 + c] = _gram3(R, 3, c, 0, 1, 4)
    for p in range(3, 7):  # c = 3 <= p
        R[ROW_GRAM + 8 * p + 3] = _gram3(R, p, 3, 0, 1, 4)
    for c in range(8):  # p = 7 >= c
        if c == 3:
            acc = 0.0
            acc += R[ROW_WEIGHTED + 8 * 4 + 7] * R[8 * 4 + 3]
        else:
            acc = _gram3(R, 7, c, 2, 3, 4)
        R[ROW_GRAM + 8 * 7 + c] = acc
    _scatter_gram(band, base, R)


@njit(inline="always", **JIT)
def _scatter_gram(band, base, R):
    """Add the 11 x 11 block ``J^T S J`` of the symmetric Gram matrix ``S`` (``R[ROW_GRAM:]``, 8 x 8, of
    which only the lower triangle ``S[p, c]``, ``c <= p``, is read: the producers store that half alone,
    one store per entry instead of two) into the lower band."""
    G = ROW_GRAM
    for a in range(3):
        for b in range(3):
            if a >= b:
                Suu = R[G + 8 * a + b]
                Svv = R[G + 8 * (4 + a) + 4 + b]
            else:
                Suu = R[G + 8 * b + a]
                Svv = R[G + 8 * (4 + b) + 4 + a]
            Suv = R[G + 8 * (4 + b) + a]  # S[a, 4 + b]
            Svu = R[G + 8 * (4 + a) + b]
            if a >= b:
                band[base + a, a - b] += Suu
                band[base + 4 + a, a - b] += Suu - Suv - Svu + Svv
                band[base + 8 + a, a - b] += Svv
            band[base + 4 + a, 4 + a - b] += Svu - Suu
            band[base + 8 + a, 8 + a - b] -= Svu
            band[base + 8 + a, 4 + a - b] += Svu - Svv
    for b in range(3):
        band[base + 3, 3 - b] -= R[G + 8 * 3 + b]
        band[base + 4 + b, 1 + b] += R[G + 8 * 3 + b] - R[G + 8 * (4 + b) + 3]
        band[base + 8 + b, 5 + b] += R[G + 8 * (4 + b) + 3]
        band[base + 7, 7 - b] -= R[G + 8 * 7 + b]
        band[base + 7, 3 - b] += R[G + 8 * 7 + b] - R[G + 8 * 7 + 4 + b]
        band[base + 8 + b, 1 + b] += R[G + 8 * 7 + 4 + b]
    band[base + 3, 0] += R[G + 8 * 3 + 3]
    band[base + 7, 4] += R[G + 8 * 7 + 3]
    band[base + 7, 0] += R[G + 8 * 7 + 7]


# ---- one edge: stretching --------------------------------------------------------------------------
@njit(inline="always", **JIT)
def edge_stretch_energy(ks, length, rest_length):
    """``1/2 ks (|e| / |ebar| - 1)^2 |ebar|`` [J], ``ks`` [N]."""
    s = length / rest_length - 1.0
    return 0.5 * ks * s * s * rest_length


@njit(inline="always", **JIT)
def edge_stretch_tension(ks, length, rest_length):
    """``dE/d|e| = ks (|e| / |ebar| - 1)`` [N] of :func:`edge_stretch_energy` (the edge's gradient is
    this times ``t`` at its end vertex and minus that at its start)."""
    return ks * (length / rest_length - 1.0)


@njit(inline="always", **JIT)
def edge_stretch_hessian(ks, length, rest_length):
    """The 3 x 3 block ``d2E/de2 = k ((1 - beta) t t^T + beta I)`` of :func:`edge_stretch_energy`, with
    ``k = ks / |ebar|`` and ``beta = 1 - |ebar| / |e|`` clamped at 0 (a compressed edge) so that it is
    positive semi-definite; returns ``(k (1 - beta), k beta)``."""
    kk = ks / rest_length
    beta = 1.0 - rest_length / length
    if beta < 0.0:
        beta = 0.0
    return kk * (1.0 - beta), kk * beta
