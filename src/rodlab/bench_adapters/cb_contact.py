"""cosseratbench's contact experiments (crossing, capstan, pile) on a rodlab World.

The suite's scenario is mapped onto a :class:`rodlab.world.World` (``WorldBuilder.set_contact``,
``add_obstacle(ob, friction=mu)``) and stepped by ``rodlab.solvers.make_simulator``, so the
method's own contact model does the work: ``der-implicit`` (IPC barrier contact with a CCD line
search and lagged smoothed Coulomb friction; docs/contact-der-implicit.md), ``compact``
(active-set rod-rod, self and obstacle contact, no friction; docs/contact-compact.md) and ``der``
(explicit DER: inelastic impulses with Coulomb friction alternating with fast projection, CCD for
fast vertices; docs/contact-der.md). A scenario the method cannot model (compact: friction, pins
away from a rod's root; der: contact with rigid bodies) is refused with the simulator's own
reason as ``NotImplementedError``: the suite reports the run as unsupported.

What is mapped, and how
-----------------------
* **When**: :func:`needs_contact`: a scenario with obstacles, or with two rods whose initial
  bounding boxes (grown by their radii and ``REACH`` = 5% of their lengths) overlap while their
  surfaces are apart (rods that start through each other, such as coincident copies, cannot be
  stepped by a contact model and stay independent). Other scenarios (cantilever, catenary, pendulum,
  twist) keep each adapter's contact-free path; there a rod's self contact is not modelled (the
  suite's ``max_rod_overlap`` shows it; the twist's buckling is measured before any rod reaches
  itself).
* **Rods**: ``n_elements`` edges, material points evenly spaced along the unstretched rod
  (``rod.nodes``). The suite's rods are straight when stress-free, so the World's rest polyline
  is a straight line of the unstretched edge lengths (``rest_arc_length``) along the clamped end
  edge (else the first), with a constant rest director: rest curvature and twist zero with no
  override (which compact refuses). The state then starts at the suite's (possibly stretched)
  nodes, at rest, with the untwisted frames ``rod.directors`` (parallel transport: reference
  twist zero, material angle zero). A rod clamped at both ends is refused (not needed here).
  ``compact`` and ``der`` (fast projection) are inextensible: a rod given pre-stretched
  (``rest_arc_length``: crossing, capstan, pile) keeps the edge lengths it starts with (its loaded
  length, so it starts in the suite's equilibrium rather than jolting back to its unstretched
  length); it cannot stretch further.
  compact holds a pin or clamp away from a rod's root at the rest position, so a rod supported at
  its end (the crossing's ropes, pinned at both ends) is refused for compact: its straight
  stress-free line cannot pass through both supports, and compact refuses rest-curvature
  overrides.
* **Ends**: pinned -> ``WorldBuilder.pin``; clamped -> ``clamp`` (first/last edge, its vertices
  and frame); a ``Motion`` -> the clamp's ``motion(t) -> (R, d)``, converted from the suite's
  turn about the end node to rodlab's turn about the clamped edge's rest midpoint. Sliding clamps
  are refused (neither method's World path models them). Point loads -> ``add_point_force``.
* **Obstacles**: ``Plane`` -> :class:`rodlab.world.obstacles.Plane`; ``Cylinder`` (finite, flat
  ends) -> the infinite :class:`rodlab.world.obstacles.Cylinder` on its axis: exact while rods
  stay within its length (the capstan's rope hangs in its mid-plane), refused at the start when a
  node lies beyond an end within reach of the surface. Friction of rod ``i`` against obstacle
  ``k`` is ``max(mu_k, mu_rod_i)`` (the suite's "larger of the two"); per obstacle in rodlab, so
  rods with different coefficients above an obstacle's are refused. Rod-rod friction:
  ``max(mu_a, mu_b)`` per pair (``pair_friction``).
* **Contact settings**: rod contact on when the scenario has several rods or ``self_contact``;
  with ``self_contact=False`` the neighbour skip is the whole rod (no self pairs; the scenario
  says a rod cannot reach itself), else the suite's :func:`cosseratbench.scenario.neighbour_elements`
  minus one (rodlab's ``skip`` excludes pairs within ``skip`` edges, the suite measures pairs at
  least ``neighbour_elements`` apart).
* **Start clear of obstacles**: the suite places its capstan rope's 400 points per metre a hair
  outside the cylinder so its chords rest on it; at the benchmark's resolutions the chords between
  interpolated nodes cut into the cylinder (0.48 / 0.12 / 0.03 rope radii at 50 / 100 / 200
  elements). An intersection-free
  method cannot start there, so :func:`clear_obstacles` first moves nodes away from each obstacle
  (radially for a cylinder, along the normal for a plane) until every segment clears it by
  ``START_CLEARANCE`` times the barrier gap ``dhat`` (der-implicit) or the rod radius x 1e-3
  (compact). Held nodes (pins, clamps) are not moved. A moved edge keeps the suite's strain (its
  rest length grows with its chord: the capstan rope gets 0.27% / 0.10% / 0.06% longer at 50 /
  100 / 200 elements, its nodes move at most 0.61 / 0.23 / 0.13 mm), so the rope starts in the suite's equilibrium instead of being stretched by the move.
* **Damping, time step**: viscous ``2 * scenario.slowest_frequency()`` for quasi-static
  scenarios (as the other adapters), none for dynamic ones. Step (implicit methods, so an
  accuracy choice): quasi-static ``0.25 / w`` (``w = scenario.slowest_frequency()``, as
  ``cb_compact``; the result is the equilibrium, which damping and the barrier reach whatever the
  step), dynamic the method's default (der-implicit 1/240 s, compact 0.01 s); times
  ``time_step_scale`` and shortened so frames fall on steps. ``der`` is explicit: its step is its
  stability bound, quasi-static or not (:func:`der_stable_step`: the smallest rod's
  ``suggested_time_step`` on the World, ``0.4 l^2 sqrt(rho A / B)``), times ``time_step_scale``;
  the contact response (impulses, projection) needs no smaller step. The three contact experiments are
  quasi-static and their frame interval is the shorter: crossing 0.08 s, capstan 0.02 s, pile
  0.022 s. A driven clamp (the pile's) moves at most ``CLAMP_TRAVEL (l - 2 r)`` per step
  (:func:`time_step`): rodlab moves it before the solve, outside continuous detection, and a
  longer jump puts its edge into the segment two edges on (pile at 200 elements: 5.6 ms, 4 steps
  per frame; at 50 and 100 elements the frame interval is the shorter).
* **der-implicit options**: ``contact_dhat = DHAT_FRACTION x`` the smallest rod radius (IPC's
  activation gap: rods rest up to this far apart, so a small value keeps the crossing's
  centre-line distance near one diameter), friction mollifier ``friction_eps_v = EPS_V`` (static
  friction creeps at about ``eps_v tan(angle) / (2 mu)``), the rest its defaults.
* **Output**: every frame the rods' nodes and material director m1 per edge
  (``State.material_frames``); a step failure (``SimulationError``) is ``cosseratbench.Diverged``
  with the time.
"""
from __future__ import annotations

