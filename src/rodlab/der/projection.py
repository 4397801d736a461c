"""Inextensibility of a DER rod's edges, ``C_j = e_j . e_j - ebar_j^2 = 0``, on the tridiagonal
(or cyclic) systems ``G M^-1 G^T`` of the constraint gradients ``G``:

- :func:`fast_projection`: Goldenthal et al.'s fast manifold projection (Bergou et al. 2008,
  "Discrete Elastic Rods", Sec. 8.1; the ``der`` simulator's ``projection="fast"``);
- :func:`shake_projection` and :func:`velocity_projection`: the RATTLE step (Andersen 1983,
  "Rattle: a velocity version of the Shake algorithm for molecular dynamics calculations";
  Hairer, Lubich, Wanner, "Geometric Numerical Integration", 2006, Sec. VII.1): the SHAKE position
  correction along the constraint gradients of the step's start and the velocity projection
  onto the constraints' tangent space at the step's end (``projection="symplectic"``).

All three build the matrix with :func:`_constraint_matrix` and move the unknowns with
:func:`_apply_multipliers`. Used by :func:`rodlab.der.kernels.run_steps`.
"""
from __future__ import annotations

from numba import njit

from ..geometry._vec import JIT
from ..geometry.curves import compute_edges
from ..linalg.tridiagonal import sherman_morrison_finish, solve_tridiagonal_masked


@njit(**JIT)
def _mark_active(inv_mass, nv, ne, slide_edge, active):
    """``active[j]``: edge ``j`` (of a rod of ``nv`` vertices) has a free vertex or a slider, so
    its constraint is solved."""
    for j in range(ne):
        b = j + 1
        if b == nv:
            b = 0
        active[j] = inv_mass[j] + inv_mass[b] > 0.0
    for k in range(slide_edge.shape[0]):
        active[slide_edge[k]] = True


@njit(**JIT)
def _violation(x, closed, rest_lengths, active, edges, rhs):
    """Edges of ``x`` into ``edges``, ``rhs[j] = C_j`` on active edges (0 elsewhere); returns
    ``max_j |C_j| / ebar_j^2``."""
    compute_edges(x, closed, edges)
    viol = 0.0
    for j in range(rest_lengths.shape[0]):
        c = edges[j, 0] ** 2 + edges[j, 1] ** 2 + edges[j, 2] ** 2 - rest_lengths[j] ** 2
        rhs[j] = c if active[j] else 0.0
        viol = max(viol, abs(rhs[j]) / (rest_lengths[j] * rest_lengths[j]))
    return viol


@njit(**JIT)
def _constraint_matrix(edges, inv_mass, closed, active, slide_axis, slide_w, slide_edge, a_diag, a_lower):
    """``G M^-1 G^T`` of the length constraints for the edge vectors ``edges`` (tridiagonal or
    cyclic, sliders included; inactive rows are identity rows): the matrix of
    :func:`fast_projection`'s Newton step."""
    nv = inv_mass.shape[0]
    ne = edges.shape[0]
    for j in range(ne):
        b = j + 1
        if b == nv:
            b = 0
        a_diag[j] = 4.0 * (edges[j, 0] ** 2 + edges[j, 1] ** 2 + edges[j, 2] ** 2) * (inv_mass[j] + inv_mass[b])
        if not active[j]:
            a_diag[j] = 1.0
        nxt = j + 1
        if nxt == ne:
            nxt = 0
        if (j + 1 < ne or closed) and active[j] and active[nxt]:
            a_lower[j] = -4.0 * inv_mass[b] * (edges[j, 0] * edges[nxt, 0] + edges[j, 1] * edges[nxt, 1] + edges[j, 2] * edges[nxt, 2])
        else:
            a_lower[j] = 0.0
    for k in range(slide_edge.shape[0]):
        j = slide_edge[k]
        ea = edges[j, 0] * slide_axis[k, 0] + edges[j, 1] * slide_axis[k, 1] + edges[j, 2] * slide_axis[k, 2]
        a_diag[j] += 4.0 * slide_w[k] * ea * ea


