"""Sampled clamp motions (rodlab.motions) and DER's time rule for driven worlds (docs/world.md,
"Clamp motions"): ``motion.sample(times)`` equals ``motion(t)`` time by time bitwise, the DER
driver gives the same trajectory with and without samplers, and cutting a driven run into calls
does not change it (with and without contact)."""
import math
import pickle

import numpy as np
import pytest

from rodlab.model import ModelError, twist_about_axis
from rodlab.motions import (AxisRotation, Composed, FixedPose, RampedRate, SmoothMoves, Translation,
                            sample_motion)
from rodlab.solvers import make_simulator
from rodlab.world import WorldBuilder, shapes
from rodlab.world.moves import fixed_pose

MAT = dict(E=1e7, G=1e7 / 3, rho=1000.0, radius=0.005)
TIMES = np.concatenate([np.linspace(-0.5, 12.0, 997), [0.0, 0.2, 1.0, 3.0, 1e-300]])


def _motions():
    offset = SmoothMoves(((0.3, 0.0, 2.0), (-0.1, 2.0, 1.5)))
    return {
        "twist": twist_about_axis((0.2, -0.5, 1.0), 3.0, ramp=0.7, total=9.0),
        "twist_negative_total": twist_about_axis((1.0, 0.0, 0.0), -2.0, ramp=0.0, total=-4.0),
        "fixed": fixed_pose(twist_about_axis((0.0, 1.0, 0.0), 1.0)(0.4)[0], (0.01, 0.0, -0.02)),
        "translation": Translation((0.0, 1.0, 1.0), RampedRate(0.05, start=0.2)),
        "smooth": Translation((1.0, 0.0, 0.0), offset),
        "composed": Composed(AxisRotation((1.0, 0.0, 0.0), RampedRate(0.8, ramp=1.0, start=4.0)),
                             Translation((1.0, 0.0, 0.0), offset)),
    }


@pytest.mark.parametrize("name", sorted(_motions()))
def test_sample_equals_calls_bitwise(name):
    motion = _motions()[name]
    R, d = motion.sample(TIMES)
    assert R.shape == (TIMES.size, 3, 3) and d.shape == (TIMES.size, 3)
    for k, t in enumerate(TIMES):
        Rt, dt = motion(float(t))
        assert np.array_equal(R[k], Rt) and np.array_equal(d[k], dt), (name, t)
    # proper rotations
    assert np.abs(np.matmul(R, R.transpose(0, 2, 1)) - np.eye(3)).max() < 1e-14
    assert np.all(np.linalg.det(R) > 0)
    # picklable, same numbers after
    R2, d2 = pickle.loads(pickle.dumps(motion)).sample(TIMES)
    assert np.array_equal(R, R2) and np.array_equal(d, d2)


def test_profiles_and_compositions_match_closed_forms():
    t = np.linspace(0.0, 6.0, 601)
    # twist_about_axis: rate t^2 / (2 ramp), then rate (t - ramp / 2), stopped at total
    ramped = RampedRate(3.0, ramp=0.7, total=9.0)(t)
    expect = np.minimum(np.where(t < 0.7, 3.0 * t * t / 1.4, 3.0 * (t - 0.35)), 9.0)
    assert np.allclose(ramped, expect, rtol=0, atol=1e-14)
    assert np.array_equal(RampedRate(2.0, start=1.0)(t), np.maximum(t - 1.0, 0.0) * 2.0)
    smooth = SmoothMoves(((0.3, 1.0, 2.0),))(t)
    u = np.clip((t - 1.0) / 2.0, 0, 1)
    assert np.allclose(smooth, 0.3 * (3 * u * u - 2 * u**3), atol=1e-15)
    # Composed: R = R2 R1, d = R2 d1 + d2
    a = AxisRotation((0.0, 0.0, 1.0), RampedRate(1.0))
    b = Composed(Translation((0.0, 1.0, 0.0), RampedRate(1.0)), a)
    R, d = b.sample(t)
    Ra, _ = a.sample(t)
    assert np.array_equal(R, Ra)
    assert np.allclose(d, np.stack([-np.sin(t) * t, np.cos(t) * t, 0 * t], axis=1), atol=1e-14)
    # angle about the axis: R e_x = (cos a, sin a, 0)
    assert np.allclose(Ra[:, :, 0], np.stack([np.cos(t), np.sin(t), 0 * t], axis=1), atol=1e-15)


def test_bad_motions_are_refused_naming_the_parameter():
    with pytest.raises(ModelError, match="axis"):
        AxisRotation((0.0, 0.0, 0.0), RampedRate(1.0))
    with pytest.raises(ModelError, match="ramp"):
        RampedRate(1.0, ramp=-1.0)
    with pytest.raises(ModelError, match="rate"):
        RampedRate(math.nan)
    with pytest.raises(ModelError, match="moves"):
        SmoothMoves(((1.0, 0.0, 0.0),))
    with pytest.raises(ModelError, match="rotation"):
        FixedPose(np.diag([1.0, 1.0, -1.0]))
    with pytest.raises(ModelError, match="second"):
        Composed(FixedPose(), lambda t: (np.eye(3), np.zeros(3)))
    with pytest.raises(ModelError, match="times"):
        FixedPose().sample(np.zeros((2, 2)))
    with pytest.raises(ModelError, match="clamp motion of rod 3 must return a rotation"):
        sample_motion(lambda t: (np.eye(2), np.zeros(3)), np.zeros(2), "clamp motion of rod 3")


