"""The batch's Newton loop reuses the accepted line-search trial's assembly (rodlab.der_implicit.stepper
.newton_minimize with reuse=True) and the 4D Gram matrix leaves out exact zeros (energies._add_gn_hessian_rows4d):
both must give the bits of the plain kernels."""
import numpy as np
import pytest

from rodlab.der_implicit.batch import RodBatch
from rodlab.der_implicit.energies import (_C, _E0, _WS_E, _add_gn_hessian_rows, _add_gn_hessian_rows4d, der_elastic,
                                          der_elastic_ws, update_frames)
from rodlab.der_implicit.stepper import DERImplicitStepper, build_rod
from rodlab.world import shapes


def _rod(curv2d):
    # a stiff bent strand released under gravity: full Newton steps mostly, some halved ones
    x = shapes.helix(14, 0.03, 0.05, 0.6)
    return build_rod(x, radius=5e-4, E=1e9, G=4e8, rho=1300.0, damping=1.0, curv2d=curv2d, rest_is_current=False)


@pytest.mark.parametrize("curv2d, newton_iters", [(False, 1), (True, 1), (False, 3)])
def test_batch_with_reused_assemblies_matches_the_plain_stepper_bitwise(curv2d, newton_iters):
    model, state = _rod(curv2d)
    ref = state.copy()
    stepper = DERImplicitStepper(model, newton_iters=newton_iters, line_search=12)
    stats = stepper.advance(ref, 40)
    assert stats.success and stats.line_search_failures == 0
    batch = RodBatch([model], h=stepper.h, newton_iters=newton_iters, gtol=0.0, line_search=12, curv2d=curv2d)
    nv = model.nv
    vx = np.ascontiguousarray(state.q[:4 * nv - 1].reshape(-1)[np.arange(4 * nv - 1) % 4 != 3].reshape(nv, 3))
    vv = np.zeros((nv, 3))
    th = state.q[3::4].copy()
    thv = np.zeros(nv - 1)
    a1 = state.a1.copy()
    mref = state.mref.copy()
    for k in (1, 7, 32):  # calls of several lengths: the reuse never crosses a call
        assert batch.advance(vx, vv, th, thv, a1, mref, k, False) == 0
    np.testing.assert_array_equal(vx, ref.q[np.arange(4 * nv - 1) % 4 != 3].reshape(nv, 3))
    np.testing.assert_array_equal(th, ref.q[3::4])
    np.testing.assert_array_equal(a1, ref.a1)
    assert np.abs(vx - state.q[np.arange(4 * nv - 1) % 4 != 3].reshape(nv, 3)).max() > 1e-4  # it moved


def test_elastic_workspace_energy_is_the_energy_only_sum_and_4d_gram_is_bitwise():
    model, state = _rod(False)
    rng = np.random.default_rng(3)
    q = state.q + 1e-3 * rng.standard_normal(state.q.size)
    ne = model.nv - 1
    tan, elen, a1, mref = np.empty((ne, 3)), np.empty(ne), np.empty((ne, 3)), np.empty(ne - 1)
    update_frames(q, state.tan, state.a1, state.mref, tan, elen, a1, mref)
    n = q.size
    args = (q, tan, elen, a1, mref, model.ks, model.lbar, model.kbend, model.wbar + 0.3, model.ktwist,
            model.mbar + 0.1, model.lvor)
    for curv2d in (False, True):
        e0 = der_elastic(*args, curv2d, 0, np.zeros(n), np.zeros((n, 11)))
        R = np.empty(_WS_E)
        g, band = np.zeros(n), np.zeros((n, 11))
        e2 = der_elastic_ws(*args, curv2d, 2, g, band, np.empty((ne, 3)), np.empty((ne, 3)), R)
        assert R[_E0] == e0 and e2 == pytest.approx(e0, rel=1e-13)
    # compact rows with the structural zeros of the 4D rows: theta_{i-1} column 3 in rows 0, 1, 4,
    # theta_i column 7 in rows 2, 3, 4
    for trial in range(5):
        R = np.zeros(_WS_E)
        R[:40] = rng.standard_normal(40)
        R[8 * 2 + 3] = R[8 * 3 + 3] = 0.0
        R[8 * 0 + 7] = R[8 * 1 + 7] = 0.0
        R[_C:_C + 5] = rng.uniform(0.5, 2.0, 5)
        b1 = rng.standard_normal((15, 11))
        b2 = b1.copy()
        _add_gn_hessian_rows(b1, 2, R.copy())
        _add_gn_hessian_rows4d(b2, 2, R.copy())
        np.testing.assert_array_equal(b1, b2)