import math

import numpy as np

from .cb_common import Capability, Diverged, End, EndCondition, Trajectory, _damping

DER_IMPLICIT_CONTACT = frozenset({Capability.ROD_CONTACT, Capability.ROD_FRICTION, Capability.CYLINDER_CONTACT,
                                  Capability.PLANE_CONTACT})
COMPACT_CONTACT = frozenset({Capability.ROD_CONTACT, Capability.CYLINDER_CONTACT, Capability.PLANE_CONTACT})
DER_CONTACT = DER_IMPLICIT_CONTACT  # explicit DER: impulses with Coulomb friction (docs/contact-der.md)
INEXTENSIBLE = ("compact", "der")  # keep the edge lengths they start with (module docstring, "Rods")
DEFAULT_DT = {"der-implicit": 1.0 / 240.0, "compact": 0.01}
REACH = 0.05  # rods whose boxes, grown by this fraction of their lengths, overlap may touch
CLAMP_TRAVEL = 0.9  # a driven clamp moves at most this fraction of (edge length - diameter) per step
QUASI_STATIC_STEP = 0.25  # dt * slowest angular frequency, quasi-static scenarios (as cb_compact)
DHAT_FRACTION = 0.2  # contact_dhat / smallest rod radius (der-implicit)
EPS_V = 1e-4  # m/s, der-implicit's friction_eps_v
START_CLEARANCE = 0.5  # initial segment-obstacle gap, in units of dhat (der-implicit)


