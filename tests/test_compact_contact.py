"""Rod-rod and self contact in the compact method (Zhao et al., App. B edge-edge constraints in the
active set, plus continuous detection): rodlab.compact.contact_world through the simulator."""
import numpy as np
import pytest

from rodlab.compact.chain import chain_forward
from rodlab.compact.contact_world import edge_edge_rows
from rodlab.contact import min_gap
from rodlab.solvers import make_simulator
from rodlab.world import WorldBuilder
from rodlab.world.obstacles import Cylinder, Plane

R = 0.01


def _straight(n, start, direction, length=1.0):
    u = np.linspace(-0.5, 0.5, n)[:, None] * length
    return np.asarray(start, float) + u * np.asarray(direction, float)


def _crossing_world(*, floor=True, gravity=-9.81, pin=False, n=11):
    b = WorldBuilder(gravity=(0.0, 0.0, gravity))
    b.add_rod(_straight(n, (0, 0, R + 1e-4 if floor else 0.0), (1, 0, 0)), E=1e7, G=1e7 / 3, rho=1000, radius=R)
    b.add_rod(_straight(n, (0.03, 0, 0.1), (0, 1, 0)), E=1e7, G=1e7 / 3, rho=1000, radius=R)
    if floor:
        b.add_obstacle(Plane((0, 0, 0), (0, 0, 1)))
    if pin:
        b.pin(0, 0)
    b.set_contact(rods=True)
    return b.build()


def test_edge_edge_gradient_matches_finite_differences():
    world = _crossing_world(floor=False, gravity=0.0)
    sim = make_simulator(world, "compact", dt=0.01)
    state = sim.initial_state()
    rng = np.random.default_rng(3)
    s = state.solver["s"].copy()
    s[world.rod_vertex_start[0] + 1:world.rod_vertex_start[1]] += 0.05 * rng.standard_normal((10, 3))  # bend rod 0
    s[world.rod_vertex_start[1] + 1:] += 0.05 * rng.standard_normal((10, 3))
    joint = sim._joint

    def positions(S):
        P = np.empty((world.n_vertices, 3))
        for r, sol in enumerate(joint.solvers):
            sl = joint._sl(r)
            md, ws = sol.model, sol.ws
            chain_forward(np.ascontiguousarray(S[sl]), md.lengths, state.solver["qref"][world.rod_edges(r)], ws.p, ws.q,
                          ws.Dj, ws.Qj, True)
            P[sl] = ws.p
        return P

    pairs = np.array([[3, 14], [5, 15], [6, 13]], dtype=np.int64)  # rod 0's segments against rod 1's
    P = positions(s)
    verts, coef, val = edge_edge_rows(P, joint.geometry, pairs, np.tile([0.0, 0.0, -1.0], (3, 1)))
    direction = rng.standard_normal(s.shape)
    for k in range(len(pairs)):
        positions(s)  # Jacobians at s
        g, touched = joint._row_gradient(verts[k], coef[k])
        assert touched == {0, 1}
        h = 1e-6
        vp = edge_edge_rows(positions(s + h * direction), joint.geometry, pairs[k:k + 1], np.array([[0.0, 0.0, -1.0]]))[2]
        vm = edge_edge_rows(positions(s - h * direction), joint.geometry, pairs[k:k + 1], np.array([[0.0, 0.0, -1.0]]))[2]
        fd = (vp[0] - vm[0]) / (2 * h)
        assert abs(float(np.sum(g * direction)) - fd) <= 1e-6 * max(1.0, abs(fd)), (k, np.sum(g * direction), fd)
        # the value is the gap: centre-line distance minus both radii (sign flips when crossed)
    assert np.all(np.abs(val) < 0.2)


def test_crossing_rods_pressed_together_keep_their_gap():
    world = _crossing_world()
    sim = make_simulator(world, "compact", dt=0.01)
    state = sim.initial_state()
    gap, contacts = np.inf, 0
    for _ in range(40):
        rep = sim.advance(state, 1)
        gap = min(gap, rep.contact_min_gap)
        contacts = max(contacts, rep.contacts_max)
    assert gap >= -0.01 * R
    top, bottom = state.rod_x(1)[5], state.rod_x(0)[5]
    assert top[2] == pytest.approx(bottom[2] + 2 * R, abs=2e-4)  # rod 1 rests on rod 0, rod 0 on the floor
    assert bottom[2] == pytest.approx(R, abs=2e-4)
    assert contacts >= 3
    assert any(row[0] == 0 for row in state.solver["contact_active"])  # an edge-edge row is active


@pytest.mark.parametrize("passes", [0, 4])
def test_rod_thrown_at_another_does_not_pass_through(passes):
    """10 m/s, dt = 0.03 s: 0.3 m per step against a 0.02 m thickness; contact_proximity 0 leaves
    only continuous detection to find the pair (without it the rod passes straight through)."""
    world = _crossing_world(floor=False, gravity=0.0)
    sim = make_simulator(world, "compact", dt=0.03, contact_proximity=0.0, contact_ccd_passes=passes)
    state = sim.initial_state()
    state.rod_v(1)[:, 2] = -10.0
    gap = np.inf
    for _ in range(6):
        gap = min(gap, sim.advance(state, 1).contact_min_gap)
    above = state.rod_x(1)[5, 2] > state.rod_x(0)[5, 2]
    if passes == 0:
        assert not above  # through: the test can fail
    else:
        assert above and gap >= -0.01 * R
        assert np.mean(state.vertex_v[:, 2]) == pytest.approx(-5.0, rel=0.05)  # inelastic: the pair moves together


