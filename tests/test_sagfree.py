"""Sag-free optimization: constraint Jacobian by finite differences, MPRGP against a reference QP
solution, the active-set Cholesky preconditioner, the scheme outcomes and the scene metrics."""
import numpy as np
import pytest
from scipy.optimize import lsq_linear

from rodlab.inverse.qp import (PC_ASC, PC_NAMES, SCHUR_CAP, apply_filtered_ldlt, ipm, mprgp, pgs, prepare_pc,
                               schur_apply)
from rodlab.inverse.sagfree import (SagFreeOptions, constraint, forward_drift, jacobian_dense, make_problem,
                                    model_from_params, optimize_strand)
from rodlab.linalg.banded_ldlt import band_to_dense, dense_to_band, ldlt_factor_band
from rodlab.scenes.registry import run_scene
from rodlab.scenes.sagfree_scenes import strand_shape


@pytest.fixture(scope="module")
def problems():
    out = {}
    for o in ("vertical", "horizontal"):
        x = strand_shape(o, 12, 0.1)
        out[o] = make_problem(x, radius=5e-4, E=5e7, G=5e7 / 3, rho=1000.0)
    return out


@pytest.mark.parametrize("orientation", ["vertical", "horizontal"])
def test_constraint_jacobian_matches_central_differences(problems, orientation):
    pb = problems[orientation]
    rng = np.random.default_rng(1)
    p = pb.p0 + 0.05 * rng.normal(size=pb.nparams)
    _, c, J = constraint(pb, p, True)
    Jd = jacobian_dense(pb, J)
    h = 1e-6
    Jfd = np.array([(constraint(pb, p + h * e)[1] - constraint(pb, p - h * e)[1]) / (2 * h) for e in np.eye(pb.nparams)]).T
    assert np.abs(Jd - Jfd).max() < 1e-7 * np.abs(Jfd).max()
    # the window layout captures every nonzero: no entry of the FD Jacobian outside it
    assert np.all(np.abs(Jfd[Jd == 0.0]) < 1e-7 * np.abs(Jfd).max())


def test_constraint_equals_net_force_of_the_forward_model(problems):
    """The optimization's force is exactly minus the gradient of the stepper's energy plus gravity."""
    from rodlab.der_implicit.energies import der_elastic, update_frames

    pb = problems["vertical"]
    rng = np.random.default_rng(2)
    p = pb.p0 + 0.05 * rng.normal(size=pb.nparams)
    f, _, _ = constraint(pb, p)
    m = model_from_params(pb, p)
    st = pb.state
    ne = pb.nv - 1
    tan, elen, a1, mref = np.empty((ne, 3)), np.empty(ne), np.empty((ne, 3)), np.empty(ne - 1)
    update_frames(st.q, st.tan, st.a1, st.mref, tan, elen, a1, mref)
    g = np.zeros(st.q.size)
    der_elastic(st.q, tan, elen, a1, mref, m.ks, m.lbar, m.kbend, m.wbar, m.ktwist, m.mbar, m.lvor, False, 1, g, np.zeros((1, 11)))
    np.testing.assert_allclose(f, -g + m.fext, atol=1e-12 * np.abs(g).max())