@njit(**JIT)
def _apply_multipliers(y, inv_mass, edges, dlam, slide_v, slide_axis, slide_w, slide_edge, slide_side):
    """``y -= M^-1 G^T dlam`` for the constraint gradients of the edge vectors ``edges`` (``y``:
    positions or velocities; sliders move along their axis)."""
    nv = y.shape[0]
    ne = edges.shape[0]
    for k in range(slide_edge.shape[0]):
        j = slide_edge[k]
        ea = edges[j, 0] * slide_axis[k, 0] + edges[j, 1] * slide_axis[k, 1] + edges[j, 2] * slide_axis[k, 2]
        ds = slide_side[k] * slide_w[k] * 2.0 * dlam[j] * ea
        for c in range(2):
            for d in range(3):
                y[slide_v[k, c], d] += ds * slide_axis[k, d]
    for j in range(ne):
        b = j + 1
        if b == nv:
            b = 0
        lam = 2.0 * dlam[j]
        for d in range(3):
            g = lam * edges[j, d]
            y[b, d] -= inv_mass[b] * g
            y[j, d] += inv_mass[j] * g


# --------------------------------------------------------------------------------------------
# inextensibility by fast manifold projection (Bergou 2008, Sec. 8.1; Goldenthal et al. 2007)
# --------------------------------------------------------------------------------------------
@njit(**JIT)
def fast_projection(x, inv_mass, rest_lengths, closed, tol, max_iter, edges, a_diag, a_lower, rhs, active, dlam,
                    slide_v, slide_axis, slide_w, slide_edge, slide_side):
    """Project ``x`` onto ``C_j = e_j . e_j - ebar_j . ebar_j = 0`` in the mass metric.

    Each iteration is one Newton step of Goldenthal's fast projection: solve the (cyclic)
    tridiagonal ``(grad C M^-1 grad C^T) dlam = C`` and move ``x -= M^-1 grad C^T dlam``, the
    gradients taken at the current ``x``. Stops when ``max_j |C_j| / ebar_j^2 <= tol``. Returns
    ``(iterations, final violation)``; ``edges`` holds the edges of the final ``x``, ``rhs`` its
    constraint values (0 on inactive edges), ``dlam`` the last multipliers. An open rod without
    sliders is projected by :func:`_fast_projection_open`, a closed one (of 3 edges or more) by
    :func:`_fast_projection_ring` (the same values, bitwise; ``a_diag`` and ``a_lower`` are then
    their scratch), any other by :func:`_fast_projection_general`
    (inlined: as a call it would put the general path's kernels one level deeper in every
    caller's tree, +4-10 s of cold compile CPU for a der cantilever).

    Sliding clamps (``slide_*``, see :func:`rodlab.der.kernels.run_steps`): the clamped edge's two
    vertices share one unknown, the slide along ``slide_axis[k]`` with inverse mass
    ``slide_w[k]``; it enters only the one constraint ``slide_edge[k]`` that joins the clamp to the
    free rod (the clamped edge itself keeps its length), with ``grad_s C = 2 side (e . axis)``,
    ``side = +1`` when the slider is that edge's first vertex and ``-1`` when it is its second.
    """
    _mark_active(inv_mass, x.shape[0], rest_lengths.shape[0], slide_edge, active)
    if slide_edge.shape[0] == 0:
        if not closed:
            return _fast_projection_open(x, inv_mass, rest_lengths, closed, tol, max_iter, edges, a_diag, a_lower, rhs,
                                         active, dlam)
        if rest_lengths.shape[0] > 2:
            return _fast_projection_ring(x, inv_mass, rest_lengths, tol, max_iter, edges, a_diag, a_lower, rhs, active,
                                         dlam)
    return _fast_projection_general(x, inv_mass, rest_lengths, closed, tol, max_iter, edges, a_diag, a_lower, rhs,
                                    active, dlam, slide_v, slide_axis, slide_w, slide_edge, slide_side)


@njit(inline="always", **JIT)
def _fast_projection_general(x, inv_mass, rest_lengths, closed, tol, max_iter, edges, a_diag, a_lower, rhs, active,
                             dlam, slide_v, slide_axis, slide_w, slide_edge, slide_side):
    """:func:`fast_projection`'s iterations for any rod (``active`` marked): the matrix
    (:func:`_constraint_matrix`), the masked (cyclic) tridiagonal solve and the move
    (:func:`_apply_multipliers`) one pass each."""
    viol = 0.0
    for it in range(max_iter + 1):
        viol = _violation(x, closed, rest_lengths, active, edges, rhs)
        if viol <= tol or it == max_iter:
            return it, viol
        _constraint_matrix(edges, inv_mass, closed, active, slide_axis, slide_w, slide_edge, a_diag, a_lower)
        solve_tridiagonal_masked(a_diag, a_lower, rhs, active, closed, dlam)
        _apply_multipliers(x, inv_mass, edges, dlam, slide_v, slide_axis, slide_w, slide_edge, slide_side)
    return max_iter, viol


