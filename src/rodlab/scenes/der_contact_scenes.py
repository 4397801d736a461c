"""Contact scenes of explicit DER (issue "Contact and friction"): ``hanging-chain`` and
``plectonemes-hanging``, after Bergou, Wardetzky, Robinson, Audoly, Grinspun, "Discrete Elastic
Rods" (ACM TOG 2008), Figs. 10 and 9. Contact and friction: :mod:`rodlab.der.contact`
(docs/contact-der.md). Every scene reports ``min_gap``, ``mean_contacts``, ``max_contacts``,
``ms_per_step`` and ``n_vertices``; the run folder's tube picture draws the world (radii,
obstacles).
"""
from __future__ import annotations

import math

import numpy as np

from ..experiment import record
from ..model import require, twist_about_axis
from ..solvers import make_simulator
from ..world import WorldBuilder
from .registry import Param, SceneResult, register
from .zhao_contact_scenes import polygon_writhe

GRAVITY = 9.81


def _projection_param():
    return Param("projection", "fast", "explicit DER inextensibility: fast (Goldenthal fast projection) or symplectic "
                 "(RATTLE, no projection damping)", choices=("fast", "symplectic"))


def _contact_metrics(world, sim, run) -> dict:
    return {"method": "der", "n_vertices": world.n_vertices, "dt": sim.dt, **run.contact_summary(),
            "ms_per_step": 1e3 * run.wall_s / max(run.steps, 1), "steps": run.steps}


# ---- hanging chain (Bergou et al. 2008, Fig. 10) ----------------------------------------------------
def chain_world(links: int, n: int, *, link_radius: float = 0.02, radius: float = 0.002, spacing: float = 1.2,
                E: float = 1e7, rho: float = 1000.0, damping: float = 0.5, friction: float = 0.2,
                pull_speed: float = 0.05, t_hold: float = 0.2):
    """A chain of ``links`` closed rods of ``n`` vertices each: circles of ``link_radius`` [m]
    (naturally curved: their rest shape is the circle), centres ``spacing * link_radius`` apart
    along x, alternately in the x-z and the x-y plane (so consecutive links interlock with a
    clearance of ``(1 - |1 - spacing|) link_radius`` minus the thickness), rod ``radius`` [m],
    ``E`` [Pa] (G = E / 3), ``rho`` [kg/m^3], gravity -z, viscous ``damping`` [1/s], rod-rod Coulomb
    ``friction``. The outermost edge of each end link is clamped; after ``t_hold`` [s] both
    clamps move apart along x at ``pull_speed`` [m/s] each."""
    require(isinstance(links, (int, np.integer)) and links >= 2, f"links must be an integer >= 2 (got {links!r})")
    require(isinstance(n, (int, np.integer)) and n >= 8, f"n (vertices per link) must be an integer >= 8 (got {n!r})")
    require(0.2 < spacing < 1.8, f"spacing must be in (0.2, 1.8) link radii (got {spacing})")
    b = WorldBuilder(gravity=(0.0, 0.0, -GRAVITY), damping=damping)
    phi = 2.0 * math.pi * np.arange(n) / n
    d = spacing * link_radius
    for k in range(links):
        c = np.array([k * d, 0.0, 0.0])
        ring = np.stack([np.cos(phi), np.zeros(n), np.sin(phi)], axis=1) if k % 2 == 0 else \
            np.stack([np.cos(phi), np.sin(phi), np.zeros(n)], axis=1)
        b.add_rod(c + link_radius * ring, E=E, G=E / 3.0, rho=rho, radius=radius, closed=True)

    def pull(sign):
        def motion(t):
            s = max(0.0, t - t_hold) * pull_speed
            return np.eye(3), np.array([sign * s, 0.0, 0.0])
        return motion

    # the outermost edges: link 0 around phi = pi (vertex n/2), the last link around phi = 0
    half = n // 2
    b.clamp(0, half - 1, motion=pull(-1.0))
    b.clamp(links - 1, n - 1, motion=pull(1.0))
    b.set_contact(rods=True, friction=friction)
    return b.build()


def link_stretch(world, state) -> np.ndarray:
    """Per link: its extent along x over its rest diameter, minus 1 (0 at rest; > 0 pulled long)."""
    out = np.empty(world.n_rods)
    for r in range(world.n_rods):
        x = state.rod_x(r)[:, 0]
        rest = world.rods[r].rest_positions[:, 0]
        out[r] = (x.max() - x.min()) / (rest.max() - rest.min()) - 1.0
    return out


