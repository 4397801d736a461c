"""Regenerate the DER paper figures into docs/figures/ (Bergou et al. 2008).

    python bench/figures_der.py            # all figures (~2 minutes on 2 cores)
    python bench/figures_der.py --only michell

der_fig7_helical_buckling.png  envelope f(phi) vs s/s* for several n against the analytic tanh^2 (Fig. 7 left)
der_fig8_michell_map.png       stability of the twisted ring over (beta/alpha, twist) vs 2 pi sqrt(3) alpha/beta (Fig. 8 right)
der_fig5_twist_asymmetry.png   V-shaped and semicircular anisotropic rods twisted at one end (Fig. 5)
der_fig2_perversion.png        helices of opposite hand joined by a perversion (Fig. 2)
"""
from __future__ import annotations

import argparse
import math
import os
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

import rodlab  # noqa: E402
from rodlab.viz.plots import figure_module  # noqa: E402

FIG = Path(__file__).resolve().parents[1] / "docs" / "figures"


def fig7(plt):
    fig, ax = plt.subplots(figsize=(6, 4))
    ss = np.linspace(-3, 3, 400)
    ax.plot(ss, np.tanh(ss) ** 2, "k-", lw=2, label="analytical")
    rows = []
    for n in (40, 60, 80, 110, 140, 180, 320):
        r = rodlab.run_scene("helical-buckling", n=n)
        s_star = r.metrics["s_star_theory"]
        u = r.trajectory["envelope_s"] / s_star
        keep = np.abs(u) <= 3
        ax.plot(u[keep], r.trajectory["envelope_f"][keep], ".-", ms=3, lw=0.8, label=f"n = {n}")
        rows.append((n, r.metrics["phi0"], r.metrics["phi0_theory"], r.metrics["envelope_error"]))
    ax.set_xlabel("s / s*")
    ax.set_ylabel("f(phi)")
    ax.set_title("Localized helical buckling (Bergou 2008, Fig. 7)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(FIG / "der_fig7_helical_buckling.png", dpi=120)
    plt.close(fig)
    print("n    phi0      theory    envelope RMS")
    for row in rows:
        print(f"{row[0]:<4d} {row[1]:.5f}  {row[2]:.5f}  {row[3]:.4f}")


def fig8(plt):
    ratios = np.linspace(0.4, 1.6, 7)  # beta / alpha
    fig, ax = plt.subplots(figsize=(6, 4))
    for ratio in ratios:
        crit = 2 * math.pi * math.sqrt(3) / ratio
        for f in (0.7, 0.85, 0.95, 1.05, 1.15, 1.3):
            m = rodlab.run_scene("michell", beta=float(ratio), twist=float(f * crit), t_end=40.0).metrics
            ax.plot(ratio, f * crit, "o", color="#7fc4e8" if m["stable"] else "#8b2f8b", ms=6)
    rr = np.linspace(0.35, 1.65, 200)
    ax.plot(rr, 2 * math.pi * math.sqrt(3) / rr, "k-", label="2 pi sqrt(3) alpha / beta")
    ax.plot([], [], "o", color="#7fc4e8", label="stable (perturbation decays)")
    ax.plot([], [], "o", color="#8b2f8b", label="unstable (perturbation grows)")
    ax.set_xlabel("beta / alpha")
    ax.set_ylabel("imposed twist [rad]")
    ax.set_title("Michell's instability, n = 50, R = 1 (Bergou 2008, Fig. 8)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(FIG / "der_fig8_michell_map.png", dpi=120)
    plt.close(fig)


def fig5(plt):
    fig = plt.figure(figsize=(12, 7))
    for row, shape in enumerate(("v", "arc")):
        r = rodlab.run_scene("twist-asymmetry", shape=shape, turns=1.0, stages=4)
        xs, dens, levels = r.trajectory["x"], r.trajectory["twist_density"], r.trajectory["t"]
        ax = fig.add_subplot(2, 2, 2 * row + 1, projection="3d")
        for i, x in enumerate(xs):
            ax.plot(*x.T, alpha=0.35 + 0.65 * i / (len(xs) - 1), label=f"{levels[i] / (2 * math.pi):.2f} turns")
        ax.set_title(f"{'V-shaped' if shape == 'v' else 'semicircular'} anisotropic rod")
        ax.legend(fontsize=7)
        ax2 = fig.add_subplot(2, 2, 2 * row + 2)
        s = np.linspace(0, 1, dens.shape[1])
        for i, d in enumerate(dens):
            ax2.plot(s, d, label=f"{levels[i] / (2 * math.pi):.2f} turns")
        ax2.set_xlabel("arc length (fixed end 0, turned end 1)")
        ax2.set_ylabel("twist per length [rad/m]")
        ax2.legend(fontsize=7)
    fig.suptitle("Asymmetry of twist (Bergou 2008, Fig. 5)")
    fig.tight_layout()
    fig.savefig(FIG / "der_fig5_twist_asymmetry.png", dpi=110)
    plt.close(fig)


def fig2(plt):
    r = rodlab.run_scene("perversion")
    x = r.trajectory["x"]
    fig = plt.figure(figsize=(11, 4))
    for k, (i, title) in enumerate(((0, "held straight"), (len(x) // 3, "ends let in"), (-1, "perversion"))):
        ax = fig.add_subplot(1, 3, k + 1, projection="3d")
        ax.plot(*x[i].T, lw=2)
        lo, hi = x[i].min(axis=0), x[i].max(axis=0)
        c, rad = 0.5 * (lo + hi), 0.5 * max((hi - lo).max(), 1e-3)
        ax.set_xlim(c[0] - rad, c[0] + rad)
        ax.set_ylim(c[1] - rad, c[1] + rad)
        ax.set_zlim(c[2] - rad, c[2] + rad)
        ax.set_title(title)
    m = r.metrics
    fig.suptitle(f"Helical perversion (Bergou 2008, Fig. 2): turns {m['turns_left_half']:+.2f} | {m['turns_right_half']:+.2f}")
    fig.tight_layout()
    fig.savefig(FIG / "der_fig2_perversion.png", dpi=110)
    plt.close(fig)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", choices=("helical", "michell", "asymmetry", "perversion"))
    args = parser.parse_args()
    FIG.mkdir(parents=True, exist_ok=True)
    plt = figure_module()
    jobs = {"helical": fig7, "michell": fig8, "asymmetry": fig5, "perversion": fig2}
    for name, job in jobs.items():
        if args.only in (None, name):
            job(plt)
            print(f"wrote {name}")


if __name__ == "__main__":
    main()
