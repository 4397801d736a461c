"""Knot scenes of the compact rod with self contact (issue "Contact and friction"): ``knot-tighten``,
Zhao, Lin, Wang, Bao and Huang, "Efficient and Stable Simulation of Inextensible Cosserat Rods by
a Compact Representation" (Computer Graphics Forum, 2024), Figs. 15 and 13.

An overhand knot (an open trefoil with straight tails, :func:`overhand_knot_points`), pinned at one
end, is pulled at the other along the line through both: ``force`` [N] until ``t_switch``, then
``force_tight`` [N], and tightens by self contact (edge-edge constraints of the paper's
App. B in the compact method's active set, :mod:`rodlab.compact.contact_world`).
"""
from __future__ import annotations

import math

import numpy as np

from ..contact import from_arrays, impacts, min_gap
from ..experiment import record, warm_up
from ..model import require
from ..solvers import make_simulator
from ..world import WorldBuilder
from .registry import Param, SceneResult, register


def _trefoil(t):
    return np.stack([np.sin(t) + 2 * np.sin(2 * t), np.cos(t) - 2 * np.cos(2 * t), -np.sin(3 * t)], axis=-1)


def _trefoil_tangent(t):
    d = np.stack([np.cos(t) + 4 * np.cos(2 * t), -np.sin(t) + 4 * np.sin(2 * t), -3 * np.cos(3 * t)], axis=-1)
    return d / np.linalg.norm(d)


def overhand_knot_points(n: int, *, scale: float = 0.2, cut: float = 0.5, tail: float = 1.2) -> np.ndarray:
    """An overhand knot as a polyline of ``n`` vertices (n, 3) [m], equally spaced in arc length.

    The trefoil ``(sin t + 2 sin 2t, cos t - 2 cos 2t, -sin 3t)`` scaled by ``scale`` [m] is cut
    open at its outermost point ``t = pi`` (the parameter interval ``pi +- cut`` is removed), and
    straight tails of length ``tail`` [m] continue each end along its tangent. The result is turned
    so that its two ends lie on the x axis, symmetric about the origin (the first end at -x).
    With the defaults and ``n = 101`` the segments are 0.073 m long and non-neighbouring segments
    are at least 0.08 m apart (centre lines): clearance for a rod of radius 0.03 m.
    """
    require(isinstance(n, (int, np.integer)) and n >= 10, f"n must be an integer >= 10 (got {n!r})")
    require(scale > 0 and 0 < cut < math.pi / 2 and tail >= 0,
            f"scale must be > 0 m, cut in (0, pi/2), tail >= 0 m (got {scale}, {cut}, {tail})")
    t = np.linspace(math.pi + cut, 3 * math.pi - cut, 4000)
    curve = scale * _trefoil(t)
    a, b = _trefoil_tangent(t[0]), _trefoil_tangent(t[-1])
    s = np.linspace(0.0, tail, 800)[1:]
    pts = np.concatenate([curve[0] - s[::-1, None] * a, curve, curve[-1] + s[:, None] * b])
    arc = np.concatenate([[0.0], np.cumsum(np.linalg.norm(np.diff(pts, axis=0), axis=1))])
    u = np.linspace(0.0, arc[-1], n)
    x = np.stack([np.interp(u, arc, pts[:, k]) for k in range(3)], axis=1)
    # the ends on the x axis: e1 along the ends' chord, e3 normal to the knot's mean plane
    e1 = x[-1] - x[0]
    e1 /= np.linalg.norm(e1)
    e3 = np.array([0.0, 0.0, 1.0]) - e1[2] * e1
    e3 /= np.linalg.norm(e3)
    e2 = np.cross(e3, e1)
    x = (x - 0.5 * (x[0] + x[-1])) @ np.stack([e1, e2, e3], axis=1)
    return np.ascontiguousarray(x)


def _hermite(p0, m0, p1, m1, u):
    """Cubic Hermite curve from ``p0`` (tangent ``m0``) to ``p1`` (tangent ``m1``) at ``u`` in [0, 1]."""
    u = u[:, None]
    return ((2 * u**3 - 3 * u**2 + 1) * p0 + (u**3 - 2 * u**2 + u) * m0 + (-2 * u**3 + 3 * u**2) * p1
            + (u**3 - u**2) * m1)


