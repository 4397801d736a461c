"""DER's per-call cost (issue #13 item 3, docs/der.md "Per-call cost"): the allocation-free and
fused forms of the frame kernels are bitwise the separate passes they replace, the energy check's
closed form for a twist-free rod is the rod's elastic energy, and the call cache of a twist-free
rod without the energy check is used and never stale."""
import math

import numpy as np
import pytest

from rodlab.der import batch as B
from rodlab.der import kernels as K
from rodlab.geometry import curves as C
from rodlab.solvers import make_simulator
from rodlab.world import WorldBuilder, shapes

from der_helpers import SMALL_ROD_MATERIAL as MAT  # noqa: E402

FIELDS = ("vertex_x", "vertex_v", "edge_theta", "edge_ref_d1", "joint_ref_twist")


def _unit_rows(rng, n):
    a = rng.standard_normal((n, 3))
    return a / np.linalg.norm(a, axis=1)[:, None]


def _frames_on(t, rng):
    """Unit reference directors orthogonal to the tangents ``t``."""
    a = np.empty_like(t)
    for j in range(t.shape[0]):
        C.orthonormalize_against(t[j], rng.standard_normal(3), a[j])
    return a


def _wiggled(t, rng, scale):
    s = t + scale * rng.standard_normal(t.shape)
    return s / np.linalg.norm(s, axis=1)[:, None]


def test_time_parallel_update_is_bitwise_the_array_kernels():
    rng = np.random.default_rng(1)
    for scale in (1e-9, 1e-3, 0.3):
        t_old = _unit_rows(rng, 64)
        t_new = _wiggled(t_old, rng, scale)
        a1 = _frames_on(t_old, rng)
        ref = np.empty_like(a1)
        tmp = np.empty(3)
        for j in range(a1.shape[0]):
            C.parallel_transport_into(t_old[j], t_new[j], a1[j], tmp)
            C.orthonormalize_against(t_new[j], tmp, ref[j])
        C.time_parallel_update(t_old, t_new, a1)
        assert np.array_equal(a1, ref)


def test_reference_twist_is_bitwise_the_array_kernels():
    rng = np.random.default_rng(2)
    t = _unit_rows(rng, 40)
    t = _wiggled(np.repeat(t[:1], 40, axis=0), rng, 0.4)  # a rod-like chain, no anti-parallel pair
    a1 = _frames_on(t, rng)
    for closed in (False, True):
        nj = 40 if closed else 39
        previous = 2 * math.pi * rng.integers(-3, 4, nj) + 0.1 * rng.standard_normal(nj)
        ref = np.empty(nj)
        tmp = np.empty(3)
        for k in range(nj):
            f = (k + 1) % 40
            C.parallel_transport_into(t[k], t[f], a1[k], tmp)
            ang = C.signed_angle(tmp, a1[f], t[f])
            two_pi = 2.0 * math.pi
            ref[k] = ang + two_pi * math.floor((previous[k] - ang) / two_pi + 0.5)
        out = np.empty(nj)
        C.reference_twist(t, a1, closed, previous, out)
        assert np.array_equal(out, ref)
        in_place = previous.copy()  # refresh_geometry passes one array as previous and out
        C.reference_twist(t, a1, closed, in_place, in_place)
        assert np.array_equal(in_place, ref)


def _rebuild_by_passes(x, theta, ref_d1, ref_twist, t_start, clamp_edges, clamp_m1):
    """The twist-free frame rebuild written as its separate passes (the rule of
    ``DERStepper._rebuild_twist_free_frames``) with the array kernels."""
    ne = theta.shape[0]
    e = np.empty((ne, 3))
    C.compute_edges(x, False, e)
    lengths, t_now = np.empty(ne), np.empty((ne, 3))
    C.compute_tangents(e, lengths, t_now)
    tmp = np.empty(3)
    if clamp_edges.size:
        seed = clamp_m1[0].copy()
    else:
        d2, m1, m2 = np.empty((1, 3)), np.empty((1, 3)), np.empty((1, 3))
        C.complete_frames(t_start[:1], ref_d1[:1], d2)
        C.material_frames(ref_d1[:1], d2, theta[:1], m1, m2)
        C.parallel_transport_into(t_start[0], t_now[0], m1[0], tmp)
        seed = np.empty(3)
        C.orthonormalize_against(t_now[0], tmp, seed)
    for j in range(ne):
        C.parallel_transport_into(t_start[j], t_now[j], ref_d1[j], tmp)
        C.orthonormalize_against(t_now[j], tmp, ref_d1[j])
    u, v = np.empty((ne, 3)), np.empty((ne, 3))
    C.bishop_frames(t_now, seed, False, u, v)
    C.reference_twist(t_now, ref_d1, False, ref_twist.copy(), ref_twist)
    K.set_material_angles(ref_d1, t_now, u, theta)