def needs_contact(scenario) -> bool:
    """Whether ``scenario`` is a contact scenario (module docstring, "When")."""
    if scenario.obstacles:
        return True
    from cosseratbench.metrics import segment_distance

    boxes, lines = [], []
    for rod in scenario.rods:
        pts = np.asarray(rod.centerline, dtype=float)
        reach = rod.radius + REACH * rod.length
        boxes.append((pts.min(axis=0) - reach, pts.max(axis=0) + reach))
        lines.append(pts)
    for i in range(len(boxes)):
        for j in range(i + 1, len(boxes)):
            if np.all(boxes[i][0] <= boxes[j][1]) and np.all(boxes[j][0] <= boxes[i][1]):
                a, b = lines[i], lines[j]
                gap = segment_distance(a[:-1, None], a[1:, None], b[None, :-1], b[None, 1:]).min()
                if gap > scenario.rods[i].radius + scenario.rods[j].radius:  # near, not already through each other
                    return True
    return False


def _rest_line(nodes: np.ndarray, lengths: np.ndarray, anchor_end: bool) -> np.ndarray:
    """The stress-free rod: a straight line of edges ``lengths`` from the first node along the
    first edge (or, ``anchor_end``, back from the last node along the last edge)."""
    arc = np.concatenate([[0.0], np.cumsum(lengths)])
    if anchor_end:
        t = nodes[-1] - nodes[-2]
        t /= np.linalg.norm(t)
        return nodes[-1] + (arc - arc[-1])[:, None] * t
    t = nodes[1] - nodes[0]
    t /= np.linalg.norm(t)
    return nodes[0] + arc[:, None] * t


def _clamp_motion(motion, rest: np.ndarray, end):
    """The suite's end motion (turn ``R`` about the end node ``p``, then move by ``d_s``) as
    rodlab's clamp motion ``t -> (R, d)`` about the clamped edge's rest midpoint ``c``:
    ``R (x - c) + c + d = R (x - p) + p + d_s`` gives ``d = d_s + (p - c) - R (p - c)``."""
    node, edge = (rest[0], rest[:2]) if end is End.START else (rest[-1], rest[-2:])
    arm = node - edge.mean(axis=0)

    def rigid(t: float):
        d, R = motion.pose(float(t))
        return R, d + arm - R @ arm

    return rigid


def _segment_axis_distance(a: np.ndarray, b: np.ndarray, point: np.ndarray, axis: np.ndarray) -> np.ndarray:
    """Distance of each segment ``a``-``b`` (K, 3) from the infinite line through ``point`` along
    the unit ``axis``: the distance of the 2D segment (projected across the axis) from the origin."""
    pa = a - point
    pb = b - point
    pa = pa - (pa @ axis)[:, None] * axis
    pb = pb - (pb @ axis)[:, None] * axis
    d = pb - pa
    dd = np.maximum(np.sum(d * d, axis=1), 1e-300)
    s = np.clip(-np.sum(pa * d, axis=1) / dd, 0.0, 1.0)
    return np.linalg.norm(pa + s[:, None] * d, axis=1)


def clear_obstacles(nodes: np.ndarray, radius: float, obstacles, clearance: float, held=(), iterations: int = 200) -> np.ndarray:
    """``nodes`` (n, 3) moved away from each suite obstacle (``Plane``: along its normal;
    ``Cylinder``: radially from its axis) until every segment's gap (surface to surface) is at
    least ``clearance`` [m]; nodes in ``held`` stay. Returns a new array; raises
    ``NotImplementedError`` when a held node is too close or the loop does not settle."""
    from cosseratbench.scenario import Cylinder as CBCylinder

    x = np.array(nodes, dtype=float)
    free = np.ones(len(x), dtype=bool)
    free[list(held)] = False
    for ob in obstacles:
        for _ in range(iterations):
            if isinstance(ob, CBCylinder):
                axis, p0 = ob.unit_axis, np.asarray(ob.center, dtype=float)
                gap = _segment_axis_distance(x[:-1], x[1:], p0, axis) - ob.radius - radius
                short = gap < clearance * (1.0 - 1e-9)
                if not short.any():
                    break
                push = np.zeros(len(x))
                np.maximum.at(push, np.flatnonzero(short), clearance - gap[short])
                np.maximum.at(push, np.flatnonzero(short) + 1, clearance - gap[short])
                rel = x - p0
                radial = rel - (rel @ axis)[:, None] * axis
                rn = np.linalg.norm(radial, axis=1)
                move = (push > 0) & free & (rn > 0)
                x[move] += (push[move] / rn[move] * 1.05)[:, None] * radial[move]
            else:
                n, p0 = ob.unit_normal, np.asarray(ob.point, dtype=float)
                gap = (x - p0) @ n - radius  # a segment's lowest point is an end
                short = gap < clearance * (1.0 - 1e-9)
                if not short.any():
                    break
                x[short & free] += (clearance - gap[short & free])[:, None] * n
            if (short & ~free[:-1] if isinstance(ob, CBCylinder) else short & ~free).any():
                raise NotImplementedError("a held rod end starts inside an obstacle")
        else:
            raise NotImplementedError("could not place the rod clear of an obstacle at the start")
    return x


