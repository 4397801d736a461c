"""DER's call cache (issue #13 item 3, docs/der.md "Per-call cost"): the serial driver carries the
end geometry and energy of a call to the next one, used only where the state is bitwise the
call's end. K calls of one step equal one call of K steps bit for bit, edits of the state between
calls are honoured, a failed call drops the cache, and the cache is really used."""
import pickle

import numpy as np
import pytest

from rodlab.der import batch as B
from rodlab.model import SimulationError
from rodlab.solvers import make_simulator
from rodlab.world import WorldBuilder, shapes

from der_helpers import SMALL_ROD_MATERIAL as MAT, rods_side_by_side  # noqa: E402
FIELDS = ("vertex_x", "vertex_v", "edge_theta", "edge_ref_d1", "joint_ref_twist")


def clamped_straight(n=12):
    """Twist-free path (frames rebuilt once per call)."""
    b = WorldBuilder(gravity=(0.0, 0.0, -9.81), damping=0.5)
    b.add_rod(shapes.straight(n, 0.4), **MAT)
    b.clamp(0, "start")
    return b.build()


def clamped_helix():
    """General path (frames, reference twist and Newton twist every step)."""
    b = WorldBuilder(gravity=(0.0, 0.0, -9.81), damping=0.3)
    b.add_rod(shapes.helix(16, 0.05, 0.04, 1.0), **MAT)
    b.clamp(0, "start")
    return b.build()


def two_rods():
    return rods_side_by_side((7, 9), 0.3)


def _equal(a, b, fields=FIELDS, same_t=True):
    for name in fields:
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    # K calls add dt K times, one call adds K dt once
    assert a.t == b.t if same_t else a.t == pytest.approx(b.t, rel=1e-14)


def _started(world, **options):
    sim = make_simulator(world, "der", **options)
    state = sim.initial_state()
    sim.advance(state, 3)
    return sim, state


@pytest.mark.parametrize("world, options", [(clamped_helix, {}), (clamped_helix, {"projection": "symplectic"}),
                                            (clamped_helix, {"energy_check": False})],
                         ids=["general", "symplectic", "no-energy-check"])
def test_k_single_calls_equal_one_k_step_call_bitwise(world, options):
    sim, start = _started(world(), **options)
    a, b = start.copy(), start.copy()
    for _ in range(25):
        sim.advance(a, 1)
    sim.advance(b, 25)
    assert np.abs(a.vertex_x - start.vertex_x).max() > 1e-6  # it moved
    _equal(a, b, same_t=False)


@pytest.mark.parametrize("world", [clamped_straight, two_rods], ids=["one-rod", "two-rods"])
def test_k_single_calls_of_a_twist_free_rod_equal_one_k_step_call(world):
    """The twist-free path carries the reference directors in time once per call, from the
    call's first tangents to its last (docs/der.md): positions, velocities, material angles
    and reference twist are bitwise those of one long call; the reference directors (time
    parallel transport depends on the path) agree to round-off."""
    sim, start = _started(world())
    a, b = start.copy(), start.copy()
    for _ in range(25):
        sim.advance(a, 1)
    sim.advance(b, 25)
    assert np.abs(a.vertex_x - start.vertex_x).max() > 1e-6
    _equal(a, b, ("vertex_x", "vertex_v", "edge_theta", "joint_ref_twist"), same_t=False)
    assert np.abs(a.edge_ref_d1 - b.edge_ref_d1).max() < 1e-14


def _fresh_step(world, state, nsteps, **options):
    """``nsteps`` calls of one step on a new simulator (no cache at its first call)."""
    sim = make_simulator(world, "der", **options)
    for _ in range(nsteps):
        sim.advance(state, 1)
    return sim


@pytest.mark.parametrize("world", [clamped_straight, clamped_helix], ids=["twist-free", "general"])
def test_edits_between_calls_are_honoured(world):
    """An edit of the state's positions (or velocities, which enter only the energy check)
    between two calls makes the next call recompute what the cache holds: the result is bitwise
    that of a new simulator. A stale cache would step from the old geometry."""
    w = world()
    sim, state = _started(w)
    sim.advance(state, 1)
    assert sim.work.rod_cache[0, 0] == B.CACHE_VALID
    state.vertex_x[-1] += (0.0, 1e-3, -2e-3)  # a different shape: different curvature, forces
    state.vertex_v[-1, 2] += 0.05
    ref = state.copy()
    sim.advance(state, 1)
    sim.advance(state, 1)
    fresh = _fresh_step(w, ref, 2)
    _equal(state, ref)
    assert np.array_equal(sim.work.rod_energy, fresh.work.rod_energy)