@pytest.mark.parametrize("clamped", [True, False], ids=["clamp-seed", "edge0-seed"])
def test_fused_twist_free_rebuild_is_bitwise_the_separate_passes(clamped):
    rng = np.random.default_rng(3)
    n = 30
    x0 = np.cumsum(0.05 * _wiggled(np.tile([1.0, 0.0, 0.0], (n, 1)), rng, 0.3), axis=0)
    ne = n - 1
    t_start = np.empty((ne, 3))
    C.compute_tangents(np.diff(x0, axis=0), np.empty(ne), t_start)
    x = x0 + 0.01 * rng.standard_normal(x0.shape)
    ref_d1 = _frames_on(t_start, rng)
    theta = 0.5 * rng.standard_normal(ne) + 2 * math.pi
    ref_twist = 0.01 * rng.standard_normal(ne - 1) - 2 * math.pi
    clamp_edges = np.array([0] if clamped else [], dtype=np.int64)
    clamp_m1 = _frames_on(t_start[:1], rng) if clamped else np.zeros((0, 3))
    expect = [a.copy() for a in (theta, ref_d1, ref_twist)]
    _rebuild_by_passes(x, *expect, t_start, clamp_edges, clamp_m1)
    got = [a.copy() for a in (theta, ref_d1, ref_twist)]
    scratch = [np.empty((ne, 3)) for _ in range(7)]
    B.rebuild_twist_free_frames(x, False, got[0], got[1], got[2], t_start, clamp_edges, clamp_m1, scratch[0],
                                np.empty(ne), *scratch[1:6], np.empty(ne))
    for a, b in zip(got, expect):
        assert np.array_equal(a, b)


def cantilever(n=16, **load):
    b = WorldBuilder(gravity=(0.0, 0.0, -9.81), damping=0.5)
    b.add_rod(shapes.straight(n, 0.4), **MAT)
    b.clamp(0, "start")
    for vertex, force in load.get("forces", ()):
        b.add_point_force(0, vertex, force)
    return b.build()


def test_twist_free_check_energy_is_the_elastic_energy():
    """The energy check of a twist-free rod sums ``(b_e + b_f) |kb|^2 / (2 lbar)`` (the energy
    its step's forces are the gradient of): the simulator's elastic energy (material frames and
    curvatures) to round-off, on a bent, swinging rod."""
    w = cantilever(forces=[(-1, (0.0, 2e-3, 0.0))])
    sim = make_simulator(w, "der")
    assert sim.model.rod_flag[0, B.FLAG_TWIST_FREE] == 1
    state = sim.initial_state()
    sim.advance(state, 400)
    elastic = sim.elastic_energy(state)
    assert elastic > 1e-6
    sim.advance(state, 1)  # the cache now holds the end energies of this call
    assert sim.work.rod_cache[0, 0] == B.CACHE_VALID
    total, kinetic, cached_elastic = sim.work.rod_cache[0, 1:]
    assert cached_elastic == pytest.approx(sim.elastic_energy(state), rel=1e-12, abs=1e-18)
    e = sim.energies(state)
    force = np.zeros_like(state.vertex_x)
    force[-1] = (0.0, 2e-3, 0.0)
    assert kinetic == pytest.approx(e["kinetic"], rel=1e-12)
    assert total == pytest.approx(e["total"] - float(np.sum(force * state.vertex_x)), rel=1e-12)


def _calls(sim, state, n):
    """``n`` calls of one step, the state read after each (its deferred frames written)."""
    for _ in range(n):
        sim.advance(state, 1)
        state.resolve()


@pytest.mark.parametrize("world, options", [(cantilever, {"energy_check": False}),
                                            (lambda: cantilever(forces=[(-1, lambda t: (0.0, 1e-3 * t, 0.0))]), {})],
                         ids=["no-energy-check", "time-dependent-force"])