def _cylinder_ok(crod, nodes: np.ndarray, ob) -> None:
    """The infinite cylinder stands in for the suite's finite one: refuse nodes beyond its ends
    within reach of its surface at the start."""
    rel = nodes - np.asarray(ob.center, dtype=float)
    along = rel @ ob.unit_axis
    radial = np.linalg.norm(rel - along[:, None] * ob.unit_axis, axis=1)
    beyond = (np.abs(along) > 0.5 * ob.length) & (radial < ob.radius + 4.0 * crod.radius)
    if beyond.any():
        raise NotImplementedError("rodlab's cylinders are infinite: a rod starting beyond the end of a finite "
                                  "cylinder, next to its axis, is not modelled")


def build_world(scenario, n_elements: int, method: str, *, dhat: float | None = None):
    """The rodlab World of ``scenario`` at ``n_elements`` edges per rod and each rod's start
    positions (module docstring). Returns ``(world, nodes)``, ``nodes`` a list of (n + 1, 3)."""
    from cosseratbench.scenario import Cylinder as CBCylinder, neighbour_elements, parallel_transport

    from ..world import WorldBuilder
    from ..world.obstacles import Cylinder, Plane

    b = WorldBuilder(gravity=tuple(float(g) for g in scenario.gravity), damping=_damping(scenario))
    nv = n_elements + 1
    nodes_all = []
    rmin = min(rod.radius for rod in scenario.rods)
    clearance = START_CLEARANCE * dhat if dhat is not None else 1e-3 * rmin
    for i, crod in enumerate(scenario.rods):
        for end in End:
            motion = crod.motion(end)
            if motion is not None and motion.slides_along is not None:
                raise NotImplementedError(f"rod {i}: a clamp sliding along an axis is not modelled in contact worlds")
        start_c, end_c = crod.condition(End.START), crod.condition(End.END)
        nodes = crod.nodes(n_elements)
        held = [v for end, v in ((End.START, 0), (End.END, nv - 1)) if crod.condition(end) is not EndCondition.FREE]
        held += [1] if start_c is EndCondition.CLAMPED else []
        held += [nv - 2] if end_c is EndCondition.CLAMPED else []
        for ob in scenario.obstacles:
            if isinstance(ob, CBCylinder):
                _cylinder_ok(crod, nodes, ob)
        lengths = np.diff(np.linspace(0.0, crod.length, nv))
        if method in INEXTENSIBLE:  # the rod keeps the lengths it starts with (module docstring)
            lengths = np.linalg.norm(np.diff(nodes, axis=0), axis=1)
        if scenario.obstacles:
            chord = np.linalg.norm(np.diff(nodes, axis=0), axis=1)
            nodes = clear_obstacles(nodes, crod.radius, scenario.obstacles, clearance, held)
            # moved edges keep the suite's strain: rest length grows with the chord
            lengths = lengths * np.linalg.norm(np.diff(nodes, axis=0), axis=1) / chord
        if method == "compact" and end_c is not EndCondition.FREE:
            raise NotImplementedError(
                f"rodlab-compact: rod {i} is {end_c.value} at its end; compact holds a support away from a "
                "rod's root at its rest position, and the suite's rod is straight when stress-free but "
                "supported on a curve (that needs rest-curvature overrides, which compact refuses)")
        anchor_end = end_c is EndCondition.CLAMPED and start_c is not EndCondition.CLAMPED
        if start_c is EndCondition.CLAMPED and end_c is EndCondition.CLAMPED:
            raise NotImplementedError(f"rod {i}: a rod clamped at both ends is not mapped in contact worlds")
        rest = _rest_line(nodes, lengths, anchor_end)
        d1 = parallel_transport(nodes, np.asarray(crod.normal, dtype=float))
        m = crod.material
        r = b.add_rod(rest, E=m.youngs_modulus, G=m.shear_modulus, rho=m.density, radius=crod.radius,
                      rest_d1=np.repeat(d1[-1:] if anchor_end else d1[:1], n_elements, axis=0))
        for end, edge, vertex in ((End.START, "start", 0), (End.END, "end", nv - 1)):
            cond = crod.condition(end)
            if cond is EndCondition.CLAMPED:
                motion = crod.motion(end)
                b.clamp(r, edge, motion=None if motion is None else _clamp_motion(motion, rest, end))
            elif cond is EndCondition.PINNED:
                b.pin(r, vertex)
        for load in crod.loads:
            b.add_point_force(r, 0 if load.at is End.START else nv - 1, np.asarray(load.force, dtype=float))
        nodes_all.append((nodes, d1))
    mus = [float(rod.friction) for rod in scenario.rods]
    for k, ob in enumerate(scenario.obstacles):
        above = sorted({mu for mu in mus if mu > ob.friction})
        if len(above) > 1 or (above and len(set(mus)) > 1):
            raise NotImplementedError(f"obstacle {k}: rods with different friction coefficients above the "
                                      "obstacle's (rodlab has one coefficient per obstacle)")
        mu = max([float(ob.friction), *mus])
        if isinstance(ob, CBCylinder):
            b.add_obstacle(Cylinder(tuple(ob.center), tuple(ob.unit_axis), float(ob.radius)), friction=mu)
        else:
            b.add_obstacle(Plane(tuple(ob.point), tuple(ob.unit_normal)), friction=mu)
    several = len(scenario.rods) > 1
    if several or scenario.self_contact:
        if scenario.self_contact:
            skip = min(max(neighbour_elements(rod.radius, rod.length / n_elements) - 1, 1) for rod in scenario.rods)
        else:
            skip = n_elements  # no pair of one rod is ever within reach: no self contact
        pairs = tuple((a, c, max(mus[a], mus[c])) for a in range(len(mus)) for c in range(a, len(mus)))
        b.set_contact(rods=True, friction=0.0, pair_friction=pairs, skip=skip)
    return b.build(), nodes_all


