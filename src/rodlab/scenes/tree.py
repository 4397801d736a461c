"""``tree``: rods joined at junctions by small rigid bodies, swaying and twisting in a gusty wind
under gravity (Bergou et al. 2008, Sec. 8, Fig. 12: 2158 vertices, 22 ms per step there).

The trunk is clamped at the ground. Every rod ends at a junction body; from it a continuing rod
and ``branches`` branch rods start, each welded by its first edge (the parent by its last edge),
so the junctions are Y/T couplings of 2 + ``branches`` rods. ``levels`` junction levels give
``(1 + branches)^(levels + 1) - 1) / branches`` rods; the ``vertices`` are shared out in
proportion to length (at least 5 per rod). Lengths shrink by ``length_ratio`` and radii by
``taper`` per level; directions are jittered with ``seed``. A junction body is a solid sphere of
the parent rod's radius whose mass is the welded vertices' lumped mass (which the dynamics gives
to the body) times ``body_mass_factor``.

Wind: linear drag ``drag (u(x, t) - v)`` per unit length with ``u`` a base wind of ``wind`` m/s
along +x gusting by ``gust`` (fraction) at ``gust_frequency``, plus a crosswind along y of half
that amplitude at 1.7 times the frequency; both gusts travel through the crown (phase varies with
position), so the crown bends and twists. Stepped by the explicit DER simulator with its rigid
bodies (:mod:`rodlab.der.bodies`).
"""
from __future__ import annotations

import math

import numpy as np

from .. import metrics
from ..experiment import record
from ..solvers import make_simulator
from ..world import WorldBuilder
from .registry import Param, SceneResult, register


def _unit(v):
    return v / np.linalg.norm(v)


def tree_layout(levels: int, branches: int, trunk_length: float, length_ratio: float, spread_deg: float, seed: int):
    """The rods of the tree: list of ``(start, direction, length, level, parent)``, parent -1
    for the trunk; children listed after their parent, continuing rod first."""
    rng = np.random.default_rng(seed)
    rods = [(np.zeros(3), np.array([0.0, 0.0, 1.0]), float(trunk_length), 0, -1)]
    k = 0
    while k < len(rods):
        start, d, length, level, _ = rods[k]
        if level < levels:
            end = start + length * d
            # a frame around the parent's direction
            a = _unit(np.cross(d, [1.0, 0.0, 0.0] if abs(d[0]) < 0.9 else [0.0, 1.0, 0.0]))
            b = np.cross(d, a)
            phase = rng.uniform(0.0, 2.0 * np.pi)
            spread = math.radians(spread_deg)
            children = [_unit(d + 0.15 * rng.normal(size=3))]  # the continuing rod, slightly bent
            for c in range(branches):
                az = phase + 2.0 * np.pi * c / branches
                tilt = spread * rng.uniform(0.8, 1.2)
                u = math.cos(tilt) * d + math.sin(tilt) * (math.cos(az) * a + math.sin(az) * b)
                u = _unit(u + np.array([0.0, 0.0, 0.25]))  # branches grow upward
                children.append(u)
            for c, u in enumerate(children):
                scale = length_ratio * (1.0 if c == 0 else rng.uniform(0.75, 0.95))
                rods.append((end, u, length * scale, level + 1, k))
        k += 1
    return rods


def gusty_tree_wind(speed: float, gust: float, frequency: float, wavelength: float):
    """``u(x, t)``: base wind ``speed`` along +x gusting by ``gust`` (fraction) at ``frequency`` Hz,
    crosswind along y at half the amplitude and 1.7 times the frequency; gusts travel with
    ``wavelength`` [m] through space."""
    k = 2.0 * math.pi / wavelength
    w = 2.0 * math.pi * frequency

    def velocity(x, t):
        u = np.zeros_like(x)
        u[:, 0] = speed * (1.0 + gust * np.sin(w * t - k * x[:, 0] + 0.5 * k * x[:, 2]))
        u[:, 1] = 0.5 * speed * gust * np.sin(1.7 * w * t + 1.3 - k * x[:, 2])
        return u

    return velocity


