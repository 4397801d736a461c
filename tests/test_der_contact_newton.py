"""The cluster Newton of explicit DER's impulse solve (rodlab.der.contact_newton; docs/contact-der.md)
and the per-call clamp inputs of moving clamps."""
import numpy as np

from rodlab.der.contact import gauss_seidel, solve_impulses
from rodlab.der.contact_newton import _cluster_coupling, _solve_dense, contact_clusters, newton_cluster
from rodlab.scenes.der_contact_scenes import chain_world
from rodlab.solvers import make_simulator


def _crossing_rows(rng, n_rows, mu):
    """Rows of one contact of two segment chains: consecutive segment pairs around a crossing, normals
    20-30 degrees apart (redundant rows, the hanging chain's case), targets that press them together."""
    nv = 8
    inv_mass = rng.uniform(50.0, 100.0, nv)
    va = np.array([[k % 3, k % 3 + 1] for k in range(n_rows)], dtype=np.int64)
    vb = np.array([[4 + k // 3 % 3, 5 + k // 3 % 3] for k in range(n_rows)], dtype=np.int64)
    wa = np.stack([rng.uniform(0.2, 0.8, n_rows)] * 2, axis=1)
    wa[:, 1] = 1.0 - wa[:, 0]
    wb = wa[:, ::-1].copy()
    normal = np.array([0.0, 0.0, 1.0]) + rng.normal(0.0, 0.25, (n_rows, 3))
    normal /= np.linalg.norm(normal, axis=1)[:, None]
    v = rng.normal(0.0, 0.01, (nv, 3))
    target = rng.uniform(0.0, 0.02, n_rows)
    return va, vb, wa, wb, normal, target, np.full(n_rows, mu), inv_mass, v


def _weff(va, vb, wa, wb, inv_mass):
    return (wa**2 * inv_mass[va]).sum(1) + (wb**2 * inv_mass[vb]).sum(1)


def test_clusters_are_the_rows_that_share_free_vertices():
    va = np.array([[0, 1], [1, 2], [5, 6], [8, 9], [2, 3]], dtype=np.int64)
    vb = np.array([[10, 11], [12, 13], [13, 14], [-1, -1], [20, 21]], dtype=np.int64)
    inv_mass = np.ones(22)
    inv_mass[[8, 9]] = 0.0                     # row 3: every vertex fixed, in no cluster
    weff = np.ones(5)
    weff[3] = 0.0
    start, rows = np.empty(6, dtype=np.int64), np.empty(5, dtype=np.int64)
    n = contact_clusters(va, vb, weff, inv_mass, 22, start, rows)
    got = sorted(tuple(rows[start[c]:start[c + 1]]) for c in range(n))
    assert got == [(0, 1, 2, 4)]
    inv_mass[13] = 0.0                          # a fixed vertex does not join rows
    n = contact_clusters(va, vb, weff, inv_mass, 22, start, rows)
    got = sorted(tuple(rows[start[c]:start[c + 1]]) for c in range(n))
    assert got == [(0, 1, 4), (2,)]


def test_newton_reaches_the_gauss_seidel_fixed_point_in_a_few_iterations():
    rng = np.random.default_rng(7)
    for mu in (0.0, 0.2, 0.6):
        for trial in range(5):
            va, vb, wa, wb, n, target, mus, inv_mass, v = _crossing_rows(rng, 4, mu)
            K = len(target)
            weff = _weff(va, vb, wa, wb, inv_mass)
            # reference: Gauss-Seidel run to round-off
            v_ref = v.copy()
            ln_ref, lt_ref = np.zeros(K), np.zeros((K, 3))
            gauss_seidel(va, vb, wa, wb, n, target, mus, inv_mass, v_ref, ln_ref, lt_ref, weff, np.arange(K), 200000,
                         1e-15, np.empty(K), np.zeros(K))
            v_new = v.copy()
            ln, lt = np.zeros(K), np.zeros((K, 3))
            it = newton_cluster(np.arange(K), va, vb, wa, wb, n, target, mus, inv_mass, v_new, ln, lt, 30, 1e-13,
                                np.zeros(K))
            assert it <= 30
            np.testing.assert_allclose(v_new, v_ref, rtol=0, atol=1e-11)
            # the impulses' effect on v is applied through the lumped masses: momentum moves by sum(P_a - P_b) = 0
            np.testing.assert_allclose(((v_new - v) / inv_mass[:, None]).sum(0), 0.0, atol=1e-15)
            # and a Gauss-Seidel sweep from Newton's root changes nothing beyond the tolerance
            sw, worst = gauss_seidel(va, vb, wa, wb, n, target, mus, inv_mass, v_new.copy(), ln, lt, weff,
                                     np.arange(K), 500, 1e-10, np.empty(K), np.zeros(K))
            assert sw == 1 and worst <= 1e-10


def test_duplicate_rows_give_a_bounded_newton_step():
    """Two segment pairs meeting at one shared vertex give the same contact twice: the Newton system is
    singular; the free unknown is set to 0 and the velocities are those of a single row."""
    rng = np.random.default_rng(3)
    va, vb, wa, wb, n, target, mus, inv_mass, v = _crossing_rows(rng, 1, 0.3)
    va2 = np.array([[0, 1], [1, 2]], dtype=np.int64)
    vb2 = np.array([[4, 5], [4, 5]], dtype=np.int64)
    wa2 = np.array([[0.0, 1.0], [1.0, 0.0]])          # both at vertex 1
    wb2 = np.array([wb[0], wb[0]])
    n2, t2, mu2 = np.array([n[0], n[0]]), np.array([target[0]] * 2), np.array([0.3, 0.3])
    v_one, v_two = v.copy(), v.copy()
    newton_cluster(np.arange(1), va2[:1], vb2[:1], wa2[:1], wb2[:1], n2[:1], t2[:1], mu2[:1], inv_mass, v_one,
                   np.zeros(1), np.zeros((1, 3)), 30, 1e-13, np.zeros(1))
    ln = np.zeros(2)
    newton_cluster(np.arange(2), va2, vb2, wa2, wb2, n2, t2, mu2, inv_mass, v_two, ln, np.zeros((2, 3)), 30, 1e-13,
                   np.zeros(2))
    np.testing.assert_allclose(v_two, v_one, rtol=0, atol=1e-13)
    assert np.all(np.isfinite(ln)) and ln.sum() > 0.0


def test_solve_impulses_with_newton_off_is_plain_gauss_seidel_and_on_agrees_to_the_tolerance():
    rng = np.random.default_rng(11)
    va, vb, wa, wb, n, target, mus, inv_mass, v = _crossing_rows(rng, 4, 0.2)
    K = len(target)
    out = {}
    for after in (-1, 0, 12):
        vv, ln, lt, counts = v.copy(), np.zeros(K), np.zeros((K, 3)), np.zeros(4)
        sweeps = solve_impulses(va, vb, wa, wb, n, target, mus, inv_mass, vv, ln, lt, 500, 1e-10, after, 16, 30,
                                8.0, counts)
        out[after] = (vv, sweeps, counts)
    v_gs = v.copy()
    gauss_seidel(va, vb, wa, wb, n, target, mus, inv_mass, v_gs, np.zeros(K), np.zeros((K, 3)),
                 _weff(va, vb, wa, wb, inv_mass), np.arange(K), 500, 1e-10, np.empty(K), np.zeros(K))
    np.testing.assert_array_equal(out[-1][0], v_gs)
    assert out[-1][2][0] == 0 and out[0][2][0] == 1
    for after in (0, 12):
        np.testing.assert_allclose(out[after][0], v_gs, rtol=0, atol=1e-8)


def test_hanging_chain_needs_few_sweeps_and_matches_the_plain_solver_to_its_tolerance():
    world = chain_world(3, 12, t_hold=1.0)
    res = {}
    for after in (-1, 12):
        sim = make_simulator(world, "der", dt=5e-4, energy_check=False)
        sim._contact.icfg[7] = after
        st = sim.initial_state()
        rep = sim.advance(st, 200)
        res[after] = (st, rep, sim._contact.stats.copy())
    (sa, ra, ca), (sb, rb, cb) = res[-1], res[12]
    assert cb[5] > 0 and cb[3] < 0.2 * ca[3]            # Newton ran, and saved most sweeps (53189 -> 6334)
    assert rb.contact_min_gap >= -0.01 * 0.002 and ra.contacts_sum > 0
    # the links' frictional impacts amplify differences at the solver's tolerance: the plain solver at 500 and at
    # 20000 sweeps per solve end 2.5e-5 m apart after these 200 steps (Newton: 8e-6 m from the 20000-sweep run)
    np.testing.assert_allclose(sb.vertex_x, sa.vertex_x, rtol=0, atol=1e-4)


def test_clamp_inputs_equal_the_motion_applied_one_time_at_a_time():
    world = chain_world(3, 12, t_hold=0.01)              # both end clamps move along x after t_hold
    sim = make_simulator(world, "der", dt=5e-4, energy_check=False)
    st = sim.initial_state()
    times = 0.005 + 5e-4 * np.arange(1, 41)
    for r in sim._moving:
        stp = sim.steppers[r]
        rs = sim._rod_state(st, r)
        presc, m1 = stp._clamp_inputs(rs, times)
        nv = stp.rod.n_vertices
        for s, t in enumerate(times):
            for j, clamp in stp.clamps.items():
                if clamp.motion is None:
                    continue
                rest_x, _ = stp._clamp_rest[j]
                c = rest_x.mean(axis=0)
                R, d = clamp.motion(float(t))
                cols = [int(np.flatnonzero(stp.prescribed_vertices == j)[0]),
                        int(np.flatnonzero(stp.prescribed_vertices == (j + 1) % nv)[0])]
                np.testing.assert_array_equal(presc[s, cols], (rest_x - c) @ np.asarray(R).T + c + np.asarray(d))
            np.testing.assert_array_equal(m1[s], np.array([stp._clamp_m1(int(j), t) for j in stp.clamp_edges]))


def _solve_dense_reference(A, b):
    """The elimination of ``_solve_dense`` over every column (no band): the code it replaced."""
    A, b = A.copy(), b.copy()
    n = len(b)
    scale = np.abs(A).max()
    free = np.zeros(n, dtype=bool)
    for col in range(n):
        p = col + int(np.argmax(np.abs(A[col:, col])))
        if abs(A[p, col]) <= 1e-12 * scale:
            free[col] = True
            continue
        A[[col, p]], b[[col, p]] = A[[p, col]], b[[p, col]]
        for i in range(col + 1, n):
            f = A[i, col] / A[col, col]
            if f != 0.0:
                A[i, col + 1:] -= f * A[col, col + 1:]
                b[i] -= f * b[col]
    for i in range(n - 1, -1, -1):
        b[i] = 0.0 if free[i] else (b[i] - A[i, i + 1:] @ b[i + 1:]) / A[i, i]
    return b


def test_banded_elimination_solves_banded_general_and_singular_systems():
    rng = np.random.default_rng(3)
    for n, band in ((30, 4), (60, 9), (25, 25), (12, 2)):
        A = rng.normal(size=(n, n))
        A[np.abs(np.subtract.outer(np.arange(n), np.arange(n))) > band] = 0.0
        A += np.diag(np.full(n, 0.5))
        b = rng.normal(size=n)
        x = b.copy()
        assert _solve_dense(A.copy(), x)
        np.testing.assert_allclose(A @ x, b, rtol=0, atol=1e-9 * np.abs(b).max() * np.linalg.cond(A))
        ref = _solve_dense_reference(A, b)
        np.testing.assert_allclose(x, ref, rtol=1e-12, atol=1e-14)
    # a duplicate row (singular, consistent): the free unknown is set to 0 and the system still holds
    A = rng.normal(size=(6, 6))
    A[4] = A[1]
    b = rng.normal(size=6)
    b[4] = b[1]
    x = b.copy()
    assert _solve_dense(A.copy(), x)
    np.testing.assert_allclose(x, _solve_dense_reference(A, b), rtol=1e-12, atol=1e-14)
    assert not _solve_dense(np.zeros((3, 3)), np.ones(3))


def _line_of_contact(rng, m, mu):
    """Rows of a line of contact between two strands (a plectoneme's two legs): segment i of strand a
    against segment m - 1 - i of strand b and its neighbour, listed in a shuffled order."""
    nv = 2 * (m + 2)
    inv_mass = rng.uniform(50.0, 100.0, nv)
    va, vb = [], []
    for i in range(m):
        j = (m - 1 - i) // 2
        va.append([i // 2, i // 2 + 1])
        vb.append([m + 2 + j, m + 3 + j])
    order = rng.permutation(m)
    va, vb = np.array(va, dtype=np.int64)[order], np.array(vb, dtype=np.int64)[order]
    wa = np.stack([rng.uniform(0.2, 0.8, m)] * 2, axis=1)
    wa[:, 1] = 1.0 - wa[:, 0]
    wb = wa[:, ::-1].copy()
    normal = np.array([0.0, 0.0, 1.0]) + rng.normal(0.0, 0.2, (m, 3))
    normal /= np.linalg.norm(normal, axis=1)[:, None]
    return va, vb, wa, wb, normal, rng.uniform(0.0, 0.02, m), np.full(m, mu), inv_mass, rng.normal(0.0, 0.01, (nv, 3))


def test_cluster_coupling_is_the_sum_over_shared_vertices():
    rng = np.random.default_rng(5)
    va, vb, wa, wb, _, _, _, inv_mass, _ = _line_of_contact(rng, 30, 0.3)
    inv_mass[[3, 40]] = 0.0
    vb[7] = -1                                   # one obstacle row
    rows = np.arange(30)
    C = _cluster_coupling(rows, va, vb, wa, wb, inv_mass)
    ref = np.zeros((30, 30))
    for p in range(30):
        for q in range(30):
            for vp, sp in list(zip(va[p], wa[p])) + ([] if vb[p, 0] < 0 else list(zip(vb[p], -wb[p]))):
                for vq, sq in list(zip(va[q], wa[q])) + ([] if vb[q, 0] < 0 else list(zip(vb[q], -wb[q]))):
                    if vp == vq:
                        ref[p, q] += sp * sq * inv_mass[vp]
    np.testing.assert_allclose(C, ref, rtol=1e-14, atol=0)
    assert np.array_equal(C == 0.0, ref == 0.0)


def test_newton_on_a_long_line_of_contact_reaches_the_gauss_seidel_fixed_point():
    # the wound plectoneme's live clusters (40-100 rows along the legs): the rows are ordered along the
    # rods inside newton_cluster (a banded system); the result does not depend on the order given
    rng = np.random.default_rng(11)
    for mu in (0.0, 0.1):
        va, vb, wa, wb, n, target, mus, inv_mass, v = _line_of_contact(rng, 60, mu)
        K = len(target)
        weff = _weff(va, vb, wa, wb, inv_mass)
        v_ref, ln_ref, lt_ref = v.copy(), np.zeros(K), np.zeros((K, 3))
        gauss_seidel(va, vb, wa, wb, n, target, mus, inv_mass, v_ref, ln_ref, lt_ref, weff, np.arange(K), 400000,
                     1e-15, np.empty(K), np.zeros(K))
        for rows in (np.arange(K), rng.permutation(K)):
            v_new, ln, lt = v.copy(), np.zeros(K), np.zeros((K, 3))
            it = newton_cluster(rows, va, vb, wa, wb, n, target, mus, inv_mass, v_new, ln, lt, 30, 1e-13, np.zeros(K))
            assert it <= 30
            np.testing.assert_allclose(v_new, v_ref, rtol=0, atol=1e-10)


def test_stable_order_is_the_stable_argsort():
    from rodlab.der.contact_newton import _stable_order

    rng = np.random.default_rng(2)
    for n in (0, 1, 5, 32, 33, 200):
        key = rng.integers(0, max(n // 3, 1), n + 4).astype(np.int64)
        assert np.array_equal(_stable_order(key, n), np.argsort(key[:n], kind="stable"))


def test_dormant_rows_left_out_give_the_sweeps_over_every_row_bit_for_bit():
    """Rows without impulse and with slack (pairs within the margin that do not approach) are left out of
    the sweeps and proven unaffected afterwards; where the prediction is too small the proof fails and the
    solve is redone with them: either way the velocities and impulses of sweeping every row, bit for bit."""
    rng = np.random.default_rng(17)
    for mu in (0.0, 0.3):
        va, vb, wa, wb, n, target, mus, inv_mass, v = _line_of_contact(rng, 40, mu)
        K = len(target)
        # half the rows: pairs that are apart and not approaching (target well below their normal velocity)
        rel = (wa[:, :, None] * v[va]).sum(1) - (wb[:, :, None] * v[vb]).sum(1)
        vn = (rel * n).sum(1)
        apart = rng.permutation(K)[:K // 2]
        target[apart] = vn[apart] - rng.uniform(1e-4, 0.05, apart.size)
        for after in (-1, 12):
            got = {}
            for reach in (0.0, 1e-9, 8.0):
                vv, ln, lt, counts = v.copy(), np.zeros(K), np.zeros((K, 3)), np.zeros(4)
                sweeps = solve_impulses(va, vb, wa, wb, n, target, mus, inv_mass, vv, ln, lt, 500, 1e-10, after, 100,
                                        30, reach, counts)
                got[reach] = (vv, ln, lt, sweeps, counts)
            ref = got[0.0]
            assert ref[4][2] == 0 and ref[4][3] == 0                  # reach 0: every row swept
            assert got[1e-9][4][3] > 0                                # a prediction too small: redone ...
            assert got[8.0][4][2] > 0                                 # ... or rows left out and proven
            for reach in (1e-9, 8.0):
                for a, b in zip(got[reach][:3], ref[:3]):
                    np.testing.assert_array_equal(a, b)
                assert got[reach][3] == ref[3]
                np.testing.assert_array_equal(got[reach][4][:2], ref[4][:2])