@njit(**JIT)
def _fast_projection_open(x, inv_mass, rest_lengths, closed, tol, max_iter, edges, cp, dp, rhs, active, dlam):
    """:func:`fast_projection` of an open rod without sliders (``closed`` false, ``active``
    marked) in two passes per iteration instead of five, bitwise :func:`_fast_projection_general`:

    - forward: each active row's entries of ``G M^-1 G^T`` (:func:`_constraint_matrix`'s
      expressions) and Thomas' forward sweep over the runs of active rows (``cp``, ``dp``: the
      sweep's ``c'``, ``d'``; the previous row's values carried in scalars,
      :func:`rodlab.linalg.tridiagonal.solve_tridiagonal_masked`'s operations): the matrix
      arithmetic fills the latency of the sweep's divisions;
    - backward: the back substitution gives ``dlam[r]``; vertex ``r + 1`` then has both its
      multipliers and moves (edge ``r``'s share first, then edge ``r + 1``'s, as
      :func:`_apply_multipliers` orders them, with the edges of the iteration's start), and edge
      ``r + 1``, whose vertices are both final, gets its new vector, constraint value and share
      of the violation (:func:`_violation`'s expressions; its maximum ignores NaN whatever the
      order, as ``max(viol, q)`` does in numba when only ``q`` can be NaN).

    Inactive rows get ``dlam = 0`` and move their vertices by the same zero products as the
    general path. A zero pivot raises ``ValueError`` as the tridiagonal solver does."""
    ne = rest_lengths.shape[0]
    viol = _violation(x, closed, rest_lengths, active, edges, rhs)
    for it in range(max_iter + 1):
        if viol <= tol or it == max_iter:
            return it, viol
        a = 0.0  # G M^-1 G^T between the previous row and this one
        c_prev = 0.0
        d_prev = 0.0
        for r in range(ne):
            if not active[r]:
                continue
            e0, e1, e2 = edges[r, 0], edges[r, 1], edges[r, 2]
            diag = 4.0 * (e0 ** 2 + e1 ** 2 + e2 ** 2) * (inv_mass[r] + inv_mass[r + 1])
            linked = r + 1 < ne and active[r + 1]
            upper = 0.0
            if linked:
                upper = -4.0 * inv_mass[r + 1] * (e0 * edges[r + 1, 0] + e1 * edges[r + 1, 1] + e2 * edges[r + 1, 2])
            if r > 0 and active[r - 1]:
                b = diag - a * c_prev
                if b == 0.0:
                    raise ValueError("singular tridiagonal matrix (zero pivot)")
                c_prev = upper / b if linked else 0.0
                d_prev = (rhs[r] - a * d_prev) / b
            else:
                if diag == 0.0:
                    raise ValueError("singular tridiagonal matrix (zero pivot)")
                c_prev = upper / diag if linked else 0.0
                d_prev = rhs[r] / diag
            cp[r] = c_prev
            dp[r] = d_prev
            a = upper
        o = 0.0
        viol = 0.0
        n0 = 0.0  # edge r + 1's 2 dlam e (the edge vector of the iteration's start)
        n1 = 0.0
        n2 = 0.0
        for r in range(ne - 1, -1, -1):
            if not active[r]:
                o = 0.0
            elif r + 1 < ne and active[r + 1]:
                o = dp[r] - cp[r] * o
            else:
                o = dp[r]
            dlam[r] = o
            lam = 2.0 * o
            g0 = lam * edges[r, 0]
            g1 = lam * edges[r, 1]
            g2 = lam * edges[r, 2]
            v = r + 1
            mv = inv_mass[v]
            x[v, 0] -= mv * g0
            x[v, 1] -= mv * g1
            x[v, 2] -= mv * g2
            if v < ne:
                x[v, 0] += mv * n0
                x[v, 1] += mv * n1
                x[v, 2] += mv * n2
                viol = _edge_violation(x, v, rest_lengths, active, edges, rhs, viol)
            n0, n1, n2 = g0, g1, g2
        x[0, 0] += inv_mass[0] * n0
        x[0, 1] += inv_mass[0] * n1
        x[0, 2] += inv_mass[0] * n2
        viol = _edge_violation(x, 0, rest_lengths, active, edges, rhs, viol)
    return max_iter, viol