def open_trefoil_points(n: int, *, scale: float = 0.2, cut: float = 0.5, drop: float = 0.4, side: float = 0.35,
                        reach: float = 1.5, tail: float = 1.0) -> np.ndarray:
    """An overhand knot whose two straight tails lie on one line, the x axis: a polyline of ``n``
    vertices (n, 3) [m], equally spaced in arc length (chords within 1 %), ends at ``-x`` and ``+x`` symmetric about
    the origin, both end tangents along +x (ends that clamps can twist about x).

    The trefoil ``(sin t + 2 sin 2t, cos t - 2 cos 2t, -sin 3t)`` (scaled by ``scale`` [m]) is
    cut open at its lowest point ``P = (0, -3, 0)`` (``t = pi``, parameter interval ``pi +- cut``
    removed). The tails lie on the line through ``P - drop y`` along the curve's tangent at P,
    ``T = (1, 0, 1) / sqrt 2``; the whole curve lies in ``y >= -3`` and touches it only at P, so the
    tails, below it, never pierce the knot: closed through infinity the curve is a trefoil. Each
    end of the cut curve joins its tail at ``reach`` from the foot of P by a cubic Hermite arc
    (matching tangents), pushed sideways by ``+-side * sin(pi u)`` along ``T x y`` so the two arcs
    pass beside each other; the tails run ``tail`` further. ``drop``, ``side``, ``reach``,
    ``tail``: in units of ``scale``. With the defaults and ``n = 60`` (rod length 6.4 m, segments
    0.116 m) segments that share no vertex are at least 0.133 m apart (centre lines): clearance
    for a rod of radius up to 0.06 m.
    """
    require(isinstance(n, (int, np.integer)) and n >= 10, f"n must be an integer >= 10 (got {n!r})")
    require(scale > 0 and 0 < cut < math.pi / 2 and drop > 0 and side > 0 and reach > 0 and tail >= 0,
            f"scale, drop, side and reach must be > 0, cut in (0, pi/2), tail >= 0 (got {scale}, {drop}, {side}, "
            f"{reach}, {cut}, {tail})")
    tx, ey = np.array([1.0, 0.0, 1.0]) / math.sqrt(2.0), np.array([0.0, 1.0, 0.0])
    side_dir = np.cross(tx, ey)
    t = np.linspace(math.pi + cut, 3 * math.pi - cut, 4000)
    knot = _trefoil(t)
    foot = np.array([0.0, -3.0, 0.0]) - drop * ey
    u = np.linspace(0.0, 1.0, 400)
    bump = np.sin(math.pi * u)[:, None] * side * side_dir
    a0, b1 = foot - reach * tx, foot + reach * tx
    la, lb = np.linalg.norm(knot[0] - a0), np.linalg.norm(b1 - knot[-1])
    arc_a = _hermite(a0, la * tx, knot[0], la * _trefoil_tangent(t[0]), u) + bump
    arc_b = _hermite(knot[-1], lb * _trefoil_tangent(t[-1]), b1, lb * tx, u) - bump
    s = np.linspace(0.0, tail, 300)[1:]
    pts = scale * np.concatenate([a0 - s[::-1, None] * tx, arc_a[:-1], knot, arc_b[1:], b1 + s[:, None] * tx])
    arc = np.concatenate([[0.0], np.cumsum(np.linalg.norm(np.diff(pts, axis=0), axis=1))])
    w = np.linspace(0.0, arc[-1], n)
    x = np.stack([np.interp(w, arc, pts[:, k]) for k in range(3)], axis=1)
    frame = np.stack([tx, side_dir, np.cross(tx, side_dir)], axis=1)  # T -> x
    return np.ascontiguousarray((x - 0.5 * (x[0] + x[-1])) @ frame)


def knot_world(params):
    """The knot-tighten world: an overhand knot of ``n`` vertices (:func:`overhand_knot_points`),
    self contact on (thickness: the rod's radius), no gravity; the first end pinned, the last
    pulled along +x (away from it) by ``force`` [N] for ``t < t_switch``, then ``force_tight``
    [N], each reached linearly over ``ramp`` [s] (the rod is so light that a force applied at once
    throws its tail metres in one step): a tension of that force through the knot. (Opposite forces on a free rod would do the
    same, but the rod is so light (2.8e-4 kg/m) that the momentum error of an unconverged step
    would leave it drifting.)"""
    x = overhand_knot_points(params["n"], scale=params["knot_scale"])
    b = WorldBuilder(damping=params["damping"])
    r = b.add_rod(x, E=params["E"], G=params["G"], rho=params["rho"], radius=params["radius"])
    f1, f2, ts, ramp = params["force"], params["force_tight"], params["t_switch"], params["ramp"]

    def pull(t, sign):
        """``force`` reached over ``ramp`` from 0, then ``force_tight`` over ``ramp`` from t_switch."""
        if ramp <= 0:
            f = f1 if t < ts - 1e-12 else f2
        elif t < ts:
            f = f1 * min(1.0, t / ramp)
        else:
            f = f1 + (f2 - f1) * min(1.0, (t - ts) / ramp)
        return np.array([sign * f, 0.0, 0.0])

    b.pin(r, 0)
    b.add_point_force(r, -1, lambda t: pull(t, 1.0))
    b.set_contact(rods=True)
    return b.build()


