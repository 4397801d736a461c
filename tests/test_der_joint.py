"""The DER joint stencil (rodlab.geometry.der_joint) against central finite differences.

One joint: unknowns ``q = (x_a, theta_e, x_b, theta_f, x_c)`` (11), reference directors carried from
the base configuration by time-parallel transport and the reference twist unwrapped against the
base's (Bergou et al., "Discrete Viscous Threads", 2010), as every DER method moves them. Random
non-degenerate joints: twisted (material angles and rest twist), naturally curved (rest curvature),
anisotropic (four different bending stiffnesses), stretched edges.
"""
from __future__ import annotations

import numpy as np
import pytest

from rodlab.geometry.curves import reference_twist3, transport3
from rodlab.geometry.der_joint import (ROW_CURVATURE, ROW_RESIDUAL, ROW_WEIGHT, ROWS_LEN, edge_stretch_energy,
                                       edge_stretch_hessian, edge_stretch_tension, joint_angle_gradient_hessian,
                                       joint_curvature_binormal, joint_energy, joint_gn_hessian_add,
                                       joint_gn_hessian_add4d, joint_holonomy, joint_kb_gradient, joint_kb_pullback,
                                       joint_material_curvature, joint_pullback_scales, joint_rows,
                                       joint_rows_gradient, joint_stresses)


def _unit(v):
    return v / np.linalg.norm(v)


def random_joint(seed, at_rest=False):
    """A random joint: base configuration, its reference frames and twist, and material parameters."""
    rng = np.random.default_rng(seed)
    xa = rng.normal(size=3)
    e = rng.uniform(0.5, 1.5) * _unit(rng.normal(size=3))
    f = rng.uniform(0.5, 1.5) * _unit(e + rng.normal(scale=0.8, size=3))  # turning angle well below pi
    q0 = np.concatenate([xa, [rng.uniform(-3, 3)], xa + e, [rng.uniform(-3, 3)], xa + e + f])
    te, tf = _unit(e), _unit(f)
    a1e = _unit(np.cross(te, rng.normal(size=3)))
    a1f = _unit(np.cross(tf, rng.normal(size=3)))
    p = dict(te0=te, tf0=tf, a1e0=a1e, a1f0=a1f, mref0=rng.uniform(-1, 1) + 2 * np.pi * rng.integers(-1, 2),
             B=rng.uniform(0.5, 3.0, 4), beta=rng.uniform(0.5, 2.0), l=rng.uniform(1.0, 2.5),
             ks=rng.uniform(5.0, 20.0, 2), lbar=np.array([np.linalg.norm(e), np.linalg.norm(f)]) * rng.uniform(0.7, 0.95))
    p["wbar"] = rng.normal(scale=0.5, size=4)
    p["mbar"] = rng.uniform(-1, 1)
    if at_rest:  # rest values = current values: zero residuals, where Gauss-Newton is the exact Hessian
        st = joint_state(q0, p)
        p["wbar"] = np.array(st["w"])
        p["mbar"] = st["twist"]
        p["lbar"] = st["lengths"].copy()
    return q0, p


def joint_state(q, p):
    """Tangents, lengths, material frames, curvature binormal, 4D curvature and twist at ``q``."""
    xa, xb, xc = q[0:3], q[4:7], q[8:11]
    edges = np.array([xb - xa, xc - xb])
    lengths = np.linalg.norm(edges, axis=1)
    tan = edges / lengths[:, None]
    a1 = np.empty((2, 3))
    for j, (t0, u0) in enumerate(((p["te0"], p["a1e0"]), (p["tf0"], p["a1f0"]))):
        u = np.array(transport3(*t0, *tan[j], *u0))
        u -= np.dot(u, tan[j]) * tan[j]
        a1[j] = _unit(u)
    mref = reference_twist3(*tan[0], *tan[1], *a1[0], *a1[1], p["mref0"])
    a2 = np.cross(tan, a1)
    th = np.array([q[3], q[7]])
    m1 = np.cos(th)[:, None] * a1 + np.sin(th)[:, None] * a2
    m2 = -np.sin(th)[:, None] * a1 + np.cos(th)[:, None] * a2
    kb0, kb1, kb2, _ = joint_curvature_binormal(*tan[0], *tan[1])
    w = joint_material_curvature(kb0, kb1, kb2, m1, m2, 0, 1)
    return dict(tan=tan, lengths=lengths, m1=m1, m2=m2, kb=np.array([kb0, kb1, kb2]), w=w,
                twist=q[7] - q[3] + mref)


def bend_twist_energy(q, p):
    s = joint_state(q, p)
    return joint_energy(*s["w"], *p["wbar"], *p["B"], s["twist"] - p["mbar"], p["beta"], p["l"])


def stretch_energy(q, p):
    s = joint_state(q, p)
    return sum(edge_stretch_energy(p["ks"][j], s["lengths"][j], p["lbar"][j]) for j in range(2))


def energy(q, p):
    return bend_twist_energy(q, p) + stretch_energy(q, p)