@njit(inline="always", **JIT)
def _edge_violation(x, j, rest_lengths, active, edges, rhs, viol):
    """Edge ``j`` of the open rod ``x`` into ``edges``, ``rhs[j]``, and ``viol`` raised to its
    share (:func:`_violation` for one edge, the same expressions)."""
    for c in range(3):
        edges[j, c] = x[j + 1, c] - x[j, c]
    cj = edges[j, 0] ** 2 + edges[j, 1] ** 2 + edges[j, 2] ** 2 - rest_lengths[j] ** 2
    rhs[j] = cj if active[j] else 0.0
    return max(viol, abs(rhs[j]) / (rest_lengths[j] * rest_lengths[j]))


# --------------------------------------------------------------------------------------------
# closed rods: the cyclic system without allocation, the matrix entries computed where read
# --------------------------------------------------------------------------------------------
@njit(**JIT)
def _fast_projection_ring(x, inv_mass, rest_lengths, tol, max_iter, edges, s0, s1, rhs, active, dlam):
    """:func:`fast_projection` of a closed rod of ``n > 2`` edges without sliders (``active``
    marked), bitwise :func:`_fast_projection_general`, in four passes per iteration instead of
    eight and without its solver's allocation:

    - every edge active: the Sherman-Morrison solve of the cyclic system
      (:func:`_ring_multipliers_sherman_morrison`), its forward sweep computing the matrix entries
      where it needs them;
    - some edge inactive (both its vertices clamped): the ring cut after the first inactive edge
      and solved as a chain from the edge after it round to it (:func:`_ring_multipliers_cut`);
    - then the move (:func:`_ring_move`) and the next evaluation (:func:`_violation`).

    ``s0``, ``s1`` (n): scratch. A zero pivot raises ``ValueError`` as the tridiagonal solver does."""
    n = rest_lengths.shape[0]
    cut = -1
    for j in range(n):
        if not active[j]:
            cut = j
            break
    viol = _violation(x, True, rest_lengths, active, edges, rhs)
    for it in range(max_iter + 1):
        if viol <= tol or it == max_iter:
            return it, viol
        if cut < 0:
            _ring_multipliers_sherman_morrison(inv_mass, edges, rhs, s0, s1, dlam)
        else:
            _ring_multipliers_cut(inv_mass, edges, rhs, active, cut, s0, s1, dlam)
        _ring_move(x, inv_mass, edges, dlam)
        viol = _violation(x, True, rest_lengths, active, edges, rhs)
    return max_iter, viol


@njit(**JIT)
def _ring_diag(e0, e1, e2, ma, mb):
    """``(G M^-1 G^T)[j, j]`` of an active edge ``e`` between vertices of inverse masses ``ma``,
    ``mb`` (:func:`_constraint_matrix`'s expression; scalars: LLVM inlines it)."""
    return 4.0 * (e0 ** 2 + e1 ** 2 + e2 ** 2) * (ma + mb)


@njit(**JIT)
def _ring_coupling(mb, a0, a1, a2, b0, b1, b2):
    """``(G M^-1 G^T)[j, k]`` of the active edges ``a`` (``j``) and ``b`` (``k = j + 1``) sharing a
    vertex of inverse mass ``mb`` (:func:`_constraint_matrix`'s expression; scalars: LLVM inlines it,
    and numba compiles it in a fraction of the time an array version takes)."""
    return -4.0 * mb * (a0 * b0 + a1 * b1 + a2 * b2)


