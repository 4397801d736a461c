"""Accuracy and cost of the analytic references; figures for docs/validation.md.

    python bench/bench_validation_references.py            # prints the tables, writes docs/figures/validation_*.png

1. Elastica tip (rodlab.analytic.elastica, solve_bvp + continuation) against a multiple-shooting
   solution written here (DOP853, rtol 1e-13, Newton on the matching conditions), for
   w L^3/EI from 1e-3 to 1300, and against the single-shooting solver where it is reliable.
2. Localized helical buckling theory for Bergou et al. 2008 Fig. 7.
"""
from __future__ import annotations

import math
import sys
import time
from pathlib import Path

import numpy as np
from scipy.integrate import solve_ivp

from rodlab.analytic import elastica as el
from rodlab.analytic.elastica_shooting import shooting_cantilever_tip
from rodlab.analytic.helical_buckling import helical_buckling_theory, helical_envelope, theoretical_centerline

FIG = Path(__file__).resolve().parent.parent / "docs" / "figures"


def multiple_shooting_tip(q: float, px: float, pz: float, guess, segments: int) -> np.ndarray:
    """Dimensionless tip (L = EI = 1) by multiple shooting from a guess ``guess(sigma) -> y``."""

    def f(s, Y):
        th, k = Y[0], Y[1]
        nz = pz - q * (1 - s)
        c, sn = np.cos(th), np.sin(th)
        P = Y[4:].reshape(4, 4)
        A = np.zeros((4, 4))
        A[0, 1] = 1
        A[1, 0] = px * c + nz * sn
        A[2, 0] = -sn
        A[3, 0] = c
        return np.concatenate(([k, px * sn - nz * c, c, sn], (A @ P).ravel()))

    b = np.linspace(0, 1, segments + 1)
    Y = guess(b[:-1]).T.copy()
    Y[0] = [0, Y[0, 1], 0, 0]
    K = segments
    for _ in range(20):
        R, Js = [], []
        for k in range(K):
            r = solve_ivp(f, (b[k], b[k + 1]), np.concatenate((Y[k], np.eye(4).ravel())), method="DOP853", rtol=1e-13, atol=1e-14)
            R.append(r.y[:4, -1])
            Js.append(r.y[4:, -1].reshape(4, 4))
        nu = 1 + 4 * (K - 1)
        F = np.zeros(nu)
        J = np.zeros((nu, nu))
        for k in range(K - 1):
            F[4 * k:4 * k + 4] = R[k] - Y[k + 1]
            if k == 0:
                J[0:4, 0] = Js[0][:, 1]
            else:
                J[4 * k:4 * k + 4, 1 + 4 * (k - 1):1 + 4 * k] = Js[k]
            J[4 * k:4 * k + 4, 1 + 4 * k:1 + 4 * k + 4] = -np.eye(4)
        F[-1] = R[-1][1]
        if K == 1:
            J[-1, 0] = Js[-1][1, 1]
        else:
            J[-1, 1 + 4 * (K - 2):] = Js[-1][1]
        d = np.linalg.solve(J, -F)
        Y[0, 1] += d[0]
        Y[1:] += d[1:].reshape(K - 1, 4)
        if np.max(np.abs(d)) < 1e-14:
            break
    return R[-1][2:]


def elastica_accuracy():
    print("elastica tip accuracy (L = EI = 1; error = |tip - multiple shooting| / L)")
    print(f"{'q=wL^3/EI':>10} {'p_z':>6} {'tip_x':>10} {'tip_z':>10} {'err vs MS':>10} {'err vs 1-shoot':>14} {'nodes':>6} {'steps':>5} {'time [s]':>8}")
    rows = []
    for q, pz in [(1e-3, 0), (0.0392, 0), (1.0, 0), (3.92, 0), (30.0, 0), (130.8, 0), (392.4, 0), (1308.0, 0), (5.0, -2.0)]:
        el._solve_cached.cache_clear()
        t0 = time.perf_counter()
        sol = el.solve_cantilever_elastica(1.0, 1.0, q, (0.0, pz))
        dt = time.perf_counter() - t0
        ms = multiple_shooting_tip(q, 0.0, pz, sol.sol, 8 + int(math.sqrt(q)))
        e_ms = float(np.hypot(*(sol.tip - ms)))
        e_sh = float(np.hypot(*(sol.tip - shooting_cantilever_tip(1.0, 1.0, q, (0.0, pz))))) if q <= 150 else float("nan")
        print(f"{q:10.4g} {pz:6.3g} {sol.tip[0]:10.6f} {sol.tip[1]:10.6f} {e_ms:10.2e} {e_sh:14.2e} {sol.nodes:6d} {sol.continuation_steps:5d} {dt:8.3f}")
        rows.append((q, e_ms))
    return rows


def helical():
    th = helical_buckling_theory(9.29, 1.345, 0.789, 27, 0.3)
    print("\nlocalized helical buckling, Bergou et al. 2008 Fig. 7 (L=9.29, alpha=1.345, beta=0.789, N=27, D=0.3)")
    for k in ("m", "t", "mu", "phi0", "s_star", "moment", "tension", "twist_density", "writhe", "residual"):
        print(f"  {k:14s} {getattr(th, k):.6g}")
    return th


def figures(th):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    FIG.mkdir(parents=True, exist_ok=True)
    # elastica family
    fig, ax = plt.subplots(figsize=(5, 4.2))
    for q in (0.0392, 1.0, 3.92, 30.0, 130.8, 392.4):
        sh = el.cantilever_elastica_shape(1.0, 1.0, q, n=300)
        ax.plot(sh["x"], sh["z"], label=f"wL^3/EI = {q:g}")
    ax.set_aspect("equal")
    ax.set_xlabel("x / L")
    ax.set_ylabel("z / L")
    ax.set_title("cantilever elastica (rodlab.analytic.elastica)")
    ax.legend(fontsize=7)
    fig.savefig(FIG / "validation_elastica_family.png", dpi=110, bbox_inches="tight")
    plt.close(fig)
    # helical envelope + theoretical centerline
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(9, 3.5))
    ss = np.linspace(-3, 3, 301)
    a1.plot(ss, helical_envelope(ss * th.s_star, th), "k-", label="tanh^2(s/s*)")
    x = theoretical_centerline(th, n=400, half_width=3 * th.s_star)
    from rodlab.analytic.helical_buckling import envelope_from_centerline

    env = envelope_from_centerline(x, (1, 0, 0))
    a1.plot(env["s"] / th.s_star, env["f"], ".", ms=3, label="from theoretical centerline (400 pts)")
    a1.set_xlabel("s / s*")
    a1.set_ylabel("f(phi)")
    a1.legend(fontsize=7, loc="lower right")
    a1.set_title(f"envelope, phi0 = {th.phi0:.4f}, s* = {th.s_star:.4f}", fontsize=9)
    xx = theoretical_centerline(th, n=3000, half_width=6 * th.s_star)
    a2.plot(xx[:, 0], xx[:, 1], lw=0.8)
    a2.set_xlabel("x (clamp axis)")
    a2.set_ylabel("y")
    a2.set_title("theoretical localized helix (|s| <= 6 s*)", fontsize=9)
    fig.tight_layout()
    fig.savefig(FIG / "validation_helical_theory.png", dpi=110, bbox_inches="tight")
    plt.close(fig)
    print(f"\nwrote {FIG / 'validation_elastica_family.png'} and {FIG / 'validation_helical_theory.png'}")


if __name__ == "__main__":
    elastica_accuracy()
    th = helical()
    if "--no-figures" not in sys.argv:
        figures(th)