@register("hanging-chain", "der: a chain of closed, naturally curved links hanging from its two ends, pulled apart until a "
          "link breaks (Bergou et al. 2008, Fig. 10)", [
    Param("links", 6, "number of links", low=2, high=200),
    Param("n", 16, "vertices per link", low=8, high=200),
    Param("link_radius", 0.02, "link (circle) radius [m]", low=0.0, low_open=True),
    Param("radius", 0.002, "rod radius [m]", low=0.0, low_open=True),
    Param("E", 1e7, "Young's modulus [Pa] (G = E / 3)", low=0.0, low_open=True),
    Param("pull_speed", 0.05, "speed of each end apart [m/s]", low=0.0),
    Param("t_hold", 0.2, "time hanging before the pull [s]", low=0.0),
    Param("break_stretch", 0.15, "a link breaks when its length along the pull exceeds its diameter by this fraction",
          low=0.0, low_open=True),
    Param("friction", 0.2, "rod-rod Coulomb friction", low=0.0),
    Param("t_end", 1.5, "simulated time [s] (the run stops at the break)", low=0.0, low_open=True),
    Param("dt", 2e-4, "time step [s]", low=0.0, low_open=True),
    Param("frames", 60, "recorded frames", low=2, high=100000),
    _projection_param(),
])
def run_hanging_chain(params, progress) -> SceneResult:
    """The chain hangs under gravity (``t_hold``), then its end links are pulled apart. Links are
    inextensible elastic rods and cannot tear, so "breaking" is a threshold event: the first
    link whose extent along the pull exceeds its rest diameter by ``break_stretch`` (a link
    squeezed into an oval by its neighbours) is the weak link; the run stops there and reports
    the time, the end separation and the link."""
    world = chain_world(params["links"], params["n"], link_radius=params["link_radius"], radius=params["radius"],
                        E=params["E"], friction=params["friction"], pull_speed=params["pull_speed"],
                        t_hold=params["t_hold"])
    sim = make_simulator(world, "der", dt=params["dt"], projection=params["projection"], energy_check=False)
    state = sim.initial_state()
    nsteps = int(math.ceil(params["t_end"] / sim.dt - 1e-9))
    limit = params["break_stretch"]

    def broken(st):
        return bool(link_stretch(world, st).max() > limit)

    ends = lambda st: float(st.rod_x(world.n_rods - 1)[:, 0].max() - st.rod_x(0)[:, 0].min())  # noqa: E731
    run = record(sim, state, nsteps, frames=params["frames"], progress=progress, stop=broken,
                 probes={"stretch": lambda st: float(link_stretch(world, st).max()), "span": ends,
                         "sag": lambda st: float(-st.vertex_x[:, 2].min())})
    stretch = link_stretch(world, state)
    is_broken = bool(stretch.max() > limit)
    m = {**_contact_metrics(world, sim, run), "broken": is_broken, "max_link_stretch": float(stretch.max()),
         "sag": float(run.probes["sag"][-1]), "span": ends(state), "paper_ms_per_step": 0.2}
    if is_broken:  # break_*: only when a link broke
        m.update(break_time=float(state.t), break_link=int(np.argmax(stretch)), break_span=ends(state))
    traj = {"t": run.t, "x": run.x, "rod_offsets": np.array(world.rod_vertex_start),
            "stretch": run.probes["stretch"], "span": run.probes["span"]}
    return SceneResult(m, traj, world=world, state=state)


# ---- hanging plectonemes (Bergou et al. 2008, Fig. 9) -----------------------------------------------
def parabola_world(n: int, *, span: float = 0.05, depth: float = 0.4, radius: float = 0.003, E: float = 1e6,
                   rho: float = 1000.0, damping: float = 2.0, friction: float = 0.1, rate: float = 2 * math.pi,
                   ramp: float = 0.2):
    """A naturally straight rod of ``n`` vertices bent onto the parabola ``z = -depth (1 - (x / span)^2)``, ``x`` in
    [-span, span] [m], both end edges clamped; gravity -z, viscous ``damping`` [1/s], self contact
    with Coulomb ``friction``; the clamp at x = -span turns about its edge's tangent at ``rate``
    [rad/s] (ramped in over ``ramp`` [s]). ``radius`` [m], ``E`` [Pa] (G = E / 3), ``rho`` [kg/m^3]."""
    require(isinstance(n, (int, np.integer)) and n >= 10, f"n must be an integer >= 10 (got {n!r})")
    s = np.linspace(-1.0, 1.0, 4001)
    dense = np.stack([span * s, np.zeros_like(s), -depth * (1.0 - s * s)], axis=1)
    arc = np.concatenate([[0.0], np.cumsum(np.linalg.norm(np.diff(dense, axis=0), axis=1))])
    u = np.linspace(0.0, arc[-1], n)
    pts = np.stack([np.interp(u, arc, dense[:, k]) for k in range(3)], axis=1)
    b = WorldBuilder(gravity=(0.0, 0.0, -GRAVITY), damping=damping)
    # naturally straight and untwisted: bent into the parabola, not resting in it
    b.add_rod(pts, E=E, G=E / 3.0, rho=rho, radius=radius, rest_curvature=np.zeros((n - 2, 4)), rest_twist=np.zeros(n - 2))
    axis = pts[1] - pts[0]
    b.clamp(0, "start", motion=twist_about_axis(axis / np.linalg.norm(axis), rate, ramp=ramp))
    b.clamp(0, "end")
    b.set_contact(rods=True, friction=friction)
    return b.build()


