"""Energy behaviour of the generalized-alpha rod; writes docs/figures/galpha_*.png.

1. rho_inf = 1, no damping: total energy of a swinging cantilever (galpha pendulum of
   tests/test_galpha.py) over 10^4 steps stays bounded (figure galpha_energy_bounded.png).
2. rho_inf < 1: numerical damping per step of the first bending mode of a clamped-free rod,
   measured from the decay of its energy, against the theory |A(i omega_1 dt)| of the scheme
   (Coefficients.amplification) (figure galpha_damping_theory.png).
3. Scene galpha-tress-gravity: kinetic energy of a hair guide for several (alpha, gamma)
   (figure galpha_tress_gravity_kinetic.png; GA paper, Fig. 1).
4. Scene galpha-tress: guide and 180 interpolated fibers (figure galpha_tress.png).

    python bench/bench_galpha_energy.py
"""
from __future__ import annotations

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from rodlab.galpha import Boundary, Coefficients, GAlphaOptions, GAlphaRod, GAlphaSolver, TipLoad
from rodlab.galpha.model import ROOT_R

FIG = Path(__file__).resolve().parents[1] / "docs" / "figures"


def pendulum(rho_inf):
    m = GAlphaRod.from_material(11, 0.5, radius=0.005, E=1e8, G=1e8 / 3, rho=1000.0, gravity=(0, 0, -9.81), root_R=ROOT_R)
    return GAlphaSolver(m, Boundary(), GAlphaOptions(time=Coefficients.from_rho_inf(rho_inf)))


def mode_decay(rho_inf, z, n=41, steps=300):
    """Measured per-step amplitude factor of the first bending mode at omega_1 dt = z."""
    L, E, r = 0.5, 1e7, 0.005
    m = GAlphaRod.from_material(n, L, radius=r, E=E, G=E / 3, rho=1000.0, root_R=ROOT_R)
    EI = m.stiffness[0]
    w1 = 3.516015 * math.sqrt(EI / (m.rhoA * L**4))
    P = 1e-4 * 3 * EI / L**3
    s = GAlphaSolver(m, Boundary(tip=lambda t: TipLoad(force=(0, 0, -P)) if t <= 0 else TipLoad()),
                     GAlphaOptions(time=Coefficients.from_rho_inf(rho_inf)))
    st, _ = s.solve_static()
    st.step = 1  # the static state is consistent: no backward-Euler start
    tr = s.simulate(st, z / w1, steps)
    e = tr["energy"]
    k = np.arange(e.size)
    sel = (k >= 10) & (e > 1e-9 * e[0])
    sel &= np.cumprod(sel | (k < 10)).astype(bool)
    if sel.sum() < 8:
        return float("nan")
    return math.exp(np.polyfit(k[sel], np.log(e[sel]), 1)[0] / 2)


def main():
    FIG.mkdir(parents=True, exist_ok=True)
    # 1
    fig, ax = plt.subplots(figsize=(6.5, 4))
    for rho in (1.0, 0.5):
        s = pendulum(rho)
        st = s.initial_state()
        tr = s.simulate(st, 2e-3, 10000, record_every=10)
        scale = np.ptp(tr["gravitational"])
        ax.plot(tr["t"], (tr["energy"] - tr["energy"][0]) / scale, label=f"rho_inf = {rho:g}")
        print(f"rho_inf={rho}: energy range / exchanged = {np.ptp(tr['energy'][1:]) / scale:.3e}, "
              f"final drift = {(tr['energy'][-1] - tr['energy'][1]) / scale:.3e}")
    ax.set_xlabel("t [s]"); ax.set_ylabel("(E - E0) / potential energy exchanged")
    ax.set_title("swinging cantilever, 10 segments, dt = 2 ms, 10^4 steps, no damping")
    ax.legend(); fig.tight_layout(); fig.savefig(FIG / "galpha_energy_bounded.png", dpi=120); plt.close(fig)
    # 2
    fig, ax = plt.subplots(figsize=(6.5, 4))
    zs = np.logspace(-1.5, 3, 200)
    for rho, col in ((0.0, "C0"), (0.5, "C1"), (0.8, "C2"), (1.0, "C3")):
        c = Coefficients.from_rho_inf(rho)
        ax.semilogx(zs, [abs(c.amplification(1j * z)) for z in zs], col, label=f"theory rho_inf = {rho:g}")
        zm = [0.1, 0.3, 1.0, 3.0] if rho > 0 else [0.1, 0.3, 1.0]
        meas = [mode_decay(rho, z) for z in zm]
        ax.semilogx(zm, meas, col + "o", mfc="none")
        for z, mv in zip(zm, meas):
            print(f"rho_inf={rho} omega dt={z}: measured {mv:.6f}  theory {abs(c.amplification(1j * z)):.6f}")
    ax.set_xlabel("omega dt"); ax.set_ylabel("amplitude factor per step")
    ax.set_title("numerical damping: scheme theory (lines) vs rod first mode (circles)")
    ax.legend(fontsize=8); fig.tight_layout(); fig.savefig(FIG / "galpha_damping_theory.png", dpi=120); plt.close(fig)
    # 3
    from rodlab.scenes.registry import run_scene
    res = run_scene("galpha-tress-gravity")
    paths = res.plot(res, FIG)
    # 4. the tress (guide + 180 fibers) before the pull, at the release, at the end
    tress = run_scene("galpha-tress")
    paths += tress.plot(tress, FIG)
    print("wrote", [str(p) for p in paths])


if __name__ == "__main__":
    main()
