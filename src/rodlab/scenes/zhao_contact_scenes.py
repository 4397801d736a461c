"""Contact scenes of Zhao, Lin, Wang, Bao and Huang, "Efficient and Stable Simulation of
Inextensible Cosserat Rods by a Compact Representation" (Computer Graphics Forum, 2024) on the
compact method: ``strand-through-springs`` (Fig. 14) and ``plectoneme`` (Fig. 16).

Both use what the compact method holds by constraints of its step (:mod:`rodlab.compact.end_clamps`):
clamps at the far end, sliding clamps (a chute; ends free along x only) and clamps turned at a
prescribed rate, with rod-rod and self contact (:mod:`rodlab.compact.contact_world`).

Writhe and twist (``plectoneme``): the rod's ends are held on the x axis with their end edges
along x, so the rod is closed through infinity by two straight tails along the axis (from the
first vertex toward -x, from the last toward +x), the standard closure of an open rod whose end
tangents are fixed (as in magnetic-tweezers experiments). ``Wr`` is the Gauss double integral of
that polygon, evaluated exactly per pair of straight segments as the solid angle they subtend
(:func:`polygon_writhe`), with tails of ``1e4`` rod lengths (the missing part of the tails
contributes ``O((a / tail)^2)``, ``a`` the rod's excursion from the axis: below 1e-8 here). ``Tw``
is the integrated material twist: the sum over the rod's hinges of the signed angle between the
next edge's director m1 and the previous edge's m1 parallel-transported onto the next tangent
(:func:`material_twist`), divided by 2 pi. Turning the last clamp by ``+phi`` about +x and the
first by ``-phi`` changes the link by ``2 phi / 2 pi``; Calugareanu-White-Fuller,
``Lk = Tw + Wr``, makes ``Tw + Wr - (Tw + Wr)(0)`` follow it.
"""
from __future__ import annotations

import math

import numpy as np

from ..contact import from_arrays
from ..experiment import record, warm_up
from ..model import require, twist_about_axis
from ..solvers import make_simulator
from ..world import WorldBuilder, shapes
from .knot_scenes import strands_crossed
from .registry import Param, SceneResult, register

TAIL_LENGTHS = 1e4  # tails of the writhe closure, in rod lengths


# ---------------------------------------------------------------------------------------------
# writhe and twist
# ---------------------------------------------------------------------------------------------
def _unit(v):
    n = np.linalg.norm(v, axis=-1, keepdims=True)
    return v / np.maximum(n, 1e-300)


def polygon_writhe(x: np.ndarray, closed: bool = False) -> float:
    """Writhe of the polygon ``x`` (K, 3) [m]: the Gauss double integral
    ``1/(4 pi) int int (t1 x t2) . (r1 - r2) / |r1 - r2|^3``, exact for straight segments: each pair
    of non-adjacent segments contributes the signed solid angle ``Omega`` under which each sees
    the other, ``Wr = sum_{i<j} Omega_ij / (2 pi)``. Pairs that touch or are coplanar give 0.
    ``closed``: the last vertex connects back to the first."""
    x = np.ascontiguousarray(x, dtype=float)
    a = x if closed else x[:-1]
    b = np.roll(x, -1, axis=0) if closed else x[1:]
    K = a.shape[0]
    if K < 3:
        return 0.0
    p1, p2, p3, p4 = a[:, None], b[:, None], a[None], b[None]
    r13, r14, r23, r24 = p3 - p1, p4 - p1, p3 - p2, p4 - p2
    n1, n2 = _unit(np.cross(r13, r14)), _unit(np.cross(r14, r24))
    n3, n4 = _unit(np.cross(r24, r23)), _unit(np.cross(r23, r13))

    def asin_dot(u, v):
        return np.arcsin(np.clip(np.sum(u * v, axis=-1), -1.0, 1.0))

    omega = asin_dot(n1, n2) + asin_dot(n2, n3) + asin_dot(n3, n4) + asin_dot(n4, n1)
    sign = np.sign(np.sum(np.cross(p4 - p3, p2 - p1) * r13, axis=-1))
    i, j = np.triu_indices(K, 2)
    keep = ~((i == 0) & (j == K - 1)) if closed else np.ones(i.shape, dtype=bool)
    return float(np.sum((omega * sign)[i[keep], j[keep]]) / (2.0 * math.pi))