def fd_gradient(fun, q, h=1e-6):
    g = np.empty(q.size)
    for i in range(q.size):
        qp, qm = q.copy(), q.copy()
        qp[i] += h
        qm[i] -= h
        g[i] = (fun(qp) - fun(qm)) / (2 * h)
    return g


def fd_hessian(fun, q, h=1e-4):
    n = q.size
    H = np.empty((n, n))
    for i in range(n):
        for j in range(i, n):
            v = 0.0
            for si, sj, c in ((1, 1, 1), (1, -1, -1), (-1, 1, -1), (-1, -1, 1)):
                qq = q.copy()
                qq[i] += si * h
                qq[j] += sj * h
                v += c * fun(qq)
            H[i, j] = H[j, i] = v / (4 * h * h)
    return H


def scatter_edges(de, df):
    """Gradient over (x_a, theta_e, x_b, theta_f, x_c) of a function of the two edges."""
    g = np.zeros(11)
    g[0:3] = -de
    g[4:7] = de - df
    g[8:11] = df
    return g


def explicit_gradient(q, p):
    """dE/dq assembled as the explicit stepper assembles it: stresses, dE/dkb pulled back to the edges,
    the holonomy term, the angle gradient and the edges' tensions."""
    s = joint_state(q, p)
    tan, lengths, kb = s["tan"], s["lengths"], s["kb"]
    g0, g1, g2, g3, tau = joint_stresses(*s["w"], *p["wbar"], *p["B"], s["twist"] - p["mbar"], p["beta"], 1.0 / p["l"])
    k = np.array(joint_kb_gradient(g0, g1, g2, g3, s["m1"], s["m2"], 0, 1))
    ce, cf = joint_pullback_scales(tan, lengths, 0, 1)
    d = np.array(joint_kb_pullback(tan, 0, 1, ce, cf, float(kb @ k), *k))
    he, hf = joint_holonomy(tau, lengths[0], lengths[1])
    de = d[:3] + he * kb + edge_stretch_tension(p["ks"][0], lengths[0], p["lbar"][0]) * tan[0]
    df = d[3:] + hf * kb + edge_stretch_tension(p["ks"][1], lengths[1], p["lbar"][1]) * tan[1]
    g = scatter_edges(de, df)
    ge, _, gf, _ = joint_angle_gradient_hessian(*s["w"], *p["wbar"], *p["B"], 1.0 / p["l"])
    g[3] = ge - tau
    g[7] = gf + tau
    return g


def rows_of(q, p):
    """Compact rows of joint_rows with the stencil's weights and residuals filled in."""
    s = joint_state(q, p)
    R = np.zeros(ROWS_LEN)
    joint_rows(s["tan"], s["lengths"], s["m1"], s["m2"], 0, 1, R)
    R[ROW_WEIGHT:ROW_WEIGHT + 4] = p["B"] / p["l"]
    R[ROW_WEIGHT + 4] = 2.0 * p["beta"] / p["l"]
    R[ROW_RESIDUAL:ROW_RESIDUAL + 4] = R[ROW_CURVATURE:ROW_CURVATURE + 4] - p["wbar"]
    R[ROW_RESIDUAL + 4] = s["twist"] - p["mbar"]
    return R


def expand_row(R, r):
    u, t0, v, t1 = R[8 * r:8 * r + 3], R[8 * r + 3], R[8 * r + 4:8 * r + 7], R[8 * r + 7]
    return np.concatenate([-u, [t0], u - v, [t1], v])


def full_from_band(band):
    n = band.shape[0]
    H = np.zeros((n, n))
    for i in range(n):
        for d in range(band.shape[1]):
            if i - d >= 0:
                H[i, i - d] = H[i - d, i] = band[i, d]
    return H


SEEDS = range(4)


@pytest.mark.parametrize("seed", SEEDS)
def test_curvature_binormal_and_material_curvature(seed):
    q, p = random_joint(seed)
    s = joint_state(q, p)
    te, tf = s["tan"]
    kb = s["kb"]
    phi = np.arccos(np.clip(te @ tf, -1, 1))
    assert np.linalg.norm(kb) == pytest.approx(2 * np.tan(phi / 2), rel=1e-12)
    assert abs(kb @ te) < 1e-12 and abs(kb @ tf) < 1e-12
    w = np.array(s["w"])
    np.testing.assert_allclose(w, [kb @ s["m2"][0], -kb @ s["m1"][0], kb @ s["m2"][1], -kb @ s["m1"][1]], rtol=1e-14)


@pytest.mark.parametrize("seed", SEEDS)
def test_energy_gradient_matches_finite_differences(seed):
    q, p = random_joint(seed)
    fd = fd_gradient(lambda qq: energy(qq, p), q)
    g_explicit = explicit_gradient(q, p)
    R = rows_of(q, p)
    g_rows = np.zeros(11)
    joint_rows_gradient(g_rows, 0, R, 5)
    s = joint_state(q, p)
    g_rows += scatter_edges(*(edge_stretch_tension(p["ks"][j], s["lengths"][j], p["lbar"][j]) * s["tan"][j]
                              for j in range(2)))
    scale = np.abs(fd).max()
    np.testing.assert_allclose(g_explicit, fd, atol=1e-7 * scale)
    np.testing.assert_allclose(g_rows, fd, atol=1e-7 * scale)
    np.testing.assert_allclose(g_rows, g_explicit, atol=1e-12 * scale)