def _flat(states):
    """The flat state arrays of a batch of rods (vertex_x, vertex_v, edge_theta, edge_theta_v, edge_ref_d1,
    joint_ref_twist) from their DERImplicitStates."""
    parts = []
    for s in states:
        nv = (s.q.size + 1) // 4
        pos = np.arange(4 * nv - 1) % 4 != 3
        parts.append((s.q[pos].reshape(nv, 3), np.zeros((nv, 3)), s.q[3::4], np.zeros(nv - 1), s.a1, s.mref))
    return [np.ascontiguousarray(np.concatenate([p[k] for p in parts])) for k in range(6)]


def test_per_rod_outputs_of_a_parallel_batch_are_those_of_each_rod_alone():
    """The per-rod counters and failed step (kept in each rod's work array during a call, written to
    the arena once per call) are each rod's own, in parallel as alone; a rod whose geometry fails
    marks itself only."""
    rods = [_rod(False), build_rod(shapes.straight(9, 0.2, direction=(1.0, 0.0, -0.3)), radius=5e-4, E=1e9, G=4e8,
                                  rho=1300.0, damping=1.0), _rod(False)]
    rods[2][1].q[4 * 8 + 2] += 1e-3  # the third rod starts bent differently from the first
    models = [m for m, _ in rods]
    h = 1.0 / 240.0
    batch = RodBatch(models, h=h, newton_iters=2, gtol=0.0, line_search=12)
    arrays = _flat([s for _, s in rods])
    assert batch.advance(*arrays, 6, True) == 0
    for r, (m, s) in enumerate(rods):
        alone = RodBatch([m], h=h, newton_iters=2, gtol=0.0, line_search=12)
        own = _flat([s])
        assert alone.advance(*own, 6, False) == 0
        v0, v1 = batch.starts["vertex"][r], batch.starts["vertex"][r + 1]
        np.testing.assert_array_equal(arrays[0][v0:v1], own[0])
        assert batch.rod_newton_iters[r] == alone.rod_newton_iters[0] == 12.0  # 2 per step, gtol = 0
        assert batch.rod_residual[r] == alone.rod_residual[0] > 0.0
        np.testing.assert_array_equal(batch.rod_stats[r], [12.0, alone.rod_line_search_failures[0], alone.rod_residual[0]])
    np.testing.assert_array_equal(batch.rod_failed_step, [0.0, 0.0, 0.0])
    before = [a.copy() for a in arrays]
    v1 = batch.starts["vertex"][1]
    arrays[0][v1 + 4, 0] = np.nan  # rod 1's geometry is degenerate: its first step fails (an exception inside)
    assert batch.advance(*arrays, 3, True) == 1
    np.testing.assert_array_equal(batch.rod_failed_step, [0.0, 1.0, 0.0])
    np.testing.assert_array_equal(arrays[1], before[1])  # nothing written back


def test_driver_without_slerped_bending_compiles_the_newton_loop_without_it():
    """A batch of 4D rods passes None for the slerped rest curvature (RodBatch.slerp_rest), so numba
    prunes that model's branches out of the driver it compiles (stepper._elastic): the Newton loop the
    serial driver calls is typed with ``wbar2`` None."""
    from numba import types

    from rodlab.der_implicit.stepper import newton_minimize

    m, s = _rod(False)
    batch = RodBatch([m], h=1.0 / 240.0, newton_iters=1, gtol=0.0, line_search=0)
    from rodlab import aot

    aot.refresh()  # numba's own driver below, not the ahead-of-time entry RodBatch seeded (tests/test_aot_di.py)
    assert batch.slerp_rest is None
    assert batch.advance(*_flat([s]), 2, False) == 0
    # The serial driver was typed with ``slerp_rest`` None: this holds whether it was compiled now or
    # loaded from the numba cache (a cached driver does not compile its callees again).
    from rodlab.der_implicit.batch import advance_serial

    slerp_arg = list(advance_serial.py_func.__code__.co_varnames).index("slerp_rest")
    pruned = [sig for sig in advance_serial.signatures if sig[slerp_arg] == types.none]
    assert pruned
    # When that driver was compiled in this process (not loaded from the cache), it compiled the Newton
    # loop with ``wbar2`` None. (Other tests of the process may have compiled the loop with an array for
    # it, through a slerped driver or a Python call: those signatures say nothing about this driver.)
    if any(advance_serial.stats.cache_misses.get(sig, 0) for sig in pruned):
        wbar2_arg = list(newton_minimize.py_func.__code__.co_varnames).index("wbar2")
        assert any(sig[wbar2_arg] == types.none for sig in newton_minimize.signatures)