def _random_box_qp(seed, n=40, p=6):
    rng = np.random.default_rng(seed)
    M = np.zeros((n, n))
    for i in range(n):
        for j in range(max(0, i - p // 2), i + 1):
            M[i, j] = rng.normal()
    A = band_to_dense(dense_to_band(M @ M.T, p)) + 0.05 * np.eye(n)
    A += np.diag(np.abs(A).sum(1)) * 0.02
    b = 3 * rng.normal(size=n)
    lo = -0.4 * np.ones(n)
    hi = 0.4 * np.ones(n)
    hi[::4] = np.inf
    lo[1::5] = -np.inf
    return A, b, lo, hi


def _reference(A, b, lo, hi):
    R = np.linalg.cholesky(A).T
    return lsq_linear(R, np.linalg.solve(R.T, b), bounds=(lo, hi), tol=1e-15, method="bvls").x


@pytest.mark.parametrize("pc", list(PC_NAMES))
def test_mprgp_matches_reference_qp_solution(pc):
    A, b, lo, hi = _random_box_qp(3)
    ref = _reference(A, b, lo, hi)
    assert np.sum((ref <= lo + 1e-9) | (ref >= hi - 1e-9)) >= 3  # bounds are active
    band = dense_to_band(A, 6)
    L, D = np.empty_like(band), np.empty(len(b))
    prepare_pc(PC_NAMES[pc], band, L, D)
    x = np.zeros(len(b))
    it, res = mprgp(band, b, lo, hi, x, PC_NAMES[pc], L, D, 1e-12, 1e-14, 5000, np.zeros(1))
    np.testing.assert_allclose(x, ref, atol=1e-8)
    assert np.all(x >= lo) and np.all(x <= hi)


def test_pgs_and_ipm_match_reference():
    A, b, lo, hi = _random_box_qp(4)
    ref = _reference(A, b, lo, hi)
    band = dense_to_band(A, 6)
    x = np.zeros(len(b))
    pgs(band, b, lo, hi, x, 1e-11, 1e-14, 20000, np.zeros(1))
    np.testing.assert_allclose(x, ref, atol=1e-7)
    x = np.zeros(len(b))
    ipm(band, b, lo, hi, x, 1e-11, 1e-14, 200, np.zeros(1))
    np.testing.assert_allclose(x, ref, atol=1e-7)


def test_active_set_cholesky_is_symmetric_and_exact_without_active_bounds():
    A, b, lo, hi = _random_box_qp(5)
    n = len(b)
    band = dense_to_band(A, 6)
    L, D = band.copy(), np.empty(n)
    ldlt_factor_band(L, D, 1e-14)
    rng = np.random.default_rng(0)
    free = rng.random(n) > 0.3
    M = np.zeros((n, n))
    z = np.empty(n)
    for k in range(n):
        e = np.zeros(n)
        e[k] = 1.0
        apply_filtered_ldlt(L, D, free, e, z)
        M[:, k] = z
    np.testing.assert_allclose(M, M.T, atol=1e-12 * np.abs(M).max())
    assert np.all(M[~free] == 0) and np.all(M[:, ~free] == 0)
    # positive definite on the free set
    assert np.linalg.eigvalsh(M[np.ix_(free, free)]).min() > 0
    # with nothing active it is A^{-1}, and MPRGP takes one iteration
    allfree = np.ones(n, dtype=bool)
    for k in range(n):
        e = np.zeros(n)
        e[k] = 1.0
        apply_filtered_ldlt(L, D, allfree, e, z)
        M[:, k] = z
    np.testing.assert_allclose(M @ A, np.eye(n), atol=1e-9)
    x = np.zeros(n)
    inf = np.full(n, np.inf)
    it, res = mprgp(band, b, -inf, inf, x, PC_ASC, L, D, 1e-12, 1e-14, 100, np.zeros(1))
    assert it == 1
    np.testing.assert_allclose(A @ x, b, atol=1e-9)


@pytest.mark.parametrize("orientation", ["vertical", "horizontal"])
def test_alm_reaches_equilibrium_and_forward_simulation_stays(problems, orientation):
    pb = problems[orientation]
    res = optimize_strand(pb, SagFreeOptions(scheme="alm"))
    assert res.success, res.message
    assert res.residual <= 1e-8
    assert res.bounds_ok
    f, _, _ = constraint(pb, res.params)
    assert np.all(np.isfinite(f))
    drift, _ = forward_drift(pb, res.model, 0.5)
    assert drift <= 1e-6
    naive, _ = forward_drift(pb, pb.model, 0.5)
    assert naive > 1e-3


def test_rest_only_and_penalty_fail_on_the_horizontal_strand(problems):
    pb = problems["horizontal"]
    rest = optimize_strand(pb, SagFreeOptions(scheme="rest"))
    pen = optimize_strand(pb, SagFreeOptions(scheme="penalty"))
    assert not rest.success and rest.residual > 1e-3 and rest.stiffness_change_max == 0.0
    assert not pen.success and pen.residual > 1e-3
    assert rest.bounds_ok and pen.bounds_ok


def test_sagfree_strand_scene_metrics():
    m = run_scene("sagfree-strand", orientation="horizontal", n=16, scheme="alm", t_end=0.5).metrics
    for key in ("force_residual", "max_drift", "newton_iters", "mprgp_iters_mean", "opt_wall_s",
                "stiffness_change_max", "rest_change_max", "bounds_ok"):
        assert key in m
    assert m["force_residual"] <= 1e-8 and m["max_drift"] <= 1e-4 and m["bounds_ok"]


def test_flipped_frames_2d_curvature_loses_bending():
    m = run_scene("flipped-frames", n=12, t_end=0.2).metrics
    assert m["bend_force_ratio_2d_over_4d"] < 1e-10
    m2 = run_scene("flipped-frames", n=12, t_end=0.2, flipped=False).metrics
    assert m2["bend_force_ratio_2d_over_4d"] == pytest.approx(1.0, rel=1e-10)
    assert m2["tip_z_2d"] == pytest.approx(m2["tip_z_4d"], abs=1e-9)
    assert m["tip_z_4d"] == pytest.approx(m2["tip_z_4d"], abs=1e-6)  # 4D: flipping frames changes nothing


def test_options_are_validated():
    with pytest.raises(ValueError, match="scheme"):
        SagFreeOptions(scheme="foo")
    with pytest.raises(ValueError, match="delta"):
        SagFreeOptions(delta=-1)


def test_schur_corrected_asc_is_the_exact_free_set_inverse():
    A, b, lo, hi = _random_box_qp(6)
    n = len(b)
    band = dense_to_band(A, 6)
    L, D = band.copy(), np.empty(n)
    ldlt_factor_band(L, D, 1e-14)
    rng = np.random.default_rng(1)
    Y, slot = np.empty((SCHUR_CAP, n)), np.full(n, -1)
    act, st, C, w = np.full(SCHUR_CAP, -1), np.zeros(2, dtype=np.int64), np.empty((SCHUR_CAP, SCHUR_CAP)), np.empty(SCHUR_CAP)
    for trial in range(3):  # the active set changes between calls: cached columns are reused
        free = rng.random(n) > 0.25
        r = rng.normal(size=n) * free
        z = np.empty(n)
        schur_apply(L, D, free, lo, hi, r, z, Y, slot, act, st, C, w)
        F = np.flatnonzero(free)
        np.testing.assert_allclose(z[F], np.linalg.solve(A[np.ix_(F, F)], r[F]), rtol=1e-9, atol=1e-12)
        assert np.all(z[~free] == 0.0)


# ---- fast path of the filtered-factor preconditioners (row/column-aligned layouts, workspace) ----

def _fast_setup(A, p, pc=PC_ASC):
    from rodlab.inverse.qp import MprgpWorkspace, prepare_fast

    n = A.shape[0]
    band = dense_to_band(A, p)
    ws = MprgpWorkspace(n, p)
    clamped, anorm = prepare_fast(pc, band, ws.Ar, ws.Lb, ws.Lf, ws.D)
    return band, ws, clamped, anorm


@pytest.mark.parametrize("p", [6, 18])
def test_fast_layouts_match_the_dense_matrix_and_its_factor(p):
    from rodlab.linalg.banded_rows import rband_matvec

    A, b, lo, hi = _random_box_qp(7, n=50, p=p)
    n = len(b)
    band, ws, clamped, anorm = _fast_setup(A, p)
    assert clamped == 0
    assert anorm == pytest.approx(np.abs(A).sum(1).max(), rel=1e-14)
    rng = np.random.default_rng(2)
    x = rng.normal(size=n)
    xp, op = np.zeros(n + 2 * p), np.zeros(n + 2 * p)
    xp[p:p + n] = x
    rband_matvec(ws.Ar, xp, op)
    np.testing.assert_allclose(op[p:p + n], A @ x, rtol=0, atol=1e-12 * np.abs(A @ x).max())
    assert np.all(op[:p] == 0) and np.all(op[p + n:] == 0)
    # both copies of the factor hold the same L, and L D L^T = A
    Lrow, Lcol = np.eye(n), np.eye(n)
    for i in range(n):
        for j in range(p):
            if i - p + j >= 0:
                Lrow[i, i - p + j] = ws.Lf[0][i, j]
        for k in range(1, p + 1):
            if i + k < n:
                Lcol[i + k, i] = ws.Lf[1][i, k]
            else:
                assert ws.Lf[1][i, k] == 0.0
    np.testing.assert_array_equal(Lrow, Lcol)
    np.testing.assert_array_equal(ws.Lf[0][:, p], ws.Lf[1][:, 0])
    D = 1.0 / ws.Lf[0][:, p]
    np.testing.assert_allclose(Lrow @ np.diag(D) @ Lrow.T, A, atol=1e-11 * np.abs(A).max())


@pytest.mark.parametrize("p", [6, 18])
def test_fast_filtered_substitution_equals_the_band_version(p):
    from rodlab.inverse.qp.fast_preconditioners import _apply

    A, b, lo, hi = _random_box_qp(8, n=45, p=p)
    n = len(b)
    band, ws, _, _ = _fast_setup(A, p)
    L, D = band.copy(), np.empty(n)
    ldlt_factor_band(L, D, 1e-12)
    rng = np.random.default_rng(3)
    for trial in range(3):
        free = rng.random(n) > 0.3
        r = rng.normal(size=n)
        z_ref = np.empty(n)
        apply_filtered_ldlt(L, D, free, r, z_ref)
        yp, zp, v = np.zeros(n + 2 * p), np.zeros(n + 2 * p), np.zeros(n + 2 * p)
        v[p:p + n] = rng.normal(size=n)
        zv = _apply(ws.Lf, free, r, yp, zp, v)
        np.testing.assert_allclose(zp[p:p + n], z_ref, rtol=0, atol=1e-12 * np.abs(z_ref).max())
        assert zv == pytest.approx(z_ref @ v[p:p + n], rel=1e-12)
        assert np.all(zp[p:p + n][~free] == 0.0)


@pytest.mark.parametrize("p,pc", [(6, "asc"), (18, "asc"), (6, "ic"), (6, "mic")])
def test_fast_mprgp_takes_the_reference_steps_and_reuses_its_workspace(p, pc):
    """The fast path runs the same algorithm as mprgp_core (same iteration and step counts, same solution);
    a workspace left dirty by another solve gives bitwise the same result twice."""
    from rodlab.inverse.qp import mprgp_asc_solve, mprgp_core

    A, b, lo, hi = _random_box_qp(9, n=60, p=p)
    n = len(b)
    ref = _reference(A, b, lo, hi)
    band, ws, _, _ = _fast_setup(A, p, PC_NAMES[pc])
    L, D = np.empty_like(band), np.empty(n)
    prepare_pc(PC_NAMES[pc], band, L, D)
    counts0 = np.zeros(4)
    x0 = np.zeros(n)
    it0, _ = mprgp_core(band, b, lo, hi, x0, PC_NAMES[pc], L, D, 1e-12, 1e-14, 5000, np.zeros(1), counts0, 1.0)
    x1 = np.zeros(n)
    it1, _, _ = ws.solve(PC_NAMES[pc], band, b, lo, hi, x1, rtol=1e-12, maxit=5000)
    assert it1 == it0 and np.array_equal(ws.counts, counts0)
    np.testing.assert_allclose(x1, ref, atol=1e-8)
    # dirty workspace (another QP, then NaN garbage): same bits
    A2, b2, lo2, hi2 = _random_box_qp(10, n=60, p=p)
    ws.solve(PC_NAMES[pc], dense_to_band(A2, p), b2, lo2, hi2, np.zeros(n))
    ws.ws[:] = np.nan
    ws.Ar[:] = np.nan
    ws.Lf[:] = np.nan
    x2 = np.zeros(n)
    it2, _, _ = ws.solve(PC_NAMES[pc], band, b, lo, hi, x2, rtol=1e-12, maxit=5000)
    assert it2 == it1 and np.array_equal(x2, x1)
    # the paper's expansion only (pexp=False, as the optimizer runs it) reaches the same solution
    x3 = np.zeros(n)
    h = np.full(5001, np.nan)
    it3, res3, _ = mprgp_asc_solve(PC_NAMES[pc], band, b, lo, hi, x3, 1e-12, 1e-14, 5000, h, np.zeros(4), 1.0, ws.Ar, ws.Lb, ws.Lf,
                                   ws.D, ws.ws, ws.free, False)
    np.testing.assert_allclose(x3, ref, atol=1e-8)
    assert res3 <= 1e-12 * h[0] or res3 <= 1e-14


def test_alm_with_asc_and_asc_schur_agree(problems):
    pb = problems["horizontal"]
    a = optimize_strand(pb, SagFreeOptions(precond="asc"))
    s = optimize_strand(pb, SagFreeOptions(precond="asc-schur"))
    assert SagFreeOptions().precond == "asc-schur"
    assert a.success and s.success and a.iterations == s.iterations
    np.testing.assert_allclose(a.params, s.params, rtol=0, atol=1e-6 * np.abs(s.params).max())


# ---- fast path of the Schur-corrected ASC (asc-schur) ----

@pytest.mark.parametrize("p", [6, 18])
def test_fast_schur_application_is_the_exact_free_set_inverse(p):
    """:func:`_schur_fast` against the dense free-set solve while the active set grows (appended Cholesky
    rows), shrinks (compaction and refactorization) and changes, pinned entries left out; then with a cap
    of 2 it falls back to the filtered substitution."""
    from rodlab.inverse.qp import PC_ASCS, schur_scratch
    from rodlab.inverse.qp.fast_preconditioners import _apply, _schur_fast

    A, b, lo, hi = _random_box_qp(11, n=50, p=p)
    n = len(b)
    lo[7] = hi[7] = 0.1  # pinned and decoupled (as the optimizer eliminates them): never in the correction
    A[7, :] = A[:, 7] = 0.0
    A[7, 7] = 2.0
    band, ws, _, _ = _fast_setup(A, p, PC_ASCS)
    rng = np.random.default_rng(4)
    fm, Y, C, w, iw = schur_scratch(n, p)
    iw[:] = -1
    iw[2 * n + Y.shape[0]:] = 0
    e = np.zeros(n)
    yp, zp, v = np.zeros(n + 2 * p), np.zeros(n + 2 * p), np.zeros(n + 2 * p)
    free = np.ones(n, dtype=bool)
    for frac in (0.05, 0.1, 0.2, 0.08, 0.3):  # grows, grows, grows, shrinks, changes
        if frac == 0.08:
            free[np.flatnonzero(~free)[::2]] = True
        else:
            free &= rng.random(n) > frac
        r = rng.normal(size=n) * free
        v[p:p + n] = rng.normal(size=n)
        zv = _schur_fast(ws.Lf, free, lo, hi, r, yp, zp, v, fm, e, Y, C, w, iw)
        F = np.flatnonzero(free)
        z = zp[p:p + n]
        np.testing.assert_allclose(z[F], np.linalg.solve(A[np.ix_(F, F)], r[F]), rtol=1e-9, atol=1e-12 * np.abs(z).max())
        assert np.all(z[~free] == 0.0) and zv == pytest.approx(z @ v[p:p + n], rel=1e-12)
        assert iw[2 * n + Y.shape[0]] == np.sum(~free) - (not free[7])  # active list length (pinned left out)
    assert np.all(e == 0.0)
    fm2, Y2, C2, w2, iw2 = schur_scratch(n, p, cap=2)
    iw2[:] = -1
    iw2[2 * n + 2:] = 0
    z_ref = np.zeros(n + 2 * p)
    _apply(ws.Lf, free, r, yp, z_ref, v)
    _schur_fast(ws.Lf, free, lo, hi, r, yp, zp, v, fm2, e, Y2, C2, w2, iw2)
    np.testing.assert_array_equal(zp[p:p + n], z_ref[p:p + n])


@pytest.mark.parametrize("p", [6, 18])
def test_fast_asc_schur_matches_the_reference_and_mprgp_core(p):
    """Fast asc-schur: the reference QP solution; with our preconditioned expansion the same steps as
    ``mprgp_core`` with ``asc-schur``; with the paper's expansion (as the optimizer runs it) few iterations;
    a dirty workspace gives bitwise the same result twice; a cap of 3 (filtered fallback) still converges."""
    from rodlab.inverse.qp import PC_ASCS, MprgpWorkspace, mprgp_asc_solve, mprgp_core

    A, b, lo, hi = _random_box_qp(12, n=60, p=p)
    n = len(b)
    A[5, :] = A[:, 5] = 0.0
    A[5, 5] = 2.0
    b[5] = 0.0
    ref = _reference(A, b, lo, hi)  # x_5 = 0: the same as pinning it there
    lo[5] = hi[5] = 0.0
    band = dense_to_band(A, p)
    L, D = np.empty_like(band), np.empty(n)
    prepare_pc(PC_ASCS, band, L, D)
    counts0 = np.zeros(4)
    x0 = np.zeros(n)
    it0, _ = mprgp_core(band, b, lo, hi, x0, PC_ASCS, L, D, 1e-12, 1e-14, 5000, np.zeros(1), counts0, 1.0)
    ws = MprgpWorkspace(n, p)
    x1 = np.zeros(n)
    it1, res1, _ = ws.solve(PC_ASCS, band, b, lo, hi, x1, rtol=1e-12, maxit=5000)
    assert it1 == it0 and np.array_equal(ws.counts, counts0)
    np.testing.assert_allclose(x1, ref, atol=1e-8)
    np.testing.assert_allclose(x1, x0, atol=1e-10)
    assert np.all(x1 >= lo) and np.all(x1 <= hi)
    x2 = np.zeros(n)
    it2, res2, _ = ws.solve(PC_ASCS, band, b, lo, hi, x2, rtol=1e-12, maxit=5000, pexp=False)
    np.testing.assert_allclose(x2, ref, atol=1e-8)
    # dirty workspace (another QP, then NaN garbage everywhere): same bits
    A3, b3, lo3, hi3 = _random_box_qp(13, n=60, p=p)
    ws.solve(PC_ASCS, dense_to_band(A3, p), b3, lo3, hi3, np.zeros(n), pexp=False)
    for arr in (ws.ws, ws.Ar, ws.Lf, ws.Y, ws.C, ws.w):
        arr[:] = np.nan
    ws.iw[:] = 7
    ws.fm[:] = False
    x3 = np.zeros(n)
    it3, res3, _ = ws.solve(PC_ASCS, band, b, lo, hi, x3, rtol=1e-12, maxit=5000, pexp=False)
    assert it3 == it2 and res3 == res2 and np.array_equal(x3, x2)
    # the old signature (scratch allocated inside) and a cap of 3 active bounds (filtered beyond)
    x4 = np.zeros(n)
    it4, _, _ = mprgp_asc_solve(PC_ASCS, band, b, lo, hi, x4, 1e-12, 1e-14, 5000, np.zeros(1), np.zeros(4), 1.0, ws.Ar, ws.Lb,
                                ws.Lf, ws.D, ws.ws, ws.free, False)
    assert it4 == it2 and np.array_equal(x4, x2)
    small = MprgpWorkspace(n, p, cap=3)
    x5 = np.zeros(n)
    small.solve(PC_ASCS, band, b, lo, hi, x5, rtol=1e-12, maxit=5000, pexp=False)
    np.testing.assert_allclose(x5, ref, atol=1e-8)
    assert np.sum(((ref <= lo + 1e-9) | (ref >= hi - 1e-9)) & (lo < hi)) > 3


def test_fast_asc_schur_on_the_sag_free_hessian_takes_few_iterations(problems):
    """A QP of the ALM on the horizontal strand: asc-schur (paper's expansion) reaches the same solution
    as plain ASC in at most as many iterations, and the ALM gives the same parameters with both."""
    from rodlab.inverse.qp import PC_ASCS, MprgpWorkspace

    pb = problems["horizontal"]
    cap = {}
    optimize_strand(pb, SagFreeOptions(max_iters=3, tol=0.0), capture_at=2, capture=cap)
    H, b, lo, hi = cap["H"], cap["b"], cap["lo"], cap["hi"]
    ws = MprgpWorkspace(len(b), H.shape[1] - 1)
    xa, xs = np.zeros(len(b)), np.zeros(len(b))
    ita, _, _ = ws.solve(PC_ASC, H, b, lo, hi, xa, rtol=1e-10, pexp=False)
    its, _, _ = ws.solve(PC_ASCS, H, b, lo, hi, xs, rtol=1e-10, pexp=False)
    A = band_to_dense(H)
    scale = np.abs(xa).max()
    np.testing.assert_allclose(xs, xa, atol=1e-6 * scale)
    assert its <= ita
    fa, fs = 0.5 * xa @ A @ xa - b @ xa, 0.5 * xs @ A @ xs - b @ xs
    assert abs(fa - fs) <= 1e-9 * abs(fa)


@pytest.mark.parametrize("pc", ["asc", "asc-schur", "mic"])
def test_rows_entry_equals_the_band_entry(pc):
    """Full rows built by ``band_to_rows`` (the layout a caller may assemble directly) give bitwise the band
    entry's result; the rows hold the dense matrix."""
    from rodlab.inverse.qp import MprgpWorkspace, mprgp_rows_solve
    from rodlab.linalg.banded_rows import band_to_rows

    p = 6
    A, b, lo, hi = _random_box_qp(14, n=40, p=p)
    n = len(b)
    band = dense_to_band(A, p)
    Ar = np.full((n, 2 * p + 1), np.nan)
    band_to_rows(band, Ar)
    for i in range(n):
        for j in range(2 * p + 1):
            c = i - p + j
            assert Ar[i, j] == (A[i, c] if 0 <= c < n else 0.0)
    ws = MprgpWorkspace(n, p)
    x1, x2 = np.zeros(n), np.zeros(n)
    it1, res1, _ = ws.solve(PC_NAMES[pc], band, b, lo, hi, x1, rtol=1e-12, pexp=False)
    it2, res2, _ = mprgp_rows_solve(PC_NAMES[pc], Ar, b, lo, hi, x2, 1e-12, 1e-14, 10000, np.zeros(0), ws.counts, 1.0, ws.Lb,
                                    ws.Lf, ws.D, ws.ws, ws.free, False, *ws.schur)
    assert it1 == it2 and res1 == res2 and np.array_equal(x1, x2)
    np.testing.assert_allclose(x2, _reference(A, b, lo, hi), atol=1e-8)