def strands_crossed(geometry, x_frames) -> int:
    """Steps (pairs of consecutive frames (F, N, 3)) in which two non-neighbouring centre lines came
    within ``geometry``'s radii of each other, moving linearly over the step (continuous detection,
    :func:`rodlab.contact.impacts`): with a small radius, the steps in which a strand passed
    through another."""
    count = 0
    for k in range(len(x_frames) - 1):
        if impacts(geometry, x_frames[k], x_frames[k + 1], obstacles=False).toi.shape[0]:
            count += 1
    return count


KNOT_PARAMS = [
    Param("n", 101, "number of vertices (the paper: 100 segments)", low=20, high=2001),
    Param("knot_scale", 0.2, "scale of the trefoil the knot is cut from [m]", low=0.0, low_open=True),
    Param("radius", 0.03, "rod radius [m] (contact thickness: twice it)", low=0.0, low_open=True),
    Param("E", 20e6, "Young's modulus [Pa]", low=0.0, low_open=True),
    Param("G", 20e6, "shear modulus [Pa]", low=0.0, low_open=True),
    Param("rho", 0.1, "density [kg/m^3]", low=0.0, low_open=True),
    Param("force", 200.0, "pulling force at each end [N] until t_switch", low=0.0),
    Param("force_tight", 20000.0, "pulling force at each end [N] from t_switch on", low=0.0),
    Param("t_switch", 0.6, "time of the switch to force_tight [s]", low=0.0),
    Param("ramp", 0.03, "each force is reached linearly over this time [s] (0: at once)", low=0.0),
    Param("t_end", 0.9, "simulated time [s]", low=0.0, low_open=True),
    Param("dt", 0.003, "time step [s]", low=0.0, low_open=True),
    Param("damping", 0.0, "viscous damping rate [1/s]", low=0.0),
    Param("max_newton", 5, "SQP iterations per step (the paper: 5; more while a contact is violated)", low=1, high=1000),
    Param("integrator", "backward-euler", "time integration (docs/integrators.md): backward-euler; bdf2 is refused "
          "with rod contact", choices=("backward-euler", "bdf2")),
]


@register("knot-tighten", "compact Cosserat: an overhand knot pulled tight by 200 N then 20000 N, self contact "
          "(Zhao et al. Figs. 15, 13)", KNOT_PARAMS, paper="compact-inextensible-cosserat-zhao")