@pytest.mark.parametrize("seed", SEEDS)
def test_rows_are_the_jacobian_of_curvature_and_twist(seed):
    q, p = random_joint(seed)
    R = rows_of(q, p)
    for r in range(4):
        fd = fd_gradient(lambda qq: joint_state(qq, p)["w"][r], q)
        np.testing.assert_allclose(expand_row(R, r), fd, atol=1e-8 * max(1.0, np.abs(fd).max()))
    fd = fd_gradient(lambda qq: joint_state(qq, p)["twist"], q)
    np.testing.assert_allclose(expand_row(R, 4), fd, atol=1e-8)


@pytest.mark.parametrize("seed", SEEDS)
def test_angle_hessian_matches_finite_differences(seed):
    q, p = random_joint(seed)
    s = joint_state(q, p)
    _, he, _, hf = joint_angle_gradient_hessian(*s["w"], *p["wbar"], *p["B"], 1.0 / p["l"])
    tw = 2.0 * p["beta"] / p["l"]
    H = np.array([[he + tw, -tw], [-tw, hf + tw]])

    def angle_grad(th):
        qq = q.copy()
        qq[3], qq[7] = th
        return explicit_gradient(qq, p)[[3, 7]]

    th0 = q[[3, 7]]
    fd = np.empty((2, 2))
    for c in range(2):
        dp, dm = th0.copy(), th0.copy()
        dp[c] += 1e-6
        dm[c] -= 1e-6
        fd[:, c] = (angle_grad(dp) - angle_grad(dm)) / 2e-6
    np.testing.assert_allclose(H, fd, atol=1e-6 * np.abs(fd).max())


@pytest.mark.parametrize("seed", SEEDS)
def test_gauss_newton_block(seed):
    """The block is sum_r C_r J_r^T J_r of the rows (away from rest), and the exact Hessian at rest."""
    q, p = random_joint(seed)
    R = rows_of(q, p)
    band = np.zeros((11, 11))
    joint_gn_hessian_add(band, 0, R.copy(), 5)
    band4 = np.zeros((11, 11))
    joint_gn_hessian_add4d(band4, 0, R.copy())
    assert np.array_equal(band, band4)
    J = np.array([expand_row(R, r) for r in range(5)])
    np.testing.assert_allclose(full_from_band(band), J.T @ np.diag(R[ROW_WEIGHT:ROW_WEIGHT + 5]) @ J,
                               atol=1e-13 * np.abs(J).max() ** 2 * 10)
    q, p = random_joint(seed, at_rest=True)
    R = rows_of(q, p)
    assert np.abs(R[ROW_RESIDUAL:ROW_RESIDUAL + 5]).max() == 0.0
    band = np.zeros((11, 11))
    joint_gn_hessian_add(band, 0, R, 5)
    fd = fd_hessian(lambda qq: bend_twist_energy(qq, p), q)
    np.testing.assert_allclose(full_from_band(band), fd, atol=1e-5 * np.abs(fd).max())


@pytest.mark.parametrize("seed", SEEDS)
def test_stretch_tension_and_hessian(seed):
    rng = np.random.default_rng(100 + seed)
    ks, lbar = rng.uniform(1, 10), rng.uniform(0.5, 1.5)
    e = rng.normal(size=3)
    e *= lbar * rng.uniform(1.05, 1.5) / np.linalg.norm(e)  # stretched: the projection leaves H exact

    def E(v):
        return edge_stretch_energy(ks, np.linalg.norm(v), lbar)

    ln = np.linalg.norm(e)
    t = e / ln
    g = edge_stretch_tension(ks, ln, lbar) * t
    np.testing.assert_allclose(g, [(E(e + h) - E(e - h)) / 2e-6 for h in np.eye(3) * 1e-6], rtol=1e-7)
    a, b = edge_stretch_hessian(ks, ln, lbar)
    H = a * np.outer(t, t) + b * np.eye(3)
    fd = np.array([(edge_stretch_tension(ks, np.linalg.norm(e + h), lbar) * (e + h) / np.linalg.norm(e + h)
                    - edge_stretch_tension(ks, np.linalg.norm(e - h), lbar) * (e - h) / np.linalg.norm(e - h)) / 2e-6
                   for h in np.eye(3) * 1e-6])
    np.testing.assert_allclose(H, fd, atol=1e-7 * np.abs(fd).max())
    # compressed: the clamped (positive semi-definite) block ks/lbar t t^T
    a, b = edge_stretch_hessian(ks, 0.8 * lbar, lbar)
    assert b == 0.0 and a == pytest.approx(ks / lbar)


def test_anti_parallel_edges_raise():
    with pytest.raises(ValueError, match="anti-parallel"):
        joint_curvature_binormal(1.0, 0.0, 0.0, -1.0, 0.0, 0.0)
