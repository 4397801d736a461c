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
from ..motions import AxisRotation, Composed, RampedRate, SmoothMoves, Translation
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

    # held until t_hold, then moved apart along x at pull_speed (sampled motions: rodlab.motions)
    after_hold = RampedRate(pull_speed, start=t_hold)
    # the outermost edges: link 0 around phi = pi (vertex n/2), the last link around phi = 0
    half = n // 2
    b.clamp(0, half - 1, motion=Translation((-1.0, 0.0, 0.0), after_hold))
    b.clamp(links - 1, n - 1, motion=Translation((1.0, 0.0, 0.0), after_hold))
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
def _smoothstep(u: float) -> float:
    """0 for u <= 0, 1 for u >= 1, ``3u^2 - 2u^3`` between (zero slope at both ends)."""
    u = min(max(u, 0.0), 1.0)
    return u * u * (3.0 - 2.0 * u)


def trefoil_clamp_offset(t: float, half0: float, span_pre: float, span: float, t_pull: float) -> float:
    """How far each clamp has moved outward along x [m] at ``t`` [s]: from its initial distance
    ``half0`` [m] from the origin to ``span_pre / 2`` over the first half of ``t_pull`` (pulling
    the knot tight), then to ``span / 2`` over the second half (letting it open to its loop),
    with smooth starts and stops; held from ``t_pull`` on."""
    u = t / t_pull
    return ((0.5 * span_pre - half0) * _smoothstep(2.0 * u)
            + 0.5 * (span - span_pre) * _smoothstep(2.0 * u - 1.0))


def trefoil_twist_turns(t: float, t0: float, rate: float, ramp: float = 1.0) -> float:
    """Imposed twist [turns] at ``t`` [s] (>= 0): 0 before ``t0``, then ``rate`` [turns/s],
    reached linearly over ``ramp`` [s]."""
    s = t - t0
    if s <= 0.0:
        return 0.0
    return rate * (s * s / (2.0 * ramp) if s < ramp else s - 0.5 * ramp)


def trefoil_world(n: int, sign: float, *, scale: float = 0.2, radius: float = 0.01, E: float = 1e6,
                  rho: float = 1000.0, damping: float = 2.0, friction: float = 0.0, span_pre: float = 4.0,
                  span: float = 3.5, t_pull: float = 30.0, t_settle: float = 10.0, rate: float = 0.025):
    """A naturally straight rod of ``n`` vertices tied in an overhand knot with both tails on the
    x axis (:func:`rodlab.scenes.knot_scenes.open_trefoil_points` with ``scale`` [m]), both end
    edges clamped, no gravity, viscous ``damping`` [1/s], self contact with Coulomb ``friction``.
    The clamps move apart along x (:func:`trefoil_clamp_offset`: ends ``span_pre`` [m] apart, then
    ``span``, over ``t_pull`` [s]); from ``t_pull + t_settle`` the clamp at +x turns about x,
    ``sign`` (+1 or -1) times :func:`trefoil_twist_turns` at ``rate`` [turns/s]. ``radius`` [m],
    ``E`` [Pa] (G = E / 3), ``rho`` [kg/m^3]."""
    from .knot_scenes import open_trefoil_points

    require(sign in (1, -1, 1.0, -1.0), f"sign must be +1 or -1 (got {sign!r})")
    require(span_pre > 0 and span > 0 and t_pull > 0 and t_settle >= 0 and rate > 0,
            f"span_pre, span, t_pull and rate must be > 0, t_settle >= 0 (got {span_pre}, {span}, {t_pull}, "
            f"{rate}, {t_settle})")
    pts = open_trefoil_points(n, scale=scale)
    length = float(np.sum(np.linalg.norm(np.diff(pts, axis=0), axis=1)))
    require(max(span_pre, span) < 0.95 * length,
            f"span_pre and span must be below 0.95 of the rod's length {length:.3g} m (got {span_pre}, {span})")
    half0 = 0.5 * float(pts[-1, 0] - pts[0, 0])
    t0 = t_pull + t_settle
    b = WorldBuilder(damping=damping)
    b.add_rod(pts, E=E, G=E / 3.0, rho=rho, radius=radius, rest_curvature=np.zeros((n - 2, 4)),
              rest_twist=np.zeros(n - 2))

    # sampled motions (rodlab.motions): trefoil_clamp_offset's two smooth moves outward, and from t0 a
    # turn about x at 2 pi sign rate [rad/s] ramped in over 1 s (trefoil_twist_turns)
    offset = SmoothMoves(((0.5 * span_pre - half0, 0.0, 0.5 * t_pull), (0.5 * (span - span_pre), 0.5 * t_pull, 0.5 * t_pull)))
    turn = AxisRotation((1.0, 0.0, 0.0), RampedRate(2.0 * math.pi * sign * rate, ramp=1.0, start=t0))
    b.clamp(0, "start", motion=Translation((-1.0, 0.0, 0.0), offset))
    b.clamp(0, "end", motion=Composed(turn, Translation((1.0, 0.0, 0.0), offset)))
    b.set_contact(rods=True, friction=friction)
    return b.build()


