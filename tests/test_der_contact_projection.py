"""The inextensibility projection that keeps pressed contacts (rodlab.der.contact_projection):
without rows it is fast projection; with rows it makes the edges inextensible while the pressed
rows keep their values, releases a row that would have to pull, conserves momentum between free
rods and books the contact part as the rows' normal impulse."""
import numpy as np
import pytest

from rodlab.der.contact_projection import project_keeping_contacts
from rodlab.der.projection import fast_projection

TOL = 1e-12


def _layout(sizes, closed):
    start = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    edges = [n if c else n - 1 for n, c in zip(sizes, closed)]
    estart = np.concatenate([[0], np.cumsum(edges)]).astype(np.int64)
    return start, estart, np.array(closed)


def _run(x, inv_mass, sizes, closed, rest, rows, lam_n=None, h=1e-3, max_iter=50):
    va, vb, wa, wb, normal = (np.array(a) for a in rows) if rows else (
        np.zeros((0, 2), np.int64), np.zeros((0, 2), np.int64), np.zeros((0, 2)), np.zeros((0, 2)), np.zeros((0, 3)))
    va, vb = va.astype(np.int64).reshape(-1, 2), vb.astype(np.int64).reshape(-1, 2)
    wa, wb, normal = wa.reshape(-1, 2).astype(float), wb.reshape(-1, 2).astype(float), normal.reshape(-1, 3).astype(float)
    K = va.shape[0]
    lam_n = np.ones(K) if lam_n is None else lam_n
    start, estart, closed_a = _layout(sizes, closed)
    x = x.copy()
    v = np.zeros_like(x)
    viol = np.empty(len(sizes))
    worst = project_keeping_contacts(np.arange(len(sizes), dtype=np.int64), np.arange(K, dtype=np.int64), va, vb, wa,
                                     wb, normal, lam_n, x, v, h, inv_mass, start, estart, closed_a, rest, TOL, max_iter, viol)
    return x, v, lam_n, worst


def _phi(x, va, vb, wa, wb, n):
    p = wa[0] * x[va[0]] + wa[1] * x[va[1]]
    if vb[0] >= 0:
        p = p - wb[0] * x[vb[0]] - wb[1] * x[vb[1]]
    return float(np.dot(n, p))


def _plain(x, inv_mass, rest, closed):
    x = x.copy()
    ne = rest.shape[0]
    e = np.empty((ne, 3))
    fast_projection(x, inv_mass, rest, closed, TOL, 50, e, np.empty(ne), np.empty(ne), np.empty(ne),
                    np.empty(ne, dtype=np.bool_), np.empty(ne), np.zeros((0, 2), np.int64), np.zeros((0, 3)),
                    np.zeros(0), np.zeros(0, np.int64), np.zeros(0))
    return x


def _edge_lengths(x, closed):
    d = np.diff(np.vstack([x, x[:1]]) if closed else x, axis=0)
    return np.linalg.norm(d, axis=1)


@pytest.mark.parametrize("closed", [False, True])
def test_without_rows_it_is_fast_projection(closed):
    rng = np.random.default_rng(3)
    n = 9
    phi = 2 * np.pi * np.arange(n) / n
    x = np.stack([np.cos(phi), np.sin(phi), 0.1 * rng.standard_normal(n)], 1) if closed else \
        np.stack([np.arange(n) * 0.1, 0.02 * rng.standard_normal(n), 0.02 * rng.standard_normal(n)], 1)
    inv_mass = rng.uniform(0.5, 2.0, n)
    inv_mass[0] = 0.0
    rest = _edge_lengths(x, closed) * rng.uniform(0.95, 1.05, n if closed else n - 1)
    got, v, _, worst = _run(x, inv_mass, [n], [closed], rest, None)
    want = _plain(x, inv_mass, rest, closed)
    assert worst <= TOL
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-13)
    np.testing.assert_allclose(v, (want - x) / 1e-3, rtol=0, atol=1e-9)


def _sagging(n=7):
    s = np.linspace(-1.0, 1.0, n)
    x = np.stack([0.3 * s, 0.01 * np.sin(3 * s), -0.1 * (1 - s * s)], 1)
    inv_mass = np.ones(n)
    inv_mass[0] = inv_mass[-1] = 0.0
    rest = 1.05 * _edge_lengths(x, False)  # too short now: the projection lengthens, the middle drops
    return x, inv_mass, rest


def test_a_pressed_row_holds_while_the_edges_become_inextensible():
    x, inv_mass, rest = _sagging()
    mid = 3
    plain = _plain(x, inv_mass, rest, False)
    assert plain[mid, 2] < x[mid, 2] - 1e-3  # without the row the middle drops
    row = ([[mid, mid + 1]], [[-1, -1]], [[1.0, 0.0]], [[0.0, 0.0]], [[0.0, 0.0, 1.0]])  # a floor under the middle
    got, v, lam, worst = _run(x, inv_mass, [7], [False], rest, row, lam_n=np.array([0.5]))
    assert worst <= TOL
    np.testing.assert_allclose(_edge_lengths(got, False), rest, rtol=1e-6)
    assert abs(got[mid, 2] - x[mid, 2]) < 1e-12
    assert lam[0] > 0.5  # the floor pushed: its impulse is booked on the row
    # the impulse booked is the one that moved the middle vertex beyond the edges' share
    assert np.all(np.isfinite(v))


