"""Order of der-implicit's time integrators on the released cantilever (issue #15, item 1).

The ``cantilever`` scene's world (n = 50 vertices, L = 1 m, r = 0.01 m, E = 1e8 Pa, rho = 1000 kg/m^3,
damping 0.5 /s, released from straight under gravity) is stepped for 1 s by ``backward-euler`` and
``bdf2`` at a series of steps ``dt``; the error of a run is the largest distance, over the samples
every 0.02 s, between its tip and the tip of the same integrator at ``dt_ref`` (``--ref-factor``
times smaller than the smallest ``dt``), divided by L. Newton is run to convergence (``newton_iters``
30, ``gtol`` 1e-9 of the rod's weight, as the scene does for more than one iteration), so the error
is the integrator's; ``--newton-iters 1`` gives the sag-free paper's one iteration per step instead.

``--start released`` (the scene: gravity switched on at t = 0) excites every mode of the 50-vertex
rod, and the reference resolves modes the coarse steps cannot: the observed order of any
second-order scheme is reduced there (docs/integrators.md). ``--start ramped`` switches the weight
on smoothly over RAMP_TIME (a smooth solution: the scheme's own order); ``--start swing`` starts
from the static shape with a smooth initial velocity; ``--stretch`` stiffens the stretching.
Prints a markdown table with the observed slopes and writes a log-log figure.

    python bench/bench_integrator_order_der_implicit.py [--figure docs/figures/integrator_order_der_implicit.png]
"""
from __future__ import annotations

import argparse
import math
import os
import platform
import time

import numpy as np

from rodlab.scenes.cantilever_world import cantilever_points, cantilever_world
from rodlab.solvers import make_simulator
from rodlab.solvers.der_implicit import rod_model
from rodlab.world import WorldBuilder

PARAMS = dict(n=50, length=1.0, radius=0.01, E=1e8, G=1e8 / 3, rho=1000.0, g=9.81, damping=0.5)
DTS = (0.02, 0.01, 0.005, 0.0025, 0.00125, 0.000625)
RAMP_TIME = 0.25  # [s] the ramped start's gravity ramp
SWING_RATE, SWING_G = 5.0, 1.2  # swing start: v0 = SWING_RATE [1/s] (static shape under SWING_G g - that under g)
SAMPLE = 0.02  # [s] tip sampled every SAMPLE (a multiple of every dt)
T_END = 1.0


def ramp(t: float) -> float:
    """0 -> 1 over RAMP_TIME, twice continuously differentiable (``u^3 (10 - 15 u + 6 u^2)``)."""
    u = min(max(t / RAMP_TIME, 0.0), 1.0)
    return u**3 * (10.0 - 15.0 * u + 6.0 * u * u)


def make_world(params: dict, stretch: float = 1.0, g: float | None = None, ramped: bool = False):
    """The cantilever scene's der-implicit world; ``stretch`` > 1 multiplies the stretching stiffness
    ``E A``; ``g`` overrides the gravity [m/s^2]; ``ramped``: no gravity, but each vertex's weight as a
    point force growing by :func:`ramp` (the smooth release)."""
    p = dict(params, g=params["g"] if g is None else g)
    if ramped:
        w0 = make_world(p, stretch)
        b = WorldBuilder(gravity=(0.0, 0.0, 0.0), damping=float(p["damping"]))
        rod0 = w0.rods[0]
        first = lambda v: float(np.ravel(v)[0])  # noqa: E731  (uniform rod: one value per edge)
        rod = b.add_rod(rod0.rest_positions, bending=first(rod0.bending_stiffness),
                        twisting=first(rod0.twisting_stiffness), stretching=first(rod0.stretching_stiffness),
                        linear_density=first(rod0.linear_density), radius=first(rod0.radius), rest_d1=rod0.rest_d1)
        b.clamp(rod, "start")
        for i, m in enumerate(w0.vertex_mass):
            if i > 1:
                b.add_point_force(rod, i, lambda t, w=float(m) * float(p["g"]): (0.0, 0.0, -w * ramp(t)))
        return b.build()
    if stretch == 1.0:
        return cantilever_world(p, "der-implicit")
    pts = cantilever_points(p, "der-implicit")
    r, E, G = p["radius"], p["E"], p["G"]
    area, inertia = math.pi * r * r, 0.25 * math.pi * r**4
    b = WorldBuilder(gravity=(0.0, 0.0, -float(p["g"])), damping=float(p["damping"]))
    rod = b.add_rod(pts, bending=E * inertia, twisting=G * 2.0 * inertia, stretching=stretch * E * area,
                    linear_density=p["rho"] * area, radius=r, rest_d1=np.tile((0.0, 0.0, 1.0), (pts.shape[0] - 1, 1)))
    b.clamp(rod, "start")
    return b.build()