def test_small_knot_stays_knotted():
    from rodlab.contact import from_arrays
    from rodlab.scenes.knot_scenes import KNOT_PARAMS, knot_world, strands_crossed

    params = {p.name: p.default for p in KNOT_PARAMS}
    world = knot_world(params)
    sim = make_simulator(world, "compact", dt=params["dt"])
    state = sim.initial_state()
    thin = from_arrays(world.rod_vertex_start, world.rod_closed, 0.1 * params["radius"], skip=1)
    frames, gap, contacts = [state.vertex_x.copy()], np.inf, 0
    for _ in range(40):
        rep = sim.advance(state, 1)
        frames.append(state.vertex_x.copy())
        gap = min(gap, rep.contact_min_gap)
        contacts = max(contacts, rep.contacts_max)
    assert strands_crossed(thin, frames) == 0
    assert gap >= -0.01 * params["radius"]
    assert contacts >= 3
    assert np.linalg.norm(state.vertex_x[-1] - state.vertex_x[0]) > 5.0  # pulled: the tails straightened
    assert min_gap(sim._joint.geometry, state.vertex_x) >= -0.01 * params["radius"]


def test_obstacle_steps_report_contacts():
    b = WorldBuilder(gravity=(0.0, 0.0, -9.81))
    b.add_rod(_straight(11, (0, 0, 0.03), (1, 0, 0)), E=1e7, G=1e7 / 3, rho=1000, radius=R)
    b.add_obstacle(Cylinder((0.0, 0.0, 0.0), (0.0, 1.0, 0.0), 0.01))
    sim = make_simulator(b.build(), "compact", dt=0.01)
    state = sim.initial_state()
    rep = sim.advance(state, 10)
    assert rep.contacts_max >= 1 and rep.contacts_sum >= rep.contacts_max
    assert -0.01 * R <= rep.contact_min_gap < 1e-3


def test_friction_and_options_are_refused_clearly():
    b = WorldBuilder()
    b.add_rod(_straight(5, (0, 0, 0), (1, 0, 0)), E=1e7, G=1e7 / 3, rho=1000, radius=R)
    b.set_contact(rods=True, friction=0.3)
    make_simulator(b.build(), "compact")  # friction is supported (tests/test_compact_friction.py)
    with pytest.raises(Exception, match="friction_eps_v"):
        make_simulator(b.build(), "compact", friction_eps_v=0.0)
    with pytest.raises(Exception, match="contact_ccd_passes"):
        make_simulator(_crossing_world(), "compact", contact_ccd_passes=-1)


def _pair_rows(x, x_ref, normal_ref):
    from rodlab.compact.world_line_search import edge_edge_kernel

    e0, e1, rad = np.array([0, 2]), np.array([1, 3]), np.array([0.01, 0.01])
    out = (np.empty((1, 4), dtype=np.int64), np.empty((1, 4, 3)), np.empty(1), np.empty((1, 3)))
    edge_edge_kernel(np.asarray(x, float), np.asarray(x_ref, float), e0, e1, rad, np.array([[0, 1]]),
                     np.asarray(normal_ref, float).reshape(1, 3), *out)
    return out[2][0], out[1][0]


def test_edge_edge_row_counts_a_crossing_only_where_the_centre_lines_met():
    """Segment b above segment a (normal from b to a: -z). Passing through a's centre line makes the
    distance count negative; a turned normal without the lines meeting (b moved past a's end and
    below it, the knot's whipping tail) keeps the positive distance: the old sign rule made such a
    far pair a violated row of -(dist + thickness) that the QP could not satisfy."""
    a = [[-1.0, 0.0, 0.0], [1.0, 0.0, 0.0]]
    x_ref = np.array(a + [[0.0, -1.0, 0.1], [0.0, 1.0, 0.1]])
    n_ref = [0.0, 0.0, -1.0]
    through = np.array(a + [[0.0, -1.0, -0.05], [0.0, 1.0, -0.05]])
    val, coef = _pair_rows(through, x_ref, n_ref)
    assert val == pytest.approx(-0.05 - 0.02)
    assert coef[0] == pytest.approx([0.0, 0.0, -0.5])  # its gradient pushes a back up (toward its side)
    past = np.array(a + [[3.0, -1.0, -0.05], [3.0, 1.0, -0.05]])
    val, coef = _pair_rows(past, x_ref, n_ref)
    dist = np.hypot(2.0, 0.05)
    assert val == pytest.approx(dist - 0.02)
    assert coef[1] == pytest.approx(np.array([-2.0, 0.0, 0.05]) / dist)  # vertex 1 (a's end) away from b
    # without a reference motion (x_ref = x), the same far pair is not a crossing either
    assert _pair_rows(past, past, n_ref)[0] == pytest.approx(dist - 0.02)
    assert _pair_rows(through, through, n_ref)[0] == pytest.approx(0.05 - 0.02)