def twist_jump(turns, writhe, energy, threshold: float = 1.0, min_writhe: float = 0.1) -> dict:
    """The jump of a writhe-vs-twist curve (frames ``turns`` [turns], ``writhe``, elastic
    ``energy`` [J], each (F,)). A jump (snap) turns twist into writhe faster than twist is
    added: ``|d writhe / d turns| > threshold`` (1: on a smooth, stable branch the twist
    ``Tw = Lk - Wr`` keeps growing with the imposed link, ``|dWr/dLk| < 1``; in a snap at fixed
    imposed twist the writhe changes at once and the twist falls). A jump is a contiguous run of
    frame intervals above ``threshold`` that changes the writhe by ``min_writhe`` or more (less:
    the drift of a knot still settling, or noise); the one reported holds the steepest interval
    ``k`` of all such runs (frames ``lo`` to ``hi``). Returns ``jump`` (whether there is one),
    ``rate`` (the largest ``|dWr/dturns|`` [1/turn] of all intervals), ``sharpness`` (``rate``
    over the median ``|dWr/dturns|``), and, with a jump: ``twist`` (the imposed twist at the
    middle of interval k [turns]), ``onset`` (at the middle of the first interval of the first
    jump: where the first of several snaps starts; frame ``first``), ``writhe_jump``
    (``writhe[hi] - writhe[lo]``), ``twist_released`` (``|writhe_jump| - |turns[hi] -
    turns[lo]|`` [turns]: the twist the jump turned into writhe beyond what was imposed
    meanwhile; > 0 for a snap), ``energy_drop`` [J] (the largest fall of the energy from one
    frame to a later one within ``lo .. hi``: what the snap releases while the clamp still adds
    twist), ``lo``, ``hi``."""
    turns, writhe, energy = (np.asarray(a, dtype=float) for a in (turns, writhe, energy))
    require(turns.shape == writhe.shape == energy.shape and turns.ndim == 1 and turns.size >= 3,
            f"turns, writhe and energy must be (F,) with F >= 3 (got {turns.shape}, {writhe.shape}, {energy.shape})")
    rate = np.abs(np.diff(writhe)) / np.maximum(np.abs(np.diff(turns)), 1e-300)
    median = float(np.median(rate))
    out = {"jump": False, "rate": float(rate.max()),
           "sharpness": float(rate.max() / median) if median > 0 else math.inf}
    fast = np.flatnonzero(rate > threshold)
    runs = [(int(a[0]), int(a[-1]) + 1) for a in np.split(fast, np.flatnonzero(np.diff(fast) > 1) + 1) if a.size]
    runs = [(lo, hi) for lo, hi in runs if abs(writhe[hi] - writhe[lo]) >= min_writhe]
    if not runs:
        return out
    lo, hi = max(runs, key=lambda r: rate[r[0]:r[1]].max())
    k = lo + int(np.argmax(rate[lo:hi]))
    first = runs[0][0]
    jump = float(writhe[hi] - writhe[lo])
    e = energy[lo:hi + 1]
    out.update(jump=True, twist=float(0.5 * (turns[k] + turns[k + 1])),
               onset=float(0.5 * (turns[first] + turns[first + 1])), first=first, writhe_jump=jump,
               twist_released=abs(jump) - float(abs(turns[hi] - turns[lo])),
               energy_drop=float(np.max(np.maximum.accumulate(e) - e)), lo=lo, hi=hi)
    return out


def _twist_branch(world, params, state, sign, progress):
    """Twist the prepared knot ``state`` (in place) with the clamp of ``world`` turning ``sign``:
    frames every ``probe_turns``; the branch ends ``after_turns`` after the writhe first left
    its starting value by ``wr_stop``, or at ``turns_max``."""
    from .zhao_contact_scenes import open_rod_writhe

    sim = make_simulator(world, "der", dt=params["dt"], projection=params["projection"])
    t0, rate = params["t_pull"] + params["t_settle"], params["rate"]
    wr0 = open_rod_writhe(state.vertex_x)
    per = max(1, int(round(params["probe_turns"] / rate / sim.dt)))
    nsteps = per * int(math.ceil(params["turns_max"] / params["probe_turns"]))
    after = max(1, int(round(params["after_turns"] / params["probe_turns"])))
    key = "trefoil_frames_after_jump"
    state.solver.pop(key, None)

    def stop(st):
        left = st.solver.get(key)
        if left is None:
            if abs(open_rod_writhe(st.vertex_x) - wr0) > params["wr_stop"]:
                st.solver[key] = np.array(after)
            return False
        st.solver[key] = left - 1
        return bool(left - 1 <= 0)

    run = record(sim, state, nsteps, steps_per_frame=per, frames=nsteps // per, progress=progress, stop=stop,
                 probes={"writhe": lambda st: open_rod_writhe(st.vertex_x), "energy": sim.elastic_energy})
    state.solver.pop(key, None)
    turns = sign * np.array([trefoil_twist_turns(float(s), t0, rate) for s in run.t])
    return sim, run, turns