@njit(inline="always", **JIT)
def _ring_multipliers_sherman_morrison(inv_mass, edges, rhs, cp, z, y):
    """``y`` = the multipliers of a ring whose ``n > 2`` edges are all active: the operations of
    :func:`rodlab.linalg.tridiagonal.solve_tridiagonal_masked`'s Sherman-Morrison solve on
    :func:`_constraint_matrix`'s entries, each entry computed in the forward sweep's row that
    reads it (``A[0, 0]``, ``A[n-1, n-1]`` and the corner ``A[n-1, 0]`` first: the split needs
    them; row 0 in the loop, its ``a`` and carried values 0: ``x - 0 * 0`` is ``x``, bitwise).
    ``cp``, ``z`` (n): scratch."""
    n = edges.shape[0]
    d0 = _ring_diag(edges[0, 0], edges[0, 1], edges[0, 2], inv_mass[0], inv_mass[1])
    corner = _ring_coupling(inv_mass[0], edges[n - 1, 0], edges[n - 1, 1], edges[n - 1, 2], edges[0, 0], edges[0, 1],
                            edges[0, 2])
    gamma = -d0 if d0 != 0.0 else -1.0
    d_last = _ring_diag(edges[n - 1, 0], edges[n - 1, 1], edges[n - 1, 2], inv_mass[n - 1], inv_mass[0]) \
        - corner * corner / gamma
    a = 0.0  # the coupling of the previous row and this one
    c_prev = 0.0
    y_prev = 0.0
    z_prev = 0.0
    for r in range(n):
        upper = 0.0
        if r == 0:
            dr = d0 - gamma
        elif r == n - 1:
            dr = d_last
        else:
            dr = _ring_diag(edges[r, 0], edges[r, 1], edges[r, 2], inv_mass[r], inv_mass[r + 1])
        if r + 1 < n:
            upper = _ring_coupling(inv_mass[r + 1], edges[r, 0], edges[r, 1], edges[r, 2], edges[r + 1, 0],
                                   edges[r + 1, 1], edges[r + 1, 2])
        b = dr - a * c_prev
        if b == 0.0:
            raise ValueError("singular tridiagonal matrix (zero pivot)")
        c_prev = upper / b if r + 1 < n else 0.0
        ur = gamma if r == 0 else (corner if r == n - 1 else 0.0)
        y_prev = (rhs[r] - a * y_prev) / b
        z_prev = (ur - a * z_prev) / b
        cp[r] = c_prev
        y[r] = y_prev
        z[r] = z_prev
        a = upper
    sherman_morrison_finish(n, cp, y, z, y_prev, z_prev, gamma, corner, y)


@njit(inline="always", **JIT)
def _ring_multipliers_cut(inv_mass, edges, rhs, active, cut, cp, dp, dlam):
    """``dlam`` = the multipliers of a ring with an inactive edge, ``cut`` the first: the
    operations of :func:`rodlab.linalg.tridiagonal.solve_tridiagonal_masked`'s cut ring (the
    rows taken from ``cut + 1`` round to ``cut``, Thomas on each run of active rows, inactive
    rows 0) on :func:`_constraint_matrix`'s entries, computed in the forward sweep as
    :func:`_fast_projection_open` does (a run's first row: ``a`` and the carried values 0, so
    ``x - 0 * 0`` is ``x``, bitwise). ``cp``, ``dp`` (n): the sweep's ``c'``, ``d'``."""
    n = edges.shape[0]
    a = 0.0
    c_prev = 0.0
    d_prev = 0.0
    r = cut
    for i in range(n):
        rp = r  # the previous row in the cut ring's order
        r = r + 1 if r + 1 < n else 0
        if not active[r]:
            continue
        rn = r + 1 if r + 1 < n else 0
        linked = i + 1 < n and active[rn]
        upper = 0.0
        if linked:
            upper = _ring_coupling(inv_mass[rn], edges[r, 0], edges[r, 1], edges[r, 2], edges[rn, 0], edges[rn, 1],
                                   edges[rn, 2])
        if not (i > 0 and active[rp]):  # a run starts
            a = 0.0
            c_prev = 0.0
            d_prev = 0.0
        b = _ring_diag(edges[r, 0], edges[r, 1], edges[r, 2], inv_mass[r], inv_mass[rn]) - a * c_prev
        if b == 0.0:
            raise ValueError("singular tridiagonal matrix (zero pivot)")
        c_prev = upper / b if linked else 0.0
        d_prev = (rhs[r] - a * d_prev) / b
        cp[r] = c_prev
        dp[r] = d_prev
        a = upper
    o = 0.0
    r = cut
    for i in range(n - 1, -1, -1):  # rows cut, cut - 1, .., cut + 1
        if not active[r]:
            o = 0.0
        elif i + 1 < n and active[r + 1 if r + 1 < n else 0]:
            o = dp[r] - cp[r] * o
        else:
            o = dp[r]
        dlam[r] = o
        r = r - 1 if r > 0 else n - 1