def test_twist_free_cache_without_the_energy_check(world, options):
    """A twist-free rod keeps its call cache without the energy check too (the step and the
    rebuild leave its end geometry): K calls give a new simulator's K calls bitwise, an edit
    between calls is honoured, and a corrupted cache with the state unchanged changes the step."""
    w = world()
    sim = make_simulator(w, "der", **options)
    state = sim.initial_state()
    sim.advance(state, 3)
    start = state.copy()
    _calls(sim, state, 6)
    assert sim.work.rod_cache[0, 0] == B.CACHE_VALID
    fresh = start.copy()
    for _ in range(6):  # a new simulator per call: every call misses
        _calls(make_simulator(w, "der", **options), fresh, 1)
    for name in FIELDS:
        assert np.array_equal(getattr(state, name), getattr(fresh, name)), name
    state.vertex_x[-1] += (0.0, 1e-3, -1e-3)  # an edit: the next call recomputes
    edited = state.copy()
    _calls(sim, state, 2)
    _calls(make_simulator(w, "der", **options), edited, 2)
    for name in FIELDS:
        assert np.array_equal(getattr(state, name), getattr(edited, name)), name
    again = state.copy()
    sim.work.serial_kb[:] *= 1.5  # a stale cache in disguise: the state is unchanged
    _calls(sim, state, 1)
    _calls(make_simulator(w, "der", **options), again, 1)
    assert not np.array_equal(state.vertex_x, again.vertex_x)


def test_unread_calls_of_a_twist_free_rod_equal_one_long_call_bitwise():
    """Deferred frames (docs/der.md, "Deferred frames"): calls that nobody reads in between leave
    the frames unwritten and rebuild them once, from the first call's start tangents: K unread
    calls of one step give one call of K steps bit for bit, frames included; read after each
    call, they give a new simulator's calls (the eager per-call rebuild) bit for bit."""
    w = cantilever(forces=[(-1, (0.0, 2e-3, 0.0))])
    sim = make_simulator(w, "der")
    start = sim.initial_state()
    sim.advance(start, 5)
    unread, long_call, read, fresh = (start.copy() for _ in range(4))
    for _ in range(12):
        sim.advance(unread, 1)
    sim.advance(long_call, 12)
    _calls(sim, read, 12)
    for _ in range(12):
        _calls(make_simulator(w, "der"), fresh, 1)
    assert np.abs(unread.vertex_x - start.vertex_x).max() > 1e-6
    for name in FIELDS:
        assert np.array_equal(getattr(unread, name), getattr(long_call, name)), name
        assert np.array_equal(getattr(read, name), getattr(fresh, name)), name


@pytest.mark.parametrize("edit", ["vertex_x", "vertex_v", "edge_theta"])
def test_in_place_edits_of_a_deferred_state_are_honoured(edit):
    """An in-place edit between calls whose frames are left unwritten: positions and velocities
    (not a deferred field: the frames stay pending, and the next call writes the frames the last
    call left before starting from the edited state) and a material angle (its read writes the
    frames first). Each gives the result of a new simulator started from the edited state."""
    w = cantilever(forces=[(-1, (0.0, 2e-3, 0.0))])
    sim, other = make_simulator(w, "der"), make_simulator(w, "der")
    state = sim.initial_state()
    sim.advance(state, 3)
    reference = state.copy()
    for _ in range(4):  # unread: the frames stay pending
        sim.advance(state, 1)
    other.advance(reference, 4)  # bitwise the same four steps (test above)
    assert state.deferred_by(sim) is not None
    for s in (state, reference):  # the same edit in both, in place
        getattr(s, edit)[4] += 1e-4 if edit != "edge_theta" else 0.2
    assert (state.deferred_by(sim) is None) == (edit == "edge_theta")
    _calls(sim, state, 3)
    _calls(make_simulator(w, "der"), reference, 3)
    for name in FIELDS:
        assert np.array_equal(getattr(state, name), getattr(reference, name)), name


def test_deferred_frames_follow_the_simulator_across_states():
    """Two states stepped alternately by one simulator: each call on one state writes the other's
    pending frames first (they are computed from the simulator's scratch); both end as if each
    had its own simulator and were read after every call."""
    w = cantilever()
    sim = make_simulator(w, "der")
    a = sim.initial_state()
    sim.advance(a, 2)
    b = a.copy()
    b.vertex_v[-1, 1] += 1e-3
    ref_a, ref_b = a.copy(), b.copy()
    for _ in range(5):
        sim.advance(a, 1)
        sim.advance(b, 1)
    sim_a, sim_b = make_simulator(w, "der"), make_simulator(w, "der")
    for _ in range(5):  # read after each call, as the alternation reads each state
        _calls(sim_a, ref_a, 1)
        _calls(sim_b, ref_b, 1)
    assert a.deferred_by(sim) is None and b.deferred_by(sim) is not None
    for name in FIELDS:
        assert np.array_equal(getattr(a, name), getattr(ref_a, name)), name
        assert np.array_equal(getattr(b, name), getattr(ref_b, name)), name
