"""The explicit DER step's faster kernels against the kernels they replace in the step (docs/der.md,
"The explicit step, faster"): bitwise the same values on random open and closed rods."""
import numpy as np
import pytest

from rodlab.der import kernels as K
from rodlab.geometry import curves as C
from rodlab.linalg.tridiagonal import solve_tridiagonal_masked


def _rod(n, closed, seed):
    rng = np.random.default_rng(seed)
    s = np.linspace(0.0, 2.0 * np.pi, n, endpoint=not closed)
    x = np.stack([np.cos(s), np.sin(s), 0.3 * np.sin(3 * s)], axis=1) + 0.01 * rng.standard_normal((n, 3))
    ne = n if closed else n - 1
    nj = n if closed else n - 2
    edges, lengths, tangents = np.empty((ne, 3)), np.empty(ne), np.empty((ne, 3))
    C.compute_edges(x, closed, edges)
    C.compute_tangents(edges, lengths, tangents)
    d1 = np.empty((ne, 3))
    for j in range(ne):  # any frame orthogonal to the tangents
        C.orthonormalize_against(tangents[j], np.array([0.0, 0.0, 1.0]) + 0.1 * rng.standard_normal(3), d1[j])
    twist = 0.3 * rng.standard_normal(nj)
    return x, tangents, d1, twist, rng


def _bits(a):
    return np.ascontiguousarray(a).view(np.int64)


@pytest.mark.parametrize("closed", [False, True])
@pytest.mark.parametrize("n", [5, 12, 37])
def test_reference_twist_two_pass_is_bitwise_reference_twist(n, closed):
    x, tangents, d1, twist, _ = _rod(n, closed, n)
    want = twist.copy()
    C.reference_twist(tangents, d1, closed, want, want)
    got = twist.copy()
    num, den = np.empty(len(tangents)), np.empty(len(tangents))
    C.reference_twist_two_pass(tangents, d1, got, num, den)
    assert np.array_equal(_bits(got), _bits(want))
    with pytest.raises(ValueError):  # anti-parallel tangents: no transport, as before
        flipped = tangents.copy()
        flipped[1] = -flipped[0]
        C.reference_twist_two_pass(flipped, d1, got, num, den)


@pytest.mark.parametrize("closed", [False, True])
def test_step_refresh_is_bitwise_refresh_geometry(closed):
    x, tangents, d1, twist, rng = _rod(23, closed, 7)
    moved = x + 0.02 * rng.standard_normal(x.shape)
    out = []
    for fn in ("refresh", "step", "step, edges given"):
        ne, nj = len(tangents), len(twist)
        d1c, twc, t = d1.copy(), twist.copy(), tangents.copy()
        edges, lengths, kb, d2 = np.empty((ne, 3)), np.empty(ne), np.empty((nj, 3)), np.empty((ne, 3))
        if fn == "refresh":
            K.refresh_geometry(moved, closed, d1c, twc, True, edges, lengths, t, kb, d2)
        else:
            given = fn == "step, edges given"
            if given:  # what the projection's last evaluation leaves
                C.compute_edges(moved, closed, edges)
            K._refresh_transported(moved, closed, d1c, twc, edges, lengths, t, kb, d2, np.empty((ne, 3)),
                                   np.empty(ne), np.empty(ne), given)
        out.append([d1c, twc, edges, lengths, t, kb, d2])
    for other in out[1:]:
        for a, b in zip(out[0], other):
            assert np.array_equal(_bits(a), _bits(b))


def _dense(diag, lower, closed):
    n = len(diag)
    A = np.diag(diag)
    for i in range(n - 1):
        A[i + 1, i] = A[i, i + 1] = lower[i]
    if closed:
        A[0, n - 1] = A[n - 1, 0] = lower[n - 1]
    return A