def open_rod_writhe(x: np.ndarray, axis=(1.0, 0.0, 0.0)) -> float:
    """Writhe of an open rod ``x`` (n, 3) [m] whose ends lie on a line along ``axis``, closed
    through infinity by straight tails along the axis (module docstring): ``TAIL_LENGTHS`` rod
    lengths long, from ``x[0]`` toward ``-axis`` and from ``x[-1]`` toward ``+axis``."""
    x = np.asarray(x, dtype=float)
    a = np.asarray(axis, dtype=float) / np.linalg.norm(axis)
    tail = TAIL_LENGTHS * float(np.sum(np.linalg.norm(np.diff(x, axis=0), axis=1)))
    return polygon_writhe(np.concatenate([[x[0] - tail * a], x, [x[-1] + tail * a]]))


def material_twist(x: np.ndarray, m1: np.ndarray) -> float:
    """Integrated material twist [turns] of a rod with vertices ``x`` (n, 3) and edge directors
    ``m1`` (n - 1, 3): per hinge the signed angle (about the next tangent) from the previous
    edge's m1, parallel-transported onto the next tangent, to the next edge's m1; summed and
    divided by 2 pi."""
    t = _unit(np.diff(np.asarray(x, dtype=float), axis=0))
    t0, t1, u, v = t[:-1], t[1:], m1[:-1], m1[1:]
    c = np.sum(t0 * t1, axis=1)[:, None]
    b = np.cross(t0, t1)
    pt = c * u + np.cross(b, u) + np.sum(b * u, axis=1)[:, None] * b / (1.0 + c)
    ang = np.arctan2(np.sum(np.cross(pt, v) * t1, axis=1), np.sum(pt * v, axis=1))
    return float(np.sum(ang) / (2.0 * math.pi))


def _integrator_param():
    return Param("integrator", "backward-euler", "time integration (docs/integrators.md): backward-euler; bdf2 is "
                 "refused with rod contact and with sliding or far-end clamps", choices=("backward-euler", "bdf2"))


def _common_metrics(run, world) -> dict:
    summary = run.summary(world.n_vertices)
    return {**run.contact_summary(), "ms_per_step": 1e-3 * summary["us_per_step"], "n_vertices": world.n_vertices,
            "newton_iters": summary["newton_iters"], "steps": run.steps}


