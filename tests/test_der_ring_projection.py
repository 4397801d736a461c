"""Fast projection of closed DER rods (``rodlab.der.projection._fast_projection_ring``, docs/der-speed.md,
"H-rings"): bitwise the general path it replaced for rings (matrix, cyclic solve and move in separate
passes), on random rings with every vertex free, pinned vertices, clamped edges (a cut ring) and all
fixed; its result is on the constraints; a zero pivot raises."""
import numpy as np
import pytest

from rodlab.der import projection as P

NONE_I, NONE_F = np.zeros(0, dtype=np.int64), np.zeros(0)


def _bits(a):
    return np.ascontiguousarray(a).view(np.int64)


def _ring_case(n, pattern, seed):
    """A wobbly ring of ``n`` vertices moved off its rest lengths; inverse masses with zeros where
    ``pattern`` fixes vertices: ``pinned`` one vertex (no inactive edge), ``clamped`` two adjacent
    ones (one inactive edge), ``two_clamps`` two such pairs, ``last`` the pair (n-1, 0) (the
    inactive edge is the last), ``all`` every vertex."""
    rng = np.random.default_rng(seed)
    phi = 2.0 * np.pi * np.arange(n) / n
    rest_x = np.stack([np.cos(phi), np.sin(phi), 0.2 * np.sin(3 * phi)], axis=1) * (1.0 + 0.1 * rng.random((n, 1)))
    rest = np.linalg.norm(np.roll(rest_x, -1, axis=0) - rest_x, axis=1)
    x = rest_x + 0.02 * rest.mean() * rng.standard_normal((n, 3))
    inv_mass = rng.uniform(0.5, 2.0, n)
    if pattern == "pinned":
        inv_mass[n // 3] = 0.0
    elif pattern == "clamped":
        inv_mass[n // 2 - 1:n // 2 + 1] = 0.0
    elif pattern == "two_clamps":
        inv_mass[[0, 1, n // 2, n // 2 + 1]] = 0.0
    elif pattern == "last":
        inv_mass[[n - 1, 0]] = 0.0
    elif pattern == "all":
        inv_mass[:] = 0.0
    return x, inv_mass, rest


def _project(path, x, inv_mass, rest, tol, max_iter):
    n = x.shape[0]
    edges, a, b, rhs, dlam = np.zeros((n, 3)), np.zeros(n), np.zeros(n), np.zeros(n), np.zeros(n)
    active = np.zeros(n, dtype=np.bool_)
    P._mark_active(inv_mass, n, n, NONE_I, active)
    if path == "ring":
        got = P._fast_projection_ring(x, inv_mass, rest, tol, max_iter, edges, a, b, rhs, active, dlam)
    elif path == "dispatch":
        got = P.fast_projection(x, inv_mass, rest, True, tol, max_iter, edges, a, b, rhs, active, dlam,
                                np.zeros((0, 2), dtype=np.int64), np.zeros((0, 3)), NONE_F, NONE_I, NONE_F)
    else:
        got = P._fast_projection_general(x, inv_mass, rest, True, tol, max_iter, edges, a, b, rhs, active, dlam,
                                         np.zeros((0, 2), dtype=np.int64), np.zeros((0, 3)), NONE_F, NONE_I, NONE_F)
    return got, (x, edges, rhs, dlam), active


@pytest.mark.parametrize("n", [3, 4, 8, 31, 64])
@pytest.mark.parametrize("pattern", ["free", "pinned", "clamped", "two_clamps", "last", "all"])
def test_ring_projection_is_bitwise_the_general_one(n, pattern):
    """Every output (iterations, violation, positions, edges, constraint values, multipliers) bitwise
    the general path's, after 0, 1, 2 and up to 20 iterations, for 5 random rings per case."""
    if pattern == "two_clamps" and n < 8:
        pytest.skip("needs room for two clamps")
    for seed in range(5):
        x0, inv_mass, rest = _ring_case(n, pattern, 1000 * n + 10 * seed + len(pattern))
        for tol, max_iter in ((1e-13, 20), (1e-13, 1), (1e-13, 0), (1e-6, 20), (1e-13, 2)):
            (it_r, v_r), arrays_r, active = _project("ring", x0.copy(), inv_mass, rest, tol, max_iter)
            (it_g, v_g), arrays_g, _ = _project("general", x0.copy(), inv_mass, rest, tol, max_iter)
            (it_d, v_d), arrays_d, _ = _project("dispatch", x0.copy(), inv_mass, rest, tol, max_iter)
            assert it_r == it_g == it_d
            assert np.float64(v_r).view(np.int64) == np.float64(v_g).view(np.int64) == np.float64(v_d).view(np.int64)
            for p, q, d in zip(arrays_r, arrays_g, arrays_d):
                assert np.array_equal(_bits(p), _bits(q)) and np.array_equal(_bits(d), _bits(q))
            if max_iter >= 1 and active.any():  # the case iterates (the ring starts off its lengths)
                assert it_r >= 1


@pytest.mark.parametrize("pattern", ["free", "pinned", "clamped", "two_clamps"])
def test_ring_projection_lands_on_the_constraints(pattern):
    """The projected ring has its rest edge lengths to the tolerance, the fixed vertices did not
    move, and the centre of mass of a free ring did not move (the constraint forces are internal)."""
    n = 24
    x0, inv_mass, rest = _ring_case(n, pattern, 7)
    (it, viol), (x, edges, rhs, dlam), active = _project("ring", x0.copy(), inv_mass, rest, 1e-14, 50)
    lengths = np.linalg.norm(np.roll(x, -1, axis=0) - x, axis=1)
    assert 1 <= it < 50 and viol <= 1e-14
    assert np.max(np.abs(lengths[active] / rest[active] - 1.0)) < 1e-13
    assert np.array_equal(x[inv_mass == 0.0], x0[inv_mass == 0.0])
    if pattern == "free":
        m = 1.0 / inv_mass
        assert np.allclose(m @ x / m.sum(), m @ x0 / m.sum(), rtol=0.0, atol=1e-14)


@pytest.mark.parametrize("pattern", ["free", "clamped"])
def test_ring_projection_zero_pivot_raises(pattern):
    """A zero pivot (a zero-length edge between free vertices) raises as the solver does."""
    n = 6
    phi = 2.0 * np.pi * np.arange(n) / n
    x = np.stack([np.cos(phi), np.sin(phi), np.zeros(n)], axis=1)
    x[3] = x[2]  # edge 2 has zero length
    inv_mass = np.ones(n)
    if pattern == "clamped":
        inv_mass[[5, 0]] = 0.0
    with pytest.raises(ValueError, match="zero pivot"):
        _project("ring", x, inv_mass, np.ones(n), 1e-12, 5)