def build_tree(p):
    """The tree world from the scene parameters ``p`` (module docstring); returns ``(world,
    layout)``."""
    layout = tree_layout(p["levels"], p["branches"], p["trunk_length"], p["length_ratio"], p["spread"], p["seed"])
    lengths = np.array([rod[2] for rod in layout])
    n_per = np.maximum(5, np.round(p["vertices"] * lengths / lengths.sum())).astype(int)
    # hit the total exactly where rounding allows: adjust the longest rods
    order = np.argsort(-lengths)
    diff = int(p["vertices"] - n_per.sum())
    i = 0
    while diff != 0 and i < 10 * len(order):
        r = order[i % len(order)]
        step = 1 if diff > 0 else -1
        if n_per[r] + step >= 5:
            n_per[r] += step
            diff -= step
        i += 1
    E, rho = p["E"], p["rho"]
    G = E / (2.0 * (1.0 + p["poisson"]))
    b = WorldBuilder(gravity=(0.0, 0.0, -p["g"]), damping=p["damping"])
    radii = [p["trunk_radius"] * p["taper"] ** rod[3] for rod in layout]
    gaps = {}
    for r, (start, d, length, level, parent) in enumerate(layout):
        n = int(n_per[r])
        if parent >= 0:  # start a little way out from the junction centre (the parent's end)
            start = start + gaps[parent] * d
        pts = start + np.linspace(0.0, length, n)[:, None] * d
        b.add_rod(pts, E=E, G=G, rho=rho, radius=radii[r])
        gaps[r] = 0.5 * length / (n - 1)
    b.clamp(0, "start")
    world0 = b.build()
    for r, (start, d, length, level, parent) in enumerate(layout):
        children = [c for c, rod in enumerate(layout) if rod[4] == r]
        if not children:
            continue
        centre = start + length * d if parent < 0 else start + (gaps[parent] + length) * d
        ends = [(r, "end")] + [(c, "start") for c in children]
        welded_mass = 0.0
        for rr, end in ends:
            m = world0.rods[rr].vertex_masses
            welded_mass += float(m[-2:].sum() if end == "end" else m[:2].sum())
        mass = p["body_mass_factor"] * welded_mass
        rad = radii[r]
        body = b.add_body(mass, np.full(3, 0.4 * mass * rad * rad), position=centre)
        for rr, end in ends:
            b.weld(rr, end, body)
    if p["wind"] > 0 and p["drag"] > 0:
        b.set_wind(gusty_tree_wind(p["wind"], p["gust"], p["gust_frequency"], p["gust_wavelength"]), p["drag"])
    return b.build(), layout


def _plot_tree(world, rec, body_frames, out_dir):
    from ..viz.plots import figure_module

    plt = figure_module()
    F = rec.x.shape[0]
    picks = sorted(set(int(round(k)) for k in np.linspace(0, F - 1, 4)))
    fig, axes = plt.subplots(2, len(picks), figsize=(3.6 * len(picks), 7.5), squeeze=False)
    pts = rec.x.reshape(-1, 3)
    lo, hi = pts.min(axis=0), pts.max(axis=0)
    for col, f in enumerate(picks):
        x = rec.x[f]
        for row, (a, name) in enumerate(((0, "x (front view, wind +x)"), (1, "y (side view)"))):
            ax = axes[row, col]
            for r in range(world.n_rods):
                seg = x[world.rod_vertices(r)]
                lw = 0.6 + 3.0 * world.rods[r].radius / world.rods[0].radius
                ax.plot(seg[:, a], seg[:, 2], color="saddlebrown" if r == 0 else "forestgreen", lw=lw)
            bx = body_frames[f]
            ax.plot(bx[:, a], bx[:, 2], "ko", ms=2.5)
            ax.set_xlim(min(lo[0], lo[1]) - 0.1, max(hi[0], hi[1]) + 0.1)
            ax.set_ylim(lo[2] - 0.1, hi[2] + 0.1)
            ax.set_aspect("equal")
            ax.set_xlabel(f"{name} [m]", fontsize=8)
            ax.set_ylabel("z [m]", fontsize=8)
            if row == 0:
                ax.set_title(f"t = {rec.t[f]:.3g} s", fontsize=9)
    fig.suptitle(f"tree: {world.n_rods} rods, {world.n_bodies} junction bodies, {world.n_vertices} vertices")
    fig.tight_layout()
    from pathlib import Path

    path = Path(out_dir) / "tree.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return [path]