def simulator_options(scenario, method: str) -> dict:
    """The keyword options of ``make_simulator`` for ``method`` (module docstring)."""
    if method == "der-implicit":
        rmin = min(rod.radius for rod in scenario.rods)
        return {"contact_dhat": DHAT_FRACTION * rmin, "friction_eps_v": EPS_V}
    return {}


def der_stable_step(scenario, n_elements: int) -> float:
    """Explicit DER's step [s] on the contact World of ``scenario`` at ``n_elements`` edges per
    rod: the smallest rod's :func:`rodlab.der.stepper.suggested_time_step` (its stability bound
    for symplectic Euler; the contact impulses do not change it)."""
    from ..der.stepper import suggested_time_step

    world, _ = build_world(scenario, n_elements, "der")
    return min(suggested_time_step(rod) for rod in world.rods)


def time_step(scenario, method: str, time_step_scale: float = 1.0, n_elements: int | None = None) -> float:
    """The step [s] before it is shortened to fit the frames: quasi-static scenarios
    ``QUASI_STATIC_STEP / scenario.slowest_frequency()``, dynamic ones the method's default,
    times ``time_step_scale``; with ``n_elements``, at most ``CLAMP_TRAVEL (l - 2 r) / v`` for a
    driven clamp of speed ``v`` (edges of length ``l``, radius ``r``): a driven clamp is moved to
    its target before the step's solve, outside continuous detection, and must not jump into the
    segment two edges on (``l - 2 r`` away on a straight rod). ``der`` (explicit, needs
    ``n_elements``): its stability bound :func:`der_stable_step` in place of the base step,
    quasi-static or not."""
    if method == "der":
        if not n_elements:
            raise ValueError("method der's contact step needs n_elements (its stability bound depends on the edges)")
        base = der_stable_step(scenario, n_elements)
    else:
        base = QUASI_STATIC_STEP / scenario.slowest_frequency() if scenario.quasi_static else DEFAULT_DT[method]
    dt = base * time_step_scale
    if n_elements:
        for rod in scenario.rods:
            for end in End:
                motion = rod.motion(end)
                if motion is None:
                    continue
                d, t = np.asarray(motion.displacement, dtype=float), np.asarray(motion.times, dtype=float)
                speed = float(np.max(np.linalg.norm(np.diff(d, axis=0), axis=1) / np.diff(t)))
                room = rod.length / n_elements - 2.0 * rod.radius
                if speed > 0 and room > 0:
                    dt = min(dt, CLAMP_TRAVEL * room / speed)
    return dt