@register("trefoil-twist", "der: a trefoil (overhand) knot on a rod with both ends clamped, twisted one way and then "
          "the other: the shape changes smoothly, then jumps (Bergou et al. 2008, Fig. 1)", [
    Param("n", 60, "vertices", low=20, high=5000),
    Param("radius", 0.01, "rod radius [m]", low=0.0, low_open=True),
    Param("E", 1e6, "Young's modulus [Pa] (G = E / 3)", low=0.0, low_open=True),
    Param("damping", 2.0, "viscous drag rate [1/s]", low=0.0),
    Param("friction", 0.0, "self-contact Coulomb friction", low=0.0),
    Param("knot_scale", 0.2, "scale of the trefoil the knot is cut from [m] (rod length 6.4 m at 0.2)",
          low=0.0, low_open=True),
    Param("span_pre", 4.0, "end-to-end distance the knot is first pulled to [m]", low=0.0, low_open=True),
    Param("span", 3.5, "end-to-end distance while twisting [m]", low=0.0, low_open=True),
    Param("t_pull", 30.0, "time of the pull (span_pre then span) [s]", low=0.0, low_open=True),
    Param("t_settle", 10.0, "rest before twisting [s]", low=0.0),
    Param("rate", 0.025, "twisting rate of the clamp [turns/s]", low=0.0, low_open=True),
    Param("turns_max", 9.0, "largest twist of each sign [turns]", low=0.0, low_open=True),
    Param("wr_stop", 1.5, "a branch ends after_turns after the writhe left its start by this much", low=0.0,
          low_open=True),
    Param("after_turns", 0.25, "twist added after the writhe left its start [turns]", low=0.0),
    Param("probe_turns", 0.025, "twist between recorded frames [turns]", low=0.0, low_open=True),
    Param("dt", 0.03, "time step [s] (suggested_time_step of the 60-vertex knot: 0.033 s)", low=0.0, low_open=True),
    _projection_param(),
])
def run_trefoil_twist(params, progress) -> SceneResult:
    """The knot is pulled tight (``span_pre``), let open to ``span`` and left to settle; from that
    untwisted state it is twisted positively until the jump, and (from the same state) negatively.
    Metrics per sign (``positive`` / ``negative``, :func:`twist_jump` on writhe vs imposed twist;
    writhe: Gauss integral of the centre line closed by tails along x): ``jump_*`` (found or not),
    ``jump_rate_*`` [1/turn], ``jump_sharpness_*``, and with a jump ``jump_twist_*`` [turns],
    ``jump_onset_*`` [turns], ``writhe_jump_*``, ``twist_released_*`` [turns], ``energy_drop_*``
    [J]; ``twist_end_*``, ``writhe_end_*``; ``writhe_start`` / ``energy_start`` (the untwisted
    knot); and the contact metrics over all three phases."""
    from .zhao_contact_scenes import open_rod_writhe

    p = dict(params)
    require(p["after_turns"] < p["turns_max"], f"after_turns must be below turns_max (got {p['after_turns']})")
    kw = dict(scale=p["knot_scale"], radius=p["radius"], E=p["E"], damping=p["damping"], friction=p["friction"],
              span_pre=p["span_pre"], span=p["span"], t_pull=p["t_pull"], t_settle=p["t_settle"], rate=p["rate"])
    worlds = {s: trefoil_world(p["n"], s, **kw) for s in (1, -1)}
    sim = make_simulator(worlds[1], "der", dt=p["dt"], projection=p["projection"])
    state = sim.initial_state()
    n_prep = int(math.ceil((p["t_pull"] + p["t_settle"]) / sim.dt - 1e-9))
    prep = record(sim, state, n_prep, frames=min(40, n_prep), progress=progress,
                  probes={"writhe": lambda st: open_rod_writhe(st.vertex_x), "energy": sim.elastic_energy})
    untwisted = state.copy()
    runs, m = [prep], {}
    branch = {}
    for sign, name in ((1, "positive"), (-1, "negative")):
        st = untwisted.copy()
        _sim, run, turns = _twist_branch(worlds[sign], p, st, sign, progress)
        runs.append(run)
        jump = twist_jump(turns, run.probes["writhe"], run.probes["energy"])
        branch[name] = (run, turns, jump, st)
        m.update({f"jump_{name}": jump["jump"], f"jump_rate_{name}": jump["rate"],
                  f"jump_sharpness_{name}": jump["sharpness"], f"twist_end_{name}": float(turns[-1]),
                  f"writhe_end_{name}": float(run.probes["writhe"][-1])})
        if jump["jump"]:  # the jump's numbers: only when there is one
            m.update({f"jump_twist_{name}": jump["twist"], f"jump_onset_{name}": jump["onset"],
                      f"writhe_jump_{name}": jump["writhe_jump"],
                      f"twist_released_{name}": jump["twist_released"], f"energy_drop_{name}": jump["energy_drop"]})
    steps = sum(r.steps for r in runs)
    from ..metrics import contact_summary

    m = {"method": "der", "n_vertices": worlds[1].n_vertices, "dt": sim.dt,
         **contact_summary(min(r.contact_min_gap for r in runs), sum(r.contacts_sum for r in runs),
                           max(r.contacts_max for r in runs), steps),
         "ms_per_step": 1e3 * sum(r.wall_s for r in runs) / max(steps, 1), "steps": steps,
         "writhe_start": float(prep.probes["writhe"][-1]), "energy_start": float(prep.probes["energy"][-1]), **m}
    pos = branch["positive"]
    traj = {"t": np.concatenate([prep.t, pos[0].t[1:]]), "x": np.concatenate([prep.x, pos[0].x[1:]]),
            "writhe": np.concatenate([prep.probes["writhe"], pos[0].probes["writhe"][1:]]),
            "twist_turns": np.concatenate([np.zeros(len(prep.t)), pos[1][1:]])}
    for name, (run, turns, _jump, _st) in branch.items():
        traj.update({f"t_{name}": run.t, f"x_{name}": run.x, f"turns_{name}": turns,
                     f"writhe_{name}": run.probes["writhe"], f"energy_{name}": run.probes["energy"]})
    extra = {name: {"lo": j["lo"], "hi": j["hi"], "first": j["first"]} for name, (_r, _t, j, _s) in branch.items()
             if j["jump"]}
    return SceneResult(m, traj, plot=_plot_trefoil, extra=extra, world=worlds[1], state=pos[3])