# ---- the DER driver ---------------------------------------------------------------------------
def _driven_world(motion, *, force=None, contact=False):
    b = WorldBuilder(gravity=(0.0, 0.0, -9.81), damping=0.5)
    b.add_rod(shapes.straight(14, 0.4), **MAT)
    b.clamp(0, "start", motion=motion)
    if force is not None:
        b.add_point_force(0, 7, force)
    if contact:
        from rodlab.world.obstacles import Plane

        b.add_obstacle(Plane((0.0, 0.0, -0.006), (0.0, 0.0, 1.0)), friction=0.3)  # 1 mm below the rod
    return b.build()


def _swing():
    return Composed(AxisRotation((1.0, 0.0, 0.0), RampedRate(3.0, ramp=0.02)),
                    Translation((0.0, 0.0, 1.0), SmoothMoves(((-0.05, 0.0, 0.05),))))


def _digest(state):
    return [a.copy() for a in (state.vertex_x, state.vertex_v, state.edge_theta, state.edge_ref_d1,
                               state.joint_ref_twist)] + [state.t]


def _same(a, b):
    return all(np.array_equal(x, y) for x, y in zip(a[:-1], b[:-1])) and a[-1] == b[-1]


def _run(world, pattern, dt=2e-4):
    sim = make_simulator(world, "der", dt=dt)
    s = sim.initial_state()
    for k in pattern:
        sim.advance(s, k)
    return _digest(s)


def test_sampled_and_per_step_motions_give_the_same_trajectory():
    m = _swing()
    plain = lambda t: m(t)  # noqa: E731  (no sampler: the per-step path)
    for pattern in ((40,), (1, 2, 3, 5, 8, 21)):
        assert _same(_run(_driven_world(m), pattern), _run(_driven_world(plain), pattern))


@pytest.mark.parametrize("contact", [False, True])
def test_driven_der_world_is_call_boundary_transparent(contact):
    force = lambda t: np.array([0.0, 0.01 * math.sin(30 * t), 0.0])  # noqa: E731
    world = _driven_world(_swing(), force=force, contact=contact)
    one = _run(world, (64,))
    assert _same(one, _run(world, (32, 32)))
    # one-step calls: t accumulated by += dt drifts from k dt in the last bits (the old rule failed here)
    assert _same(one, _run(world, (1,) * 64))
    assert _same(one, _run(world, (1, 7, 24, 3, 29)))
    if contact:  # the plane is reached: the contact response acts
        sim = make_simulator(world, "der", dt=2e-4)
        s = sim.initial_state()
        assert sim.advance(s, 64).contacts_max > 0


def test_der_clock_restarts_where_the_user_sets_the_time():
    world = _driven_world(_swing())
    sim = make_simulator(world, "der", dt=2e-4)
    s = sim.initial_state()
    sim.advance(s, 10)
    assert s.t == 10 * 2e-4 and np.array_equal(s.solver["der_clock"], [0.0, 10.0])
    s.t = 0.0123  # a new origin: step k after it is at 0.0123 + k dt
    sim.advance(s, 3)
    assert s.t == 0.0123 + 2e-4 * 3 and np.array_equal(s.solver["der_clock"], [0.0123, 3.0])
    # the clamp's vertices are where the motion puts them at the state's time
    rest = world.rods[0].rest_positions[:2]
    R, d = world.rods[0].boundary.clamps[0].motion(s.t)
    c = rest.mean(axis=0)
    assert np.allclose(s.vertex_x[:2], (rest - c) @ R.T + c + d, atol=1e-12)


def test_kept_block_of_sampled_inputs_follows_states_and_edits():
    """Sampled clamps are sampled CLAMP_BLOCK steps ahead and kept: two states at different times
    on one simulator, and a user edit of a still clamp's vertex, give bitwise what the per-step
    path (a plain callable, sampled per call) gives."""
    def world(motion):
        b = WorldBuilder(gravity=(0.0, 0.0, -9.81), damping=0.5)
        b.add_rod(shapes.straight(12, 0.3), **MAT)
        b.clamp(0, "start", motion=motion)
        b.clamp(0, "end")  # prescribed rows read from the state at every call
        return b.build()

    def run(motion):
        sim = make_simulator(world(motion), "der", dt=2e-4)
        a = sim.initial_state()
        sim.advance(a, 5)
        b = a.copy()
        b.t = 0.5  # another clock on the same simulator
        out = []
        for k in (1, 3, 2, 70, 1):
            sim.advance(a, k)
            sim.advance(b, k)
            out += [_digest(a), _digest(b)]
        sim.advance(a, 1)  # a's block is kept now
        a.vertex_x[-1, 2] += 1e-7  # the still clamp moved by hand
        sim.advance(a, 2)
        return out + [_digest(a)]

    m = twist_about_axis((1.0, 0.0, 0.0), 3.0, ramp=0.02)  # about the rod: both ends stay put
    for p, q in zip(run(m), run(lambda t: m(t))):
        assert _same(p, q)