# ---------------------------------------------------------------------------------------------
# strand through springs (Fig. 14)
# ---------------------------------------------------------------------------------------------
def springs_world(params):
    """A strand of ``n`` vertices along +x from the origin (``length`` [m]), clamped at x = 0 and
    held at the other end by a chute (a clamp free to slide along x, pulled outward by
    ``chute_force`` [N]), through two helical springs of ``spring_n`` vertices each (axis along
    x, coil radius ``coil_radius``, ``pitch`` [m per turn], ``turns``), centred at a quarter and
    three quarters of the strand; a weight ``weight`` [N] hangs from the strand's middle vertex
    (a point force: the object's inertia is not modelled), gravity ``gravity`` [m/s^2] along -z,
    rod-rod and self contact (thickness: each rod's radius)."""
    n, L = params["n"], params["length"]
    require(params["coil_radius"] > 2.2 * params["radius"],
            f"coil_radius must exceed 2.2 radius = {2.2 * params['radius']:g} m so the strand fits through the springs "
            f"(got {params['coil_radius']})")
    require(params["pitch"] > 2.2 * params["radius"],
            f"pitch must exceed 2.2 radius = {2.2 * params['radius']:g} m so the coils do not overlap "
            f"(got {params['pitch']})")
    span = params["pitch"] * params["turns"]
    require(span < 0.45 * L, f"pitch * turns must be < 0.45 length = {0.45 * L:g} m (got {span:g})")
    b = WorldBuilder(gravity=(0.0, 0.0, -params["gravity"]), damping=params["damping"])
    strand = b.add_rod(shapes.straight(n, L), E=params["E"], G=params["G"], rho=params["rho"], radius=params["radius"])
    for centre in (0.25 * L, 0.75 * L):
        pts = shapes.helix(params["spring_n"], params["coil_radius"], params["pitch"], params["turns"],
                           start=(centre - 0.5 * span, 0.0, 0.0), axis=(1.0, 0.0, 0.0))
        b.add_rod(pts, E=params["spring_E"], G=params["spring_G"], rho=params["rho"], radius=params["radius"])
    b.clamp(strand, "start")
    b.clamp(strand, "end", slide_axis=(1.0, 0.0, 0.0))
    if params["chute_force"] > 0:
        b.add_point_force(strand, -1, (params["chute_force"], 0.0, 0.0))
    b.add_point_force(strand, n // 2, (0.0, 0.0, -params["weight"]))
    b.set_contact(rods=True)
    return b.build()


SPRING_PARAMS = [
    Param("n", 31, "strand vertices (the paper: 30 segments)", low=7, high=2001),
    Param("spring_n", 151, "vertices of each spring (the paper: 150 segments)", low=20, high=5001),
    Param("length", 3.0, "strand length [m] (not given in the paper)", low=0.0, low_open=True),
    Param("radius", 0.03, "strand and spring wire radius [m]", low=0.0, low_open=True),
    Param("E", 20e6, "strand Young's modulus [Pa]", low=0.0, low_open=True),
    Param("G", 20e6, "strand shear modulus [Pa]", low=0.0, low_open=True),
    Param("spring_E", 2e6, "spring Young's modulus [Pa]", low=0.0, low_open=True),
    Param("spring_G", 2e6, "spring shear modulus [Pa]", low=0.0, low_open=True),
    Param("rho", 0.1, "density [kg/m^3]", low=0.0, low_open=True),
    Param("coil_radius", 0.15, "spring coil radius [m] (not given in the paper)", low=0.0, low_open=True),
    Param("pitch", 0.09, "spring pitch [m per turn] (not given in the paper; below 4 radius, so the coils of one "
          "spring cannot slip between the other's)", low=0.0, low_open=True),
    Param("turns", 5.0, "turns of each spring", low=0.5, high=100.0),
    Param("weight", 20.0, "weight hanging from the strand's middle [N]", low=0.0),
    Param("chute_force", 0.0, "outward force on the end in the chute [N]", low=0.0),
    Param("gravity", 9.81, "gravitational acceleration along -z [m/s^2]", low=0.0),
    Param("damping", 0.0, "viscous damping rate [1/s]", low=0.0),
    Param("t_end", 1.2, "simulated time [s] (the springs meet near t = 0.9 s)", low=0.0, low_open=True),
    Param("dt", 0.003, "time step [s] (the paper: 0.003)", low=0.0, low_open=True),
    Param("max_newton", 5, "SQP iterations per step (the paper: 5; more while a contact is violated)", low=1, high=1000),
    Param("contact_proximity", 0.02, "gap [m] below which segment pairs are candidate rows at a step's start "
          "(-1: the compact method's default, docs/contact-compact.md, which makes every pair of neighbouring "
          "coils a candidate; continuous detection catches pairs that close faster)", low=-1.0),
    _integrator_param(),
]


def sag_theory(params) -> float:
    """Static sag [m] of the strand alone under ``weight`` at its middle, linear beam theory:
    both ends held in rotation and across the axis, one free along it (clamped-guided), so
    ``W L'^3 / (192 E I)`` with ``L' = L - l`` (each clamp holds a whole end segment of length
    ``l``, so the bending span runs between the clamped edges' midpoints) and ``I = pi r^4 / 4``.
    The springs' weight (about 1% of the default weight) and large-deflection effects are left out."""
    l = params["length"] / (params["n"] - 1)
    inertia = math.pi * params["radius"] ** 4 / 4
    return float(params["weight"] * (params["length"] - l) ** 3 / (192 * params["E"] * inertia))


def _spring_ranges(world):
    return [(int(world.rod_vertex_start[r]), int(world.rod_vertex_start[r + 1])) for r in (1, 2)]


@register("strand-through-springs", "compact Cosserat: a strand (fixed end, sliding chute) through two springs, "
          "a weight in the middle (Zhao et al. Fig. 14)", SPRING_PARAMS, paper="compact-inextensible-cosserat-zhao")
def run_springs(params, progress):
    """Metrics: ``min_gap`` [m], ``mean_contacts`` / ``max_contacts`` (active contact rows per
    step), ``ms_per_step``, ``n_vertices`` (as ``knot-tighten``); ``sag`` [m] (drop of the strand's
    middle vertex at the end), ``sag_theory`` [m] (:func:`sag_theory`), ``chute_slide`` [m] (how
    far the chute end moved in along x),
    ``spring_gap`` [m] (axial gap between the springs' facing ends at the end, centre lines),
    ``spring_gap_start`` [m], ``spring_compression`` (largest ``1 - axial extent / rest extent``
    of either spring at the end), ``threaded`` (no step in which two centre lines came within 0.2
    radius: no strand passed through another, by continuous detection), ``inextensibility``,
    ``newton_iters``, ``failed_steps``."""
    from .. import metrics

    world = springs_world(params)
    prox = params.get("contact_proximity", -1.0)
    sim = make_simulator(world, "compact", dt=params["dt"], newton_iters=params["max_newton"],
                         integrator=params.get("integrator", "backward-euler"),
                         contact_proximity=None if prox < 0 else float(prox))
    state = sim.initial_state()
    nsteps = max(1, int(round(params["t_end"] / params["dt"])))
    n, mid = params["n"], params["n"] // 2
    x_start = state.vertex_x.copy()
    warm_up(sim, state)
    probes = {"stalled": lambda st: sim.last_call.stalled_steps,
              "inextensibility": lambda st: metrics.inextensibility(world, st)}
    run = record(sim, state, nsteps, frames=nsteps, progress=progress, probes=probes, warmup=False)
    thin = from_arrays(world.rod_vertex_start, world.rod_closed, 0.1 * params["radius"],
                       skip=sim._joint.geometry.rod_skip)
    crossed = strands_crossed(thin, run.x)
    x = state.vertex_x
    (a0, a1), (b0, b1) = _spring_ranges(world)
    rest_extent = params["pitch"] * params["turns"]
    comp = [1.0 - float(np.ptp(x[s0:s1, 0])) / float(np.ptp(x_start[s0:s1, 0])) for s0, s1 in ((a0, a1), (b0, b1))]
    m = {**_common_metrics(run, world),
         "sag": float(x_start[mid, 2] - x[mid, 2]), "sag_theory": sag_theory(params),
         "chute_slide": float(x_start[n - 1, 0] - x[n - 1, 0]),
         "spring_gap": float(x[b0:b1, 0].min() - x[a0:a1, 0].max()),
         "spring_gap_start": float(x_start[b0:b1, 0].min() - x_start[a0:a1, 0].max()),
         "spring_compression": float(max(comp)), "spring_rest_extent": rest_extent,
         "threaded": crossed == 0, "crossing_steps": int(crossed),
         "inextensibility": float(np.max(run.probes["inextensibility"])),
         "failed_steps": int(np.sum(run.probes["stalled"][1:]))}
    keep = np.unique(np.linspace(0, len(run.t) - 1, min(len(run.t), 120)).round().astype(int))
    traj = {"t": run.t[keep], "x": run.x[keep], "rod_offsets": np.array(world.rod_vertex_start),
            "sag": x_start[mid, 2] - run.x[keep, mid, 2]}
    return SceneResult(m, traj, plot=_plot_springs, extra={"radius": params["radius"]}, world=world, state=state)


def _plot_springs(result, out_dir):
    """Side view (x-z) at four times and the sag of the middle over time."""
    from pathlib import Path

    from ..viz.plots import figure_module

    plt = figure_module()
    tr = result.trajectory
    x, t, off = np.asarray(tr["x"]), np.asarray(tr["t"]), np.asarray(tr["rod_offsets"])
    idx = np.unique(np.linspace(0, len(x) - 1, 4).round().astype(int))
    fig, axes = plt.subplots(1, 5, figsize=(18, 3.6))
    for ax, k in zip(axes, idx):
        for r, c in zip(range(len(off) - 1), ("k", "tab:blue", "tab:orange")):
            xs = x[k, off[r]:off[r + 1]]
            ax.plot(xs[:, 0], xs[:, 2], "-", color=c, linewidth=1.5 if r == 0 else 0.8)
        ax.set_aspect("equal", adjustable="datalim")
        ax.set_title(f"t = {t[k]:.3g} s", fontsize=9)
        ax.set_xlabel("x [m]")
    axes[0].set_ylabel("z [m]")
    axes[-1].plot(t, tr["sag"])
    axes[-1].set_xlabel("t [s]")
    axes[-1].set_ylabel("sag of the middle [m]")
    fig.suptitle("strand-through-springs (Zhao et al. Fig. 14)")
    fig.tight_layout()
    path = Path(out_dir) / "springs.png"
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return [path]


# ---------------------------------------------------------------------------------------------
# plectoneme (Fig. 16)
# ---------------------------------------------------------------------------------------------
def plectoneme_world(params):
    """A naturally straight rod of ``n`` vertices along +x (``length`` [m]); both end edges in
    sliding clamps free along x only, pulled apart by ``force`` [N] each, and turned about x at
    ``twist_rate`` [rad/s] in opposite senses (the last end by ``+rate t``, the first by ``-rate t``:
    the link grows by ``2 rate t / 2 pi``); self contact (thickness: the radius); no gravity."""
    b = WorldBuilder(damping=params["damping"])
    r = b.add_rod(shapes.straight(params["n"], params["length"]), E=params["E"], G=params["G"], rho=params["rho"],
                  radius=params["radius"])
    rate = params["twist_rate"]
    b.clamp(r, "start", slide_axis=(1.0, 0.0, 0.0), motion=twist_about_axis((1.0, 0.0, 0.0), -rate))
    b.clamp(r, "end", slide_axis=(1.0, 0.0, 0.0), motion=twist_about_axis((1.0, 0.0, 0.0), rate))
    b.add_point_force(r, 0, (-params["force"], 0.0, 0.0))
    b.add_point_force(r, -1, (params["force"], 0.0, 0.0))
    b.set_contact(rods=True)
    return b.build()


PLECTONEME_PARAMS = [
    Param("n", 51, "number of vertices (the paper: 50 segments)", low=7, high=2001),
    Param("length", 1.0, "rod length [m] (not given in the paper)", low=0.0, low_open=True),
    Param("radius", 0.003, "rod radius [m]", low=0.0, low_open=True),
    Param("E", 1e9, "Young's modulus [Pa]", low=0.0, low_open=True),
    Param("G", 1e11, "shear modulus [Pa]", low=0.0, low_open=True),
    Param("rho", 200.0, "density [kg/m^3]", low=0.0, low_open=True),
    Param("force", 1.0, "force pulling each end outward along x [N]", low=0.0),
    Param("twist_rate", 10.0, "rate each end is turned at [rad/s] (opposite senses)", low=0.0),
    Param("kick", 0.01, "initial transverse velocity amplitude (half sine along y) that seeds the buckling [m/s]",
          low=0.0),
    Param("damping", 0.0, "viscous damping rate [1/s]", low=0.0),
    Param("t_end", 1.0, "simulated time [s]", low=0.0, low_open=True),
    Param("dt", 0.003, "time step [s]", low=0.0, low_open=True),
    Param("frames", 100, "frames recorded (writhe and twist series)", low=2, high=100000),
    Param("max_newton", 5, "SQP iterations per step (the paper: 5; more while a contact is violated)", low=1, high=1000),
    Param("contact_proximity", -1.0, "gap [m] below which segment pairs are candidate rows at a step's start "
          "(-1: the compact method's default, docs/contact-compact.md)", low=-1.0),
    _integrator_param(),
]


@register("plectoneme", "compact Cosserat: a rod pulled by 1 N with both ends turned at 10 rad/s writhes into a "
          "plectoneme, self contact (Zhao et al. Fig. 16)", PLECTONEME_PARAMS, paper="compact-inextensible-cosserat-zhao")
def run_plectoneme(params, progress):
    """Metrics: ``min_gap`` [m], ``mean_contacts`` / ``max_contacts``, ``ms_per_step``,
    ``n_vertices`` (as ``knot-tighten``); ``writhe``, ``twist`` [turns] at the end and
    ``link_imposed`` [turns] (``2 rate t / 2 pi``), ``link_error`` [turns] (largest
    ``|Tw + Wr - (Tw + Wr)(0) - link_imposed|`` over the frames; module docstring), ``end_to_end``
    [m] at the end, ``self_crossings`` (steps in which two centre lines came within 0.2 radius,
    by continuous detection between recorded frames; -1 unless ``frames`` records every step),
    ``inextensibility``, ``newton_iters``, ``failed_steps``. The writhe and twist series are in
    the trajectory (``writhe``, ``twist``, ``link_imposed``)."""
    from .. import metrics

    world = plectoneme_world(params)
    prox = params.get("contact_proximity", -1.0)
    sim = make_simulator(world, "compact", dt=params["dt"], newton_iters=params["max_newton"],
                         integrator=params.get("integrator", "backward-euler"),
                         contact_proximity=None if prox < 0 else float(prox))
    state = sim.initial_state()
    s = np.linspace(0.0, 1.0, params["n"])
    state.vertex_v[:, 1] = params["kick"] * np.sin(math.pi * s)
    nsteps = max(1, int(round(params["t_end"] / params["dt"])))
    warm_up(sim, state)
    probes = {"stalled": lambda st: sim.last_call.stalled_steps,
              "inextensibility": lambda st: metrics.inextensibility(world, st),
              "writhe": lambda st: open_rod_writhe(st.vertex_x),
              "twist": lambda st: material_twist(st.vertex_x, st.material_frames()[0])}
    frames = min(int(params["frames"]), nsteps)
    run = record(sim, state, nsteps, frames=frames, progress=progress, probes=probes, warmup=False)
    wr, tw = np.asarray(run.probes["writhe"]), np.asarray(run.probes["twist"])
    lk = 2.0 * params["twist_rate"] * np.asarray(run.t) / (2.0 * math.pi)
    err = np.abs(tw + wr - (tw[0] + wr[0]) - lk)
    thin = from_arrays(world.rod_vertex_start, world.rod_closed, 0.1 * params["radius"],
                       skip=sim._joint.geometry.rod_skip)
    crossed = strands_crossed(thin, run.x) if frames == nsteps else -1
    x = state.vertex_x
    m = {**_common_metrics(run, world), "writhe": float(wr[-1]), "twist": float(tw[-1]),
         "link_imposed": float(lk[-1]), "link_error": float(err.max()),
         "end_to_end": float(np.linalg.norm(x[-1] - x[0])), "self_crossings": int(crossed),
         "inextensibility": float(np.max(run.probes["inextensibility"])),
         "failed_steps": int(np.sum(run.probes["stalled"][1:]))}
    traj = {"t": run.t, "x": run.x, "rod_offsets": np.array(world.rod_vertex_start), "writhe": wr, "twist": tw,
            "link_imposed": lk}
    return SceneResult(m, traj, plot=_plot_plectoneme, extra={"radius": params["radius"]}, world=world, state=state)


def _plot_plectoneme(result, out_dir):
    """The rod at three times (3D) and Tw, Wr, Tw + Wr against the imposed link over time."""
    from pathlib import Path

    from ..viz.plots import _set_equal_3d, figure_module

    plt = figure_module()
    tr = result.trajectory
    x, t = np.asarray(tr["x"]), np.asarray(tr["t"])
    idx = np.unique(np.linspace(0, len(x) - 1, 3).round().astype(int))
    fig = plt.figure(figsize=(16, 4))
    for rank, k in enumerate(idx):
        ax = fig.add_subplot(1, 4, rank + 1, projection="3d")
        ax.plot(x[k, :, 0], x[k, :, 1], x[k, :, 2], "-", color="tab:blue", linewidth=2)
        _set_equal_3d(ax, x[k])
        ax.set_title(f"t = {t[k]:.3g} s", fontsize=9)
    ax = fig.add_subplot(1, 4, 4)
    wr, tw, lk = np.asarray(tr["writhe"]), np.asarray(tr["twist"]), np.asarray(tr["link_imposed"])
    ax.plot(t, wr, label="writhe")
    ax.plot(t, tw, label="twist")
    ax.plot(t, tw + wr - tw[0] - wr[0], label="Tw + Wr (change)")
    ax.plot(t, lk, "k--", label="imposed link")
    ax.set_xlabel("t [s]")
    ax.set_ylabel("turns")
    ax.legend(fontsize=8)
    fig.suptitle("plectoneme (Zhao et al. Fig. 16)")
    fig.tight_layout()
    path = Path(out_dir) / "plectoneme.png"
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return [path]


__all__ = ["material_twist", "open_rod_writhe", "plectoneme_world", "polygon_writhe", "sag_theory", "springs_world"]