def test_edit_of_one_bit_is_honoured():
    """The cache key is the bits: ``-0.0`` for ``0.0`` in a position misses too."""
    w = clamped_straight()
    sim, state = _started(w)
    sim.advance(state, 1)
    k = int(np.flatnonzero(state.vertex_x[:, 1] == 0.0)[0])
    state.vertex_x[k, 1] = -0.0
    ref = state.copy()
    sim.advance(state, 1)
    fresh = _fresh_step(w, ref, 1)
    _equal(state, ref)
    assert np.array_equal(sim.work.rod_energy, fresh.work.rod_energy)


def test_the_cache_is_used_when_the_state_is_unchanged():
    """With the state untouched since the last call the next call takes the geometry from the
    cache: the same step as a new simulator's, and a corrupted cached curvature binormal changes
    it (so the tests above exercise the cache, not only the recomputation)."""
    w = clamped_straight()
    sim, state = _started(w)
    sim.advance(state, 1)
    assert sim.work.rod_cache[0, 0] == B.CACHE_VALID
    ref = state.copy()
    _fresh_step(w, ref, 1)
    corrupt = state.copy()
    sim.advance(state, 1)
    _equal(state, ref)
    sim2, _ = _started(w)
    sim2.advance(corrupt, 0)
    sim2.work.serial_kb[:] = 0.0  # no effect: the cache belongs to another state
    sim2.advance(corrupt, 1)
    _equal(corrupt, ref)
    sim.work.serial_kb[:] *= 1.5  # a stale cache in disguise: the state is unchanged
    again = state.copy()
    sim.advance(state, 1)
    _fresh_step(w, again, 1)
    assert not np.array_equal(state.vertex_x, again.vertex_x)


def test_a_failed_call_drops_the_cache():
    """Rod 1 fails in a serial call after rod 0 stepped: every rod is restored to the call's start
    and no rod keeps a cache of the end it did not keep; the next call is a new simulator's."""
    w = two_rods()
    sim, state = _started(w)
    sim.advance(state, 1)
    assert np.all(sim.work.rod_cache[:, 0] == B.CACHE_VALID)
    before = state.copy()
    k = int(state.rod_vertex_start[2]) - 1  # rod 1's last vertex
    v_k = state.vertex_v[k].copy()
    state.vertex_v[k] = np.nan
    with pytest.raises(SimulationError, match="rod 1"):
        sim.advance(state, 1)
    assert np.all(sim.work.rod_cache[:, 0] == B.CACHE_NONE)
    assert np.array_equal(state.vertex_x, before.vertex_x)  # rod 0 is back too
    state.vertex_v[k] = v_k
    _equal(state, before)
    ref = state.copy()
    sim.advance(state, 1)
    _fresh_step(w, ref, 1)
    _equal(state, ref)


def test_two_states_on_one_simulator():
    """Alternating two states on one simulator (each call misses the other's cache) gives each
    state the trajectory it has alone."""
    w = clamped_helix()
    sim, a = _started(w)
    b = a.copy()
    b.vertex_v[-1, 1] += 0.01
    a_alone, b_alone = a.copy(), b.copy()
    for _ in range(5):
        sim.advance(a, 1)
        sim.advance(b, 1)
    _fresh_step(w, a_alone, 5)
    _fresh_step(w, b_alone, 5)
    _equal(a, a_alone)
    _equal(b, b_alone)


def test_edits_through_views_held_from_before_are_honoured():
    """Views of the state taken before the calls (a rod's positions, a slice of velocities), edited
    in place while the twist-free frames are left unwritten: the next calls give what a second
    simulator gives from the same edit (the cache key compares the state's bits)."""
    w = clamped_straight()
    sim, state = _started(w)
    other = make_simulator(w, "der")
    reference = state.copy()
    held = [(state.rod_x(0), state.vertex_v[3:5]), (reference.rod_x(0), reference.vertex_v[3:5])]
    for _ in range(3):
        sim.advance(state, 1)
        other.advance(reference, 1)
    assert state.deferred_by(sim) is not None
    for x, v in held:
        x[-1, 1] += 1e-4
        v[0, 2] -= 1e-3
    for _ in range(2):
        sim.advance(state, 1)
        other.advance(reference, 1)
    _equal(state, reference)


def test_unpickled_simulator_steps_bitwise_the_same():
    """A pickled and unpickled simulator (``DERSimulator.__setstate__`` seeds its entries again)
    steps a copy of the state bitwise as the original steps the state."""
    w = clamped_straight()
    sim, state = _started(w)
    copy = pickle.loads(pickle.dumps(sim))
    twin = state.copy()
    for _ in range(3):
        sim.advance(state, 1)
        copy.advance(twin, 1)
    _equal(state, twin)