def tip_trajectory(integrator: str, dt: float, newton_iters: int, params: dict = PARAMS,
                   start: str = "released", stretch: float = 1.0) -> np.ndarray:
    """Tip positions (samples, 3) [m] every SAMPLE s up to T_END. ``start``: ``released`` (from
    straight, at rest) or ``swing`` (from the static equilibrium under gravity, with the initial
    velocity ``SWING_RATE (x_static(SWING_G g) - x_static(g))``, which stretches no edge to first
    order: a smooth solution, see the module docstring)."""
    world = make_world(params, stretch, ramped=start == "ramped")
    opts = {"newton_iters": newton_iters}
    if newton_iters > 1:
        model, _ = rod_model(world.rods[0])
        opts["gtol"] = 1e-9 * float(model.mass.sum()) * params["g"]
    sim = make_simulator(world, "der-implicit", dt=dt, integrator=integrator, **opts)
    state = sim.initial_state()
    if start == "swing":
        other = make_simulator(make_world(params, stretch, SWING_G * params["g"]), "der-implicit")
        s2 = other.initial_state()
        for sm, st in ((sim, state), (other, s2)):
            rep = sm.solve_static(st)
            if not rep.success:
                raise RuntimeError(rep.message)
        state.vertex_v[...] = SWING_RATE * (s2.vertex_x - state.vertex_x)
    elif start not in ("released", "ramped"):
        raise ValueError(f"start must be released, ramped or swing (got {start!r})")
    per = int(round(SAMPLE / dt))
    if abs(per * dt - SAMPLE) > 1e-12:
        raise ValueError(f"dt = {dt} must divide the sampling interval {SAMPLE} s")
    out = []
    for _ in range(int(round(T_END / SAMPLE))):
        sim.advance(state, per)
        out.append(state.vertex_x[-1].copy())
    return np.array(out)


def order_table(integrators, dts, ref_factor: int, newton_iters: int, start: str = "released", stretch: float = 1.0):
    """{integrator: (errors / L (len(dts),), wall seconds of the reference)}."""
    res = {}
    for integ in integrators:
        t0 = time.perf_counter()
        ref = tip_trajectory(integ, dts[-1] / ref_factor, newton_iters, start=start, stretch=stretch)
        wall = time.perf_counter() - t0
        err = np.array([np.linalg.norm(tip_trajectory(integ, dt, newton_iters, start=start, stretch=stretch) - ref,
                                       axis=1).max()
                        for dt in dts])
        res[integ] = (err / PARAMS["length"], wall)
    return res


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ref-factor", type=int, default=16, help="dt_ref = smallest dt / ref-factor")
    ap.add_argument("--newton-iters", type=int, default=30)
    ap.add_argument("--start", default="released", choices=("released", "ramped", "swing"))
    ap.add_argument("--stretch", type=float, default=1.0, help="stretching stiffness / (E A)")
    ap.add_argument("--dts", default=",".join(f"{d:g}" for d in DTS), help="steps [s], comma-separated, decreasing")
    ap.add_argument("--figure", default="", help="write the log-log figure here (png)")
    ap.add_argument("--n", type=int, default=PARAMS["n"], help="vertices (the spectrum's top grows like n^2)")
    ap.add_argument("--t-end", type=float, default=T_END, help="simulated time [s] (a multiple of the 0.02 s sampling)")
    a = ap.parse_args(argv)
    globals()["T_END"] = a.t_end  # read by tip_trajectory
    PARAMS["n"] = a.n
    dts = np.array([float(d) for d in a.dts.split(",")])
    integrators = ("backward-euler", "bdf2")
    res = order_table(integrators, dts, a.ref_factor, a.newton_iters, a.start, a.stretch)
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"Python {platform.python_version()}; "
          f"start {a.start}, stretching {a.stretch:g} E A, n = {PARAMS['n']}, {a.t_end:g} s, damping {PARAMS['damping']} /s, "
          f"newton_iters {a.newton_iters}, "
          f"dt_ref = {dts[-1] / a.ref_factor:g} s")
    print("\n| dt [s] | " + " | ".join(f"{i}: tip error / L | slope" for i in integrators) + " |")
    print("| --- | " + " | ".join("--- | ---" for _ in integrators) + " |")
    for k, dt in enumerate(dts):
        cells = []
        for integ in integrators:
            err = res[integ][0]
            slope = "" if k == 0 else f"{np.log(err[k - 1] / err[k]) / np.log(dts[k - 1] / dts[k]):.2f}"
            cells.append(f"{err[k]:.3e} | {slope}")
        print(f"| {dt:g} | " + " | ".join(cells) + " |")
    for integ in integrators:
        err = res[integ][0]
        fit = np.polyfit(np.log(dts), np.log(err), 1)[0]
        print(f"{integ}: least-squares slope over all dt {fit:.2f}")
    if a.figure:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(5, 4))
        for integ, mark in zip(integrators, ("o-", "s-")):
            ax.loglog(dts, res[integ][0], mark, label=integ)
        e1 = res["backward-euler"][0]
        e2 = res["bdf2"][0]
        ax.loglog(dts, e1[-1] * dts / dts[-1], "k:", lw=0.8, label="slope 1")
        ax.loglog(dts, e2[-1] * (dts / dts[-1]) ** 2, "k--", lw=0.8, label="slope 2")
        ax.set_xlabel("dt [s]")
        ax.set_ylabel("max tip error / L (1 s)")
        ax.set_title(f"der-implicit cantilever ({a.start}), n = {PARAMS['n']}")
        ax.legend()
        fig.tight_layout()
        fig.savefig(a.figure, dpi=120)
        print(f"wrote {a.figure}")


if __name__ == "__main__":
    main()