def _plot_trefoil(result, out_dir):
    """Writhe and elastic energy vs imposed twist for both signs (the steepest jump shaded), and
    the knot seen along the clamps' axis (y-z) and from the side (x-z): untwisted, just before the
    first snap and just after the steepest of each sign."""
    from pathlib import Path

    from ..viz.plots import figure_module

    plt = figure_module()
    tr = result.trajectory
    fig = plt.figure(figsize=(15, 9))
    ax = fig.add_subplot(3, 1, 1)
    ax2 = ax.twinx()
    shots = [("untwisted", tr["x_positive"][0])]
    for name, color in (("positive", "tab:red"), ("negative", "tab:blue")):
        turns, wr, en = tr[f"turns_{name}"], tr[f"writhe_{name}"], tr[f"energy_{name}"]
        ax.plot(turns, wr, color=color, label=f"writhe, {name} twist")
        ax2.plot(turns, en, "--", color=color, alpha=0.6)
        j = result.extra.get(name)
        if j:
            lo, hi, first = j["lo"], j["hi"], j["first"]
            ax.axvspan(min(turns[lo], turns[hi]), max(turns[lo], turns[hi]), color=color, alpha=0.15)
            shots += [(f"{name}: {turns[first]:+.2f} turns (before)", tr[f"x_{name}"][first]),
                      (f"{name}: {turns[hi]:+.2f} turns (after)", tr[f"x_{name}"][hi])]
    ax.set_xlabel("imposed twist [turns]")
    ax.set_ylabel("writhe")
    ax2.set_ylabel("elastic energy [J] (dashed)")
    ax.legend(loc="lower left", fontsize=8)
    ax.grid(alpha=0.3)
    for j, (title, x) in enumerate(shots):
        for row, (i0, i1) in enumerate(((1, 2), (0, 2))):
            a = fig.add_subplot(3, len(shots), len(shots) * (row + 1) + j + 1)
            a.plot(x[:, i0], x[:, i1], "-", color="0.3", linewidth=1.5)
            a.scatter(x[:, i0], x[:, i1], c=np.linspace(0, 1, len(x)), s=6)
            a.set_aspect("equal", adjustable="datalim")
            a.set_xlabel(f"{'xyz'[i0]} [m]", fontsize=8)
            a.tick_params(labelsize=7)
            if row == 0:
                a.set_title(title, fontsize=8)
    fig.suptitle("trefoil-twist: writhe vs imposed twist, and the knot before / after each jump "
                 "(Bergou et al. 2008, Fig. 1)")
    fig.tight_layout()
    path = Path(out_dir) / "trefoil.png"
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return [path]