@pytest.mark.parametrize("n", [3, 4, 9, 40])
@pytest.mark.parametrize("pattern", ["all", "one_fixed", "two_runs"])
def test_cyclic_and_masked_solves_against_dense(n, pattern):
    rng = np.random.default_rng(n)
    lower = rng.uniform(-1.0, 1.0, n)
    diag = 3.0 + rng.uniform(0.0, 1.0, n)  # diagonally dominant
    rhs = rng.standard_normal(n)
    free = np.ones(n, dtype=np.bool_)
    if pattern == "one_fixed":
        free[n // 2] = False
    elif pattern == "two_runs":
        free[0] = free[n // 2] = False
    for closed in (False, True):
        out = np.empty(n)
        solve_tridiagonal_masked(diag, lower, rhs, free, closed, out)
        A = _dense(diag, lower, closed)
        idx = np.flatnonzero(free)
        want = np.zeros(n)
        want[idx] = np.linalg.solve(A[np.ix_(idx, idx)], rhs[idx])
        assert np.allclose(out, want, rtol=1e-12, atol=1e-12), (closed, pattern)
        assert np.all(out[~free] == 0.0)


def test_cyclic_solve_zero_pivot_raises():
    n = 5
    diag = np.array([1.0, 0.0, 1.0, 1.0, 1.0])
    lower = np.zeros(n)
    lower[n - 1] = 0.5
    with pytest.raises(ValueError, match="zero pivot"):
        solve_tridiagonal_masked(diag, lower, np.ones(n), np.ones(n, dtype=np.bool_), True, np.empty(n))


def _projection_case(n, pattern, seed):
    """An open rod of ``n`` vertices stretched off its rest lengths, inverse masses with zeros where
    ``pattern`` clamps or pins vertices (so that some edges are inactive)."""
    rng = np.random.default_rng(seed)
    s = np.linspace(0.0, 1.0, n)
    rest_x = np.stack([s, 0.1 * np.sin(4 * s), 0.05 * np.cos(3 * s)], axis=1)
    rest = np.linalg.norm(np.diff(rest_x, axis=0), axis=1)
    x = rest_x + 0.01 * rest.mean() * rng.standard_normal((n, 3))
    inv_mass = rng.uniform(0.5, 2.0, n)
    if pattern in ("clamped", "both", "interior"):
        inv_mass[:2] = 0.0
    if pattern == "both":
        inv_mass[-2:] = 0.0
    if pattern == "interior":  # two fixed vertices side by side inside the rod: an inactive edge between runs
        inv_mass[n // 2:n // 2 + 2] = 0.0
    return x, inv_mass, rest


@pytest.mark.parametrize("n", [3, 4, 11, 60])
@pytest.mark.parametrize("pattern", ["free", "clamped", "both", "interior"])
def test_open_rod_projection_is_bitwise_the_general_one(n, pattern):
    """The two-pass projection of open rods (matrix with the forward sweep, back substitution with
    the move and the next evaluation) against the five-pass general path: every output bitwise,
    after 0, 1, 2 and up to 20 iterations (``max_iter`` stops and the tolerance test)."""
    from rodlab.der import projection as P

    if pattern == "interior" and n < 11:
        pytest.skip("needs room for an interior pin")
    x0, inv_mass, rest = _projection_case(n, pattern, 10 * n + len(pattern))
    ne = n - 1
    none_i, none_f = np.zeros(0, dtype=np.int64), np.zeros(0)
    for tol, max_iter in ((1e-13, 20), (1e-13, 1), (1e-13, 0), (1e-6, 20), (1e-13, 2)):
        outs = []
        for fn in ("open", "general"):
            x = x0.copy()
            edges, a, b, rhs, dlam = np.zeros((ne, 3)), np.zeros(ne), np.zeros(ne), np.zeros(ne), np.zeros(ne)
            active = np.zeros(ne, dtype=np.bool_)
            P._mark_active(inv_mass, n, ne, none_i, active)
            if fn == "open":
                got = P._fast_projection_open(x, inv_mass, rest, False, tol, max_iter, edges, a, b, rhs, active, dlam)
            else:
                got = P._fast_projection_general(x, inv_mass, rest, False, tol, max_iter, edges, a, b, rhs, active, dlam,
                                                 np.zeros((0, 2), dtype=np.int64), np.zeros((0, 3)), none_f, none_i,
                                                 none_f)
            outs.append((got, x, edges, rhs, dlam))
        (it_o, v_o), *arrays_o = outs[0]
        (it_g, v_g), *arrays_g = outs[1]
        assert it_o == it_g and np.float64(v_o).view(np.int64) == np.float64(v_g).view(np.int64)
        for p, q in zip(arrays_o, arrays_g):
            assert np.array_equal(_bits(p), _bits(q))
        if max_iter >= 1 and active.any():  # the case iterates (the rod starts off its lengths)
            assert it_o >= 1


def test_open_rod_projection_zero_pivot_raises():
    """A zero pivot (a degenerate, zero-length edge with free vertices) raises as the solver does."""
    from rodlab.der import projection as P

    x = np.array([[0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [1.0, 0.0, 0.0]])
    inv_mass = np.ones(3)
    ne = 2
    active = np.ones(ne, dtype=np.bool_)
    with pytest.raises(ValueError, match="zero pivot"):
        P._fast_projection_open(x, inv_mass, np.ones(ne), False, 1e-12, 5, np.zeros((ne, 3)), np.zeros(ne),
                                np.zeros(ne), np.zeros(ne), active, np.zeros(ne))