@register("plectonemes-hanging", "der: a rod hanging as a parabola, ends clamped, one end twisted until it writhes into "
          "plectonemes held apart by self contact (Bergou et al. 2008, Fig. 9)", [
    Param("n", 275, "vertices", low=10, high=5000),
    Param("span", 0.05, "half distance between the clamped ends [m]", low=0.0, low_open=True),
    Param("depth", 0.4, "depth of the parabola [m]", low=0.0, low_open=True),
    Param("radius", 0.003, "rod radius [m]", low=0.0, low_open=True),
    Param("E", 1e6, "Young's modulus [Pa] (G = E / 3)", low=0.0, low_open=True),
    Param("damping", 2.0, "viscous drag rate [1/s]", low=0.0),
    Param("rate", 4 * math.pi, "twisting rate of the clamp [rad/s]", low=0.0),
    Param("friction", 0.1, "self-contact Coulomb friction", low=0.0),
    Param("t_end", 3.0, "simulated time [s]", low=0.0, low_open=True),
    Param("dt", 5e-5, "time step [s] (suggested_time_step of the 275-vertex rod: 7.1e-5 s)", low=0.0, low_open=True),
    Param("frames", 120, "recorded frames", low=2, high=100000),
    _projection_param(),
])
def run_plectonemes_hanging(params, progress) -> SceneResult:
    """Twist is fed in at one clamp; the first plectoneme is the first frame at which two
    non-neighbouring parts of the rod touch (exact smallest self gap <= 0.1 radius); metrics the
    imposed twist then [turns], the writhe at the end (Gauss integral of the open centre line)."""
    world = parabola_world(params["n"], span=params["span"], depth=params["depth"], radius=params["radius"],
                           E=params["E"], damping=params["damping"], friction=params["friction"], rate=params["rate"])
    sim = make_simulator(world, "der", dt=params["dt"], projection=params["projection"])
    state = sim.initial_state()
    nsteps = int(math.ceil(params["t_end"] / sim.dt - 1e-9))
    contact = sim._contact
    ramp = 0.2
    turns = lambda t: (params["rate"] * (t * t / (2 * ramp) if t < ramp else t - ramp / 2)) / (2 * math.pi)  # noqa: E731
    run = record(sim, state, nsteps, frames=params["frames"], progress=progress,
                 probes={"self_gap": lambda st: contact.min_gap(st.vertex_x),
                         "writhe": lambda st: polygon_writhe(st.vertex_x)})
    touch = np.flatnonzero(np.asarray(run.probes["self_gap"]) <= 0.1 * params["radius"])
    first = float(turns(run.t[touch[0]])) if touch.size else None
    m = {**_contact_metrics(world, sim, run), "plectoneme": bool(touch.size),
         "twist_turns_end": float(turns(state.t)), "writhe_end": float(run.probes["writhe"][-1]),
         "paper_ms_per_step": 0.92}
    if touch.size:  # only when a plectoneme formed
        m.update(plectoneme_twist_turns=first, plectoneme_time=float(run.t[touch[0]]))
    traj = {"t": run.t, "x": run.x, "writhe": run.probes["writhe"], "self_gap": run.probes["self_gap"]}
    return SceneResult(m, traj, world=world, state=state)