@register("tree", "rods joined by rigid junction bodies, swaying and twisting in a gusty wind (Bergou 2008, Fig. 12)", [
    Param("levels", 4, "junction levels (each rod of level < levels ends at a junction body)", low=0, high=8),
    Param("branches", 1, "branch rods per junction besides the continuing rod (2: Y/T junctions of 3 children)", low=1, high=3),
    Param("vertices", 2158, "total vertices of all rods (at least 5 per rod)", low=5, high=200000),
    Param("t_end", 0.5, "simulated time [s]", low=0.0),
    Param("dt", 0.0, "time step [s]; 0 = suggested_time_step of the stiffest rod", low=0.0),
    Param("wind", 6.0, "mean wind speed along +x [m/s]", low=0.0),
    Param("gust", 0.6, "gust amplitude as a fraction of the mean wind", low=0.0, high=2.0),
    Param("gust_frequency", 0.8, "gust frequency [Hz]", low=0.0, low_open=True),
    Param("gust_wavelength", 3.0, "distance over which a gust's phase turns once [m]", low=0.0, low_open=True),
    Param("drag", 0.3, "linear air drag per unit length [N s/m^2]", low=0.0),
    Param("trunk_length", 2.5, "trunk length [m]", low=0.0, low_open=True),
    Param("length_ratio", 0.72, "child over parent rod length", low=0.1, high=1.5),
    Param("spread", 35.0, "branch angle from the parent's direction [deg]", low=0.0, high=90.0),
    Param("trunk_radius", 0.06, "trunk radius [m]", low=0.0, low_open=True),
    Param("taper", 0.8, "child over parent radius", low=0.1, high=1.0),
    Param("E", 1.0e7, "Young's modulus [Pa] (soft: the crown sways visibly)", low=0.0, low_open=True),
    Param("poisson", 0.3, "Poisson ratio (G = E / (2 (1 + nu)))", low=0.0, high=0.5),
    Param("rho", 700.0, "density [kg/m^3]", low=0.0, low_open=True),
    Param("body_mass_factor", 2.0, "junction body mass over its welded vertices' lumped mass", low=0.1),
    Param("g", 9.81, "gravity [m/s^2]", low=0.0),
    Param("damping", 0.5, "viscous damping rate of rods and bodies [1/s]", low=0.0),
    Param("projection_tol", 1e-8, "fast projection tolerance on max |e.e - ebar^2| / ebar^2 (the paper's 1e-8)", low=0.0, low_open=True, high=1e-6),
    Param("frames", 60, "frames kept", low=2, high=10000),
    Param("projection", "fast", "explicit DER inextensibility: fast (Goldenthal fast projection) or symplectic (RATTLE: no projection damping)", choices=("fast", "symplectic")),
    Param("seed", 0, "random seed of the branch directions and lengths", low=0),
], paper="Bergou et al. 2008, Sec. 8, Fig. 12")
def run_tree(p, progress) -> SceneResult:
    world, layout = build_tree(p)
    options = {"projection_tol": p["projection_tol"], "projection": p["projection"]}
    if p["dt"] > 0:
        options["dt"] = p["dt"]
    sim = make_simulator(world, "der", **options)
    state = sim.initial_state()
    nsteps = int(math.ceil(p["t_end"] / sim.dt - 1e-9))
    leaves = [r for r in range(world.n_rods) if not any(rod[4] == r for rod in layout)]
    tips0 = np.array([state.rod_x(r)[-1] for r in leaves])

    def energy_probe(s):
        e = sim.energies(s)
        return np.array([e["kinetic_rods"], e["kinetic_bodies"], e["elastic"], e["gravity"], e["total"]])

    probes = {"energy": energy_probe, "weld_error": sim.weld_error, "body_x": lambda s: np.array(s.body_x),
              "tips": lambda s: np.array([s.rod_x(r)[-1] for r in leaves]),
              "projection_iters": lambda s: float(sim.work.rod_diag[:, 0].max())}
    rec = record(sim, state, nsteps, frames=p["frames"], progress=progress, probes=probes)
    energy = rec.probes["energy"]
    tip_disp = np.linalg.norm(rec.probes["tips"] - tips0[None], axis=2)
    summary = rec.summary(world.n_vertices)
    m = {"n_vertices": world.n_vertices, "n_rods": world.n_rods, "n_bodies": world.n_bodies, "dt": sim.dt,
         **summary, "ms_per_step": summary["us_per_step"] / 1000.0,
         "inextensibility": metrics.inextensibility(world, state),
         "max_weld_error": float(rec.probes["weld_error"].max()),
         "max_tip_displacement": float(tip_disp.max()),
         "projection_iters_max": float(rec.probes["projection_iters"].max()),
         "kinetic_rods": float(energy[-1, 0]), "kinetic_bodies": float(energy[-1, 1]),
         "elastic_energy": float(energy[-1, 2]), "gravity_potential": float(energy[-1, 3]),
         "total_energy": float(energy[-1, 4]), "total_energy_initial": float(energy[0, 4]),
         "max_kinetic_energy": float((energy[:, 0] + energy[:, 1]).max()),
         "total_mass": world.total_mass(), "height": float(state.vertex_x[:, 2].max())}
    traj = {"t": rec.t, "x": rec.x, "rod_offsets": np.array(world.rod_vertex_start), "body_x": rec.probes["body_x"],
            "energy": energy, "energy_columns": np.array(["kinetic_rods", "kinetic_bodies", "elastic", "gravity", "total"]),
            "weld_error": rec.probes["weld_error"], "tip_displacement": tip_disp}
    body_frames = rec.probes["body_x"]
    return SceneResult(m, traj, plot=lambda result, out_dir: _plot_tree(world, rec, body_frames, out_dir),
                       world=world, state=state)
