"""Figures of the rod / rigid-body coupling (Bergou et al. 2008, Sec. 8, 9.4) into docs/figures/.

    python bench/figures_coupling.py      # ~40 s on this machine

coupling_fig11_wilberforce.png      vertical and torsional mode energies of the Wilberforce pendulum (Fig. 11)
coupling_fig6_torque_transducer.png energies of the two bodies, the rod and the total (Fig. 6)
coupling_torsion_pendulum.png       torsion pendulum: body angle vs the closed form cos(2 pi t / T)
"""
from __future__ import annotations

import os
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

import rodlab  # noqa: E402
from rodlab.viz.plots import figure_module  # noqa: E402

FIG = Path(__file__).resolve().parents[1] / "docs" / "figures"


def wilberforce(plt):
    r = rodlab.run_scene("wilberforce")
    tr, m = r.trajectory, r.metrics
    fig, (a0, a1) = plt.subplots(2, 1, figsize=(7, 5), sharex=True)
    a0.plot(tr["t"], tr["z"] * 100, "r-", lw=0.6, label="vertical displacement [cm]")
    a0.plot(tr["t"], np.unwrap(tr["angle"]) - tr["angle"][0], "b-", lw=0.6, label="rotation [rad]")
    a0.legend(loc="upper right", fontsize=8)
    a1.plot(tr["t"], tr["energy_vertical"] * 1e3, "r-", label="vertical mode")
    a1.plot(tr["t"], tr["energy_torsional"] * 1e3, "b-", label="torsional mode")
    a1.set_xlabel("t [s]")
    a1.set_ylabel("mode energy [mJ]")
    a1.legend(loc="upper right", fontsize=8)
    a0.set_title(f"Wilberforce pendulum: exchange period {m['exchange_period']:.1f} s, "
                 f"max torsional fraction {m['max_fraction_torsional']:.3f}", fontsize=9)
    fig.tight_layout()
    fig.savefig(FIG / "coupling_fig11_wilberforce.png", dpi=120)
    plt.close(fig)


def transducer(plt):
    r = rodlab.run_scene("torque-transducer", periods=3.0, wobble=1.0)
    tr, m = r.trajectory, r.metrics
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(tr["t"], tr["energy_a"], label="body a (spun)")
    ax.plot(tr["t"], tr["energy_b"], label="body b")
    ax.plot(tr["t"], tr["energy_rod"], label="rod")
    ax.plot(tr["t"], tr["energy_total"], "k--", label="total")
    ax.set_xlabel("t [s]")
    ax.set_ylabel("energy [J]")
    ax.set_title(f"torque transducer: energy drift {m['energy_drift']:.1e}, period error {m['period_error']:.1e}", fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(FIG / "coupling_fig6_torque_transducer.png", dpi=120)
    plt.close(fig)


def torsion(plt):
    from rodlab import metrics
    from rodlab.scenes.coupling_scenes import disk_inertia, set_body_velocity
    from rodlab.solvers import make_simulator
    from rodlab.world import WorldBuilder

    n, L, beta = 10, 0.5, 0.5
    x = np.zeros((n, 3))
    x[:, 2] = -np.linspace(0, L, n)
    b = WorldBuilder(gravity=(0, 0, -9.81))
    r = b.add_rod(x, bending=1.0, twisting=beta, linear_density=0.01)
    b.clamp(r, "start")
    inertia = disk_inertia(1.0, 0.1, 0.01, axis=2)
    b.weld(r, "end", b.add_body(1.0, inertia, position=x[-2:].mean(0) + [0, 0, -0.02]))
    sim = make_simulator(b.build(), "der", projection="symplectic")
    s = sim.initial_state()
    set_body_velocity(sim, s, 0, None, [0, 0, 1.0])
    Leff = np.linalg.norm(x[-2:].mean(0) - x[:2].mean(0))
    T = 2 * np.pi * np.sqrt(inertia[2] * Leff / beta)
    t, a = [0.0], [0.0]
    for _ in range(300):
        sim.advance(s, max(1, int(3 * T / 300 / sim.dt)))
        R = metrics.body_rotation(s, 0)
        t.append(s.t)
        a.append(np.arctan2(R[1, 0], R[0, 0]))
    t = np.array(t)
    amp = 1.0 * T / (2 * np.pi)
    fig, ax = plt.subplots(figsize=(7, 3.5))
    ax.plot(t, a, "b.", ms=3, label="der simulator, rigid body")
    tt = np.linspace(0, t[-1], 600)
    ax.plot(tt, amp * np.sin(2 * np.pi * tt / T), "k-", lw=0.8, label="closed form")
    ax.set_xlabel("t [s]")
    ax.set_ylabel("body angle [rad]")
    ax.set_title(f"torsion pendulum, T = 2 pi sqrt(I L / GJ) = {T:.4f} s", fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(FIG / "coupling_torsion_pendulum.png", dpi=120)
    plt.close(fig)


def main():
    FIG.mkdir(parents=True, exist_ok=True)
    plt = figure_module()
    for job in (torsion, transducer, wilberforce):
        job(plt)
        print(f"wrote {job.__name__}")


if __name__ == "__main__":
    main()