# ---- twisted trefoil (Bergou et al. 2008, Fig. 1) ---------------------------------------------------
def trefoil_world(n: int, *, scale: float = 0.2, radius: float = 0.01, E: float = 1e6, rho: float = 1000.0,
                  damping: float = 5.0, friction: float = 0.0, rate: float = 2 * math.pi, t_turn: float = 2.0,
                  ramp: float = 0.1):
    """A naturally straight rod of ``n`` vertices tied in an overhand (open trefoil) knot
    (:func:`rodlab.scenes.knot_scenes.overhand_knot_points` with ``scale`` [m]), both end edges
    clamped, no gravity, viscous ``damping`` [1/s], self contact; the clamp at +x turns about x at
    ``rate`` [rad/s] until ``t_turn`` [s], then at ``-rate`` (through zero to the other sign)."""
    from .knot_scenes import overhand_knot_points

    pts = overhand_knot_points(n, scale=scale)
    b = WorldBuilder(damping=damping)
    b.add_rod(pts, E=E, G=E / 3.0, rho=rho, radius=radius, rest_curvature=np.zeros((n - 2, 4)), rest_twist=np.zeros(n - 2))
    b.clamp(0, "start")
    b.clamp(0, "end", motion=_back_and_forth(rate, t_turn, ramp))
    b.set_contact(rods=True, friction=friction)
    return b.build()


def _turn_angle(t: float, rate: float, t_turn: float, ramp: float) -> float:
    """Imposed angle [rad]: ramped in over ``ramp``, up at ``rate`` until ``t_turn``, then down."""
    up = rate * (t * t / (2 * ramp) if t < ramp else t - ramp / 2)
    if t <= t_turn:
        return up
    peak = rate * (t_turn - ramp / 2)
    return peak - rate * (t - t_turn)


def _back_and_forth(rate, t_turn, ramp):
    from ..geometry.rotations import exp_so3

    def motion(t):
        return exp_so3(np.array([_turn_angle(t, rate, t_turn, ramp), 0.0, 0.0])), np.zeros(3)
    return motion


@register("trefoil-twist", "der: a trefoil (overhand) knot on a rod with both ends clamped, twisted one way then the "
          "other, after Bergou et al. 2008, Fig. 1 (experimental: the paper's jump is not reproduced yet, docs/contact-der.md)", [
    Param("n", 101, "vertices", low=20, high=5000),
    Param("radius", 0.01, "rod radius [m]", low=0.0, low_open=True),
    Param("E", 1e6, "Young's modulus [Pa] (G = E / 3)", low=0.0, low_open=True),
    Param("damping", 5.0, "viscous drag rate [1/s]", low=0.0),
    Param("rate", 2 * math.pi, "twisting rate of the clamp [rad/s]", low=0.0, low_open=True),
    Param("t_turn", 2.0, "time of the reversal [s]", low=0.0, low_open=True),
    Param("t_end", 6.0, "simulated time [s]", low=0.0, low_open=True),
    Param("dt", 5e-4, "time step [s]", low=0.0, low_open=True),
    Param("frames", 240, "recorded frames", low=10, high=100000),
    _projection_param(),
])
def run_trefoil_twist(params, progress) -> SceneResult:
    """Metrics: the imposed twist [turns] at the jump for each sign, the jump being the frame of
    the largest writhe change per unit time while the twist has that sign (writhe of the knot
    closed by straight tails along x, :func:`rodlab.scenes.zhao_contact_scenes.open_rod_writhe`)."""
    from .zhao_contact_scenes import open_rod_writhe

    ramp = 0.1
    world = trefoil_world(params["n"], radius=params["radius"], E=params["E"], damping=params["damping"],
                          rate=params["rate"], t_turn=params["t_turn"], ramp=ramp)
    sim = make_simulator(world, "der", dt=params["dt"], projection=params["projection"])
    state = sim.initial_state()
    nsteps = int(math.ceil(params["t_end"] / sim.dt - 1e-9))
    run = record(sim, state, nsteps, frames=params["frames"], progress=progress,
                 probes={"writhe": lambda st: open_rod_writhe(st.vertex_x)})
    t = np.asarray(run.t)
    wr = np.asarray(run.probes["writhe"])
    turns = np.array([_turn_angle(float(s), params["rate"], params["t_turn"], ramp) for s in t]) / (2 * math.pi)
    rate_wr = np.abs(np.diff(wr)) / np.maximum(np.diff(t), 1e-300)
    mid = turns[1:]
    m = {**_contact_metrics(world, sim, run), "writhe_start": float(wr[0]), "writhe_end": float(wr[-1]),
         "twist_turns_max": float(turns.max()), "twist_turns_min": float(turns.min())}
    for sign, name in ((1.0, "positive"), (-1.0, "negative")):
        sel = np.flatnonzero(sign * mid > 0)
        if sel.size:
            k = sel[np.argmax(rate_wr[sel])]
            m[f"jump_twist_{name}"] = float(mid[k])
            m[f"jump_writhe_rate_{name}"] = float(rate_wr[k])
    traj = {"t": run.t, "x": run.x, "writhe": wr, "twist_turns": turns}
    return SceneResult(m, traj, world=world, state=state)