@njit(inline="always", **JIT)
def _ring_move(x, inv_mass, edges, dlam):
    """``x -= M^-1 G^T dlam`` on a closed rod in one pass, :func:`_apply_multipliers`' operations
    in its order per vertex: vertex ``j > 0`` gets edge ``j - 1``'s share, then edge ``j``'s;
    vertex 0 edge 0's, then edge ``n - 1``'s."""
    n = edges.shape[0]
    p0 = 0.0  # edge j - 1's 2 dlam e
    p1 = 0.0
    p2 = 0.0
    for j in range(n):
        lam = 2.0 * dlam[j]
        g0 = lam * edges[j, 0]
        g1 = lam * edges[j, 1]
        g2 = lam * edges[j, 2]
        mj = inv_mass[j]
        if j > 0:
            x[j, 0] -= mj * p0
            x[j, 1] -= mj * p1
            x[j, 2] -= mj * p2
        x[j, 0] += mj * g0
        x[j, 1] += mj * g1
        x[j, 2] += mj * g2
        p0, p1, p2 = g0, g1, g2
    m0 = inv_mass[0]
    x[0, 0] -= m0 * p0
    x[0, 1] -= m0 * p1
    x[0, 2] -= m0 * p2

@njit(**JIT)
def shake_projection(x, x_old, inv_mass, rest_lengths, closed, tol, max_iter, edges, edges0, a_diag, a_lower, rhs,
                     active, dlam, slide_v, slide_axis, slide_w, slide_edge, slide_side):
    """SHAKE position correction (Ryckaert, Ciccotti, Berendsen 1977; Andersen 1983, "Rattle"):
    ``x <- x - M^-1 G(x_old)^T lam`` with ``lam`` such that ``C(x) = 0``, the gradients taken at
    the step's start ``x_old`` (a constraint force of the step, not a closest-point projection).

    Simplified Newton on ``lam``: the Jacobian ``G(x) M^-1 G(x_old)^T`` is replaced by the
    symmetric ``G(x_old) M^-1 G(x_old)^T`` (the fast projection's tridiagonal matrix at the
    step's start, built once per step); it differs by ``O(|x - x_old| / l)``, so the iteration
    contracts by that factor per step. Stops when ``max_j |C_j| / ebar_j^2 <= tol``; returns
    ``(iterations, final violation)`` and leaves the edges of the final ``x`` in ``edges``.
    Sliders as in :func:`fast_projection`.
    """
    ne = rest_lengths.shape[0]
    _mark_active(inv_mass, x.shape[0], ne, slide_edge, active)
    compute_edges(x_old, closed, edges0)
    _constraint_matrix(edges0, inv_mass, closed, active, slide_axis, slide_w, slide_edge, a_diag, a_lower)
    viol = 0.0
    for it in range(max_iter + 1):
        viol = _violation(x, closed, rest_lengths, active, edges, rhs)
        if viol <= tol or it == max_iter:
            return it, viol
        solve_tridiagonal_masked(a_diag, a_lower, rhs, active, closed, dlam)
        _apply_multipliers(x, inv_mass, edges0, dlam, slide_v, slide_axis, slide_w, slide_edge, slide_side)
    return max_iter, viol


@njit(**JIT)
def velocity_projection(v, inv_mass, closed, active, edges, a_diag, a_lower, rhs, mu, slide_v, slide_axis, slide_w,
                        slide_edge, slide_side):
    """RATTLE's velocity step (Andersen 1983): ``v <- v - M^-1 G^T mu`` with
    ``(G M^-1 G^T) mu = G v``, ``G`` the constraint gradients at the positions whose edge vectors
    are ``edges`` (the step's end), so that ``d/dt C_j = 2 e_j . (v_{j+1} - v_j) = 0`` on every
    active edge: the M-orthogonal projection onto the constraints' tangent space (one linear
    solve). ``active`` as left by :func:`shake_projection`."""
    nv = v.shape[0]
    ne = edges.shape[0]
    _constraint_matrix(edges, inv_mass, closed, active, slide_axis, slide_w, slide_edge, a_diag, a_lower)
    for j in range(ne):
        b = j + 1
        if b == nv:
            b = 0
        c = 2.0 * (edges[j, 0] * (v[b, 0] - v[j, 0]) + edges[j, 1] * (v[b, 1] - v[j, 1])
                   + edges[j, 2] * (v[b, 2] - v[j, 2]))
        rhs[j] = c if active[j] else 0.0
    solve_tridiagonal_masked(a_diag, a_lower, rhs, active, closed, mu)
    _apply_multipliers(v, inv_mass, edges, mu, slide_v, slide_axis, slide_w, slide_edge, slide_side)


__all__ = ["fast_projection", "shake_projection", "velocity_projection"]