def test_a_row_that_would_have_to_pull_is_released():
    x, inv_mass, rest = _sagging()
    mid = 3
    row = ([[mid, mid + 1]], [[-1, -1]], [[1.0, 0.0]], [[0.0, 0.0]], [[0.0, 0.0, -1.0]])  # a ceiling over it
    got, v, lam, worst = _run(x, inv_mass, [7], [False], rest, row, lam_n=np.array([0.5]))
    np.testing.assert_allclose(got, _plain(x, inv_mass, rest, False), rtol=0, atol=1e-13)
    assert lam[0] == 0.5


def test_two_free_rings_pressed_together_keep_the_row_and_momentum():
    n = 8
    phi = 2 * np.pi * np.arange(n) / n
    a = np.stack([0.02 * np.cos(phi), np.zeros(n), 0.02 * np.sin(phi)], 1)
    b = np.stack([0.024 + 0.02 * np.cos(phi), 0.02 * np.sin(phi), np.zeros(n)], 1)
    rng = np.random.default_rng(5)
    x = np.vstack([a, b]) + 1e-4 * rng.standard_normal((2 * n, 3))  # a round's small violation
    inv_mass = rng.uniform(0.8, 1.2, 2 * n)
    rest = np.concatenate([_edge_lengths(a, True), _edge_lengths(b, True)])
    # ring a's vertex 0 (x = +0.02) presses ring b's vertices n+4, n+5 (x ~ 0.004 ... )
    plain = np.vstack([_plain(x[:n], inv_mass[:n], rest[:n], True), _plain(x[n:], inv_mass[n:], rest[n:], True)])
    va, vb, wa, wb = np.array([0, 1]), np.array([n + 4, n + 5]), np.array([0.7, 0.3]), np.array([0.6, 0.4])
    nrm = np.array([1.0, 0.0, 0.0])
    if _phi(plain, va, vb, wa, wb, nrm) > _phi(x, va, vb, wa, wb, nrm):
        nrm = -nrm  # the normal along which the plain projection pushes the two points into each other
    assert _phi(plain, va, vb, wa, wb, nrm) < _phi(x, va, vb, wa, wb, nrm) - 1e-6
    rows = ([va], [vb], [wa], [wb], [nrm])
    got, v, lam, worst = _run(x, inv_mass, [n, n], [True, True], rest, rows, max_iter=4)
    assert worst <= TOL  # Newton: 4 steps from a relative violation of ~1e-2
    np.testing.assert_allclose(_edge_lengths(got[:n], True), rest[:n], rtol=1e-6)
    np.testing.assert_allclose(_edge_lengths(got[n:], True), rest[n:], rtol=1e-6)
    assert _phi(got, va, vb, wa, wb, nrm) == pytest.approx(_phi(x, va, vb, wa, wb, nrm), abs=1e-12)
    assert lam[0] > 1.0  # it pushed
    p = (v / inv_mass[:, None]).sum(axis=0)  # every constraint is internal: no momentum made
    assert np.abs(p).max() < 1e-12 * np.abs(v / inv_mass[:, None]).max()


def test_one_step_is_the_dense_kkt_newton_step():
    """One iteration equals the Newton step of the whole system solved densely:
    (J M^-1 J^T) lam = [C; 0], x -= M^-1 J^T lam, J = [edge gradients; the row's gradient]."""
    n = 8
    phi = 2 * np.pi * np.arange(n) / n
    a = np.stack([0.02 * np.cos(phi), np.zeros(n), 0.02 * np.sin(phi)], 1)
    b = np.stack([0.024 + 0.02 * np.cos(phi), 0.02 * np.sin(phi), np.zeros(n)], 1)
    rng = np.random.default_rng(5)
    x = np.vstack([a, b]) + 2e-4 * rng.standard_normal((2 * n, 3))
    inv_mass = rng.uniform(0.8, 1.2, 2 * n)
    rest = np.concatenate([_edge_lengths(a, True), _edge_lengths(b, True)])
    va, vb, wa, wb = np.array([0, 1]), np.array([n + 4, n + 5]), np.array([0.7, 0.3]), np.array([0.6, 0.4])
    J = np.zeros((2 * n + 1, 6 * n))
    C = np.zeros(2 * n + 1)
    for r in range(2):
        for j in range(n):
            i0, i1 = r * n + j, r * n + (j + 1) % n
            e = x[i1] - x[i0]
            J[r * n + j, 3 * i1:3 * i1 + 3] += 2 * e
            J[r * n + j, 3 * i0:3 * i0 + 3] -= 2 * e
            C[r * n + j] = e @ e - rest[r * n + j] ** 2
    pushed = None
    for sign in (1.0, -1.0):
        nrm = np.array([sign, 0.0, 0.0])
        Jr = J.copy()
        for i, w in zip(va, wa):
            Jr[-1, 3 * i:3 * i + 3] += w * nrm
        for i, w in zip(vb, wb):
            Jr[-1, 3 * i:3 * i + 3] -= w * nrm
        minv = np.repeat(inv_mass, 3)
        lam = np.linalg.solve(Jr @ (minv[:, None] * Jr.T), C)
        if lam[-1] > 0:
            continue  # this side would pull: released (test above)
        pushed = sign
        want = x - (minv * (Jr.T @ lam)).reshape(-1, 3)
        got, _, lam_n, _ = _run(x, inv_mass, [n, n], [True, True], rest, ([va], [vb], [wa], [wb], [nrm]), max_iter=1)
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-15)
        assert lam_n[0] == pytest.approx(1.0 - lam[-1] / 1e-3, rel=1e-9)
    assert pushed is not None