def run_knot(params, progress):
    """Metrics: ``min_gap`` [m] (smallest gap between non-neighbouring segment surfaces over every
    step; negative = overlap), ``mean_contacts`` / ``max_contacts`` (active edge-edge constraints
    per step), ``ms_per_step`` (wall time inside ``advance``), ``n_vertices``, ``knot_preserved``
    (no step in which two non-neighbouring centre lines came within 0.2 radius of each other,
    checked by continuous detection over every step: no strand passed through another),
    ``crossing_steps``, ``start_min_gap`` [m] (clearance of the initial knot), ``end_to_end`` [m]
    (distance of the two ends at the end), ``knot_extent`` [m] (diagonal of the vertices' y-z
    bounding box at the end: the knot's size across the pull), ``inextensibility``,
    ``newton_iters`` per step, ``failed_steps``."""
    from .. import metrics

    world = knot_world(params)
    sim = make_simulator(world, "compact", dt=params["dt"], newton_iters=params["max_newton"],
                         integrator=params.get("integrator", "backward-euler"))
    state = sim.initial_state()
    nsteps = max(1, int(round(params["t_end"] / params["dt"])))
    thin = from_arrays(world.rod_vertex_start, world.rod_closed, 0.1 * params["radius"],
                       skip=sim._joint.geometry.rod_skip)
    start_gap = min_gap(sim._joint.geometry, state.vertex_x)
    warm_up(sim, state)
    probes = {"stalled": lambda st: sim.last_call.stalled_steps,
              "inextensibility": lambda st: metrics.inextensibility(world, st)}
    run = record(sim, state, nsteps, frames=nsteps, progress=progress, probes=probes, warmup=False)
    crossed = strands_crossed(thin, run.x)
    summary = run.summary(world.n_vertices)
    x = state.vertex_x
    yz = x[:, 1:]
    m = {**run.contact_summary(), "ms_per_step": 1e-3 * summary["us_per_step"], "n_vertices": world.n_vertices,
         "knot_preserved": crossed == 0, "crossing_steps": int(crossed), "start_min_gap": float(start_gap),
         "end_to_end": float(np.linalg.norm(x[-1] - x[0])),
         "knot_extent": float(np.linalg.norm(yz.max(axis=0) - yz.min(axis=0))),
         "inextensibility": float(np.max(run.probes["inextensibility"])), "newton_iters": summary["newton_iters"],
         "steps": run.steps, "failed_steps": int(np.sum(run.probes["stalled"][1:]))}
    keep = np.unique(np.linspace(0, len(run.t) - 1, min(len(run.t), 120)).round().astype(int))
    traj = {"t": run.t[keep], "x": run.x[keep], "rod_offsets": np.array(world.rod_vertex_start)}
    return SceneResult(m, traj, plot=_plot_knot, extra={"radius": params["radius"], "t_switch": params["t_switch"]},
                       world=world, state=state)


def _plot_knot(result, out_dir):
    """The rod at four times (3D, coloured along its length) and the knot's three projections at
    the end (the vertices where the rod bends, with three on either side)."""
    from pathlib import Path

    from ..viz.plots import _set_equal_3d, figure_module

    plt = figure_module()
    x, t = np.asarray(result.trajectory["x"]), np.asarray(result.trajectory["t"])
    idx = np.unique(np.linspace(0, len(x) - 1, 4).round().astype(int))
    fig = plt.figure(figsize=(14, 7))
    for rank, k in enumerate(idx):
        ax = fig.add_subplot(2, 4, rank + 1, projection="3d")
        xs = x[k]
        c = np.linspace(0, 1, len(xs))
        for i in range(len(xs) - 1):
            ax.plot(xs[i:i + 2, 0], xs[i:i + 2, 1], xs[i:i + 2, 2], color=plt.cm.viridis(c[i]), linewidth=4)
        mid = np.abs(xs[:, 0] - 0.5 * (xs[0, 0] + xs[-1, 0])) < 0.6
        _set_equal_3d(ax, xs[mid] if mid.sum() > 3 else xs)
        ax.set_title(f"t = {t[k]:.3g} s", fontsize=9)
    end = x[-1]
    # the knot: the vertices away from the straight tails (bending between their neighbours)
    e = np.diff(end, axis=0)
    e /= np.linalg.norm(e, axis=1)[:, None]
    bent = np.nonzero(np.einsum("ij,ij->i", e[:-1], e[1:]) < 0.99)[0] + 1
    lo, hi = (max(int(bent.min()) - 3, 0), min(int(bent.max()) + 4, len(end))) if bent.size else (0, len(end))
    end = end[lo:hi]
    for j, (i0, i1) in enumerate(((0, 1), (1, 2), (0, 2))):
        ax = fig.add_subplot(2, 3, 4 + j)
        ax.plot(end[:, i0], end[:, i1], "-", color="0.3", linewidth=1)
        ax.scatter(end[:, i0], end[:, i1], c=np.linspace(0, 1, len(end)), s=8)
        ax.set_aspect("equal", adjustable="datalim")
        ax.set_xlabel(f"{'xyz'[i0]} [m]")
        ax.set_ylabel(f"{'xyz'[i1]} [m]")
        ax.set_title(f"the knot at t = {t[-1]:.3g} s (vertices {lo}-{hi - 1})", fontsize=9)
        ax.grid(alpha=0.3)
    fig.suptitle("knot-tighten: overhand knot pulled tight (Zhao et al. Figs. 15, 13)")
    fig.subplots_adjust(left=0.05, right=0.98, top=0.92, bottom=0.07, wspace=0.3, hspace=0.25)
    path = Path(out_dir) / "knot.png"
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return [path]


__all__ = ["knot_world", "open_trefoil_points", "overhand_knot_points", "strands_crossed"]