def settings(scenario, method: str, time_step_scale: float, n_frames: int, n_elements: int) -> dict:
    """The numerical choices of a contact run, for the suite's ``settings`` record."""
    frame_dt = scenario.duration / (n_frames - 1)
    per_frame = max(1, math.ceil(frame_dt / time_step(scenario, method, time_step_scale, n_elements) - 1e-9))
    return {"method": method, "path": "rodlab World (make_simulator), contact", "dt": frame_dt / per_frame,
            "damping_rate": _damping(scenario), **simulator_options(scenario, method)}


# compact has Coulomb friction (docs/contact-compact.md), but in the suite's frictional experiments
# its results were measured wrong at 20 elements (2026-11-25): capstan's rope never slips (slide 0 m
# with overhang 1.5, where it should slide off) and penetrates 0.05 radii; pile settles at 0.50
# diameters with 2.1 radii of penetration. Until that is fixed these runs are refused, not scored.
COMPACT_FRICTION_REFUSAL = ("rodlab-compact: frictional contact experiments are refused: measured wrong in this suite "
                            "(capstan never slips, pile penetrates 2 radii); see 'Known limits' in docs/contact-compact.md")


def run_world(method: str, scenario, *, n_elements: int, n_frames: int, time_step_scale: float = 1.0):
    """Run ``scenario`` with rodlab's ``method`` on a World; returns a ``cosseratbench.Trajectory``
    (module docstring). ``NotImplementedError`` for what the method refuses."""
    from ..model import ModelError, SimulationError
    from ..solvers import make_simulator

    if n_elements < 2 or n_frames < 2:
        raise ValueError(f"n_elements and n_frames must be >= 2 (got {n_elements}, {n_frames})")
    opts = simulator_options(scenario, method)
    world, nodes = build_world(scenario, n_elements, method, dhat=opts.get("contact_dhat"))
    if method == "compact" and "friction" in world.features():
        raise NotImplementedError(COMPACT_FRICTION_REFUSAL)
    frame_dt = scenario.duration / (n_frames - 1)
    dt = settings(scenario, method, time_step_scale, n_frames, n_elements)["dt"]
    per_frame = int(round(frame_dt / dt))
    try:
        sim = make_simulator(world, method, dt=dt, **opts)
    except ModelError as exc:  # UnsupportedFeature and its kin: outside the method's model
        raise NotImplementedError(f"rodlab-{method}: {exc}") from None
    state = sim.initial_state()
    for r, (x, d1) in enumerate(nodes):  # the suite's start: its nodes, untwisted (parallel-transported) frames
        state.rod_x(r)[...] = x
        state.rod_ref_d1(r)[...] = d1
    state.vertex_v[...] = 0.0
    state.edge_theta[...] = 0.0
    state.joint_ref_twist[...] = 0.0
    if method == "der-implicit":
        state.solver["edge_theta_v"][...] = 0.0
    else:  # a method keeping its own unknowns converts them from the common fields
        state.method, state.solver = "", {}
    nr = world.n_rods
    xs = [np.empty((n_frames, n_elements + 1, 3)) for _ in range(nr)]
    ds = [np.empty((n_frames, n_elements, 3)) for _ in range(nr)]

    def record(f):
        m1, _ = state.material_frames()
        for r in range(nr):
            xs[r][f] = state.rod_x(r)
            ds[r][f] = m1[world.rod_edges(r)]

    record(0)
    for f in range(1, n_frames):
        try:
            sim.advance(state, per_frame)
        except SimulationError as exc:
            raise Diverged(f"rodlab-{method}: {exc}", time=state.t) from None
        except ModelError as exc:
            raise NotImplementedError(f"rodlab-{method}: {exc}") from None
        record(f)
    return Trajectory(np.linspace(0.0, scenario.duration, n_frames), tuple(xs), tuple(ds))
