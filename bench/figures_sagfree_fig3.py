"""Fig. 3 of the sag-free paper (Takahashi and Batty, Sec. VI-A2): 4D curvature vs 2D curvature with slerped
material frames ([41], approximated gradient), flipped frames, scene ``flipped-frames``.

Writes docs/figures/sagfree_fig3_slerp_frames.png and prints the markdown tables quoted in
docs/sagfree-slerp.md. Run: ``python bench/figures_sagfree_fig3.py`` (about 15 s here).
"""
from __future__ import annotations

import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from rodlab.scenes.registry import run_scene  # noqa: E402

FIG = Path(__file__).resolve().parents[1] / "docs" / "figures"
KAPPA = 20.0
T_END = 3.0


def table(head, rows):
    out = ["| " + " | ".join(head) + " |", "| " + " | ".join("---" for _ in head) + " |"]
    for r in rows:
        out.append("| " + " | ".join(f"{v:.3g}" if isinstance(v, float) else str(v) for v in r) + " |")
    return "\n".join(out)


def figure():
    base = dict(model="2d-slerp", rest_curvature=KAPPA, t_end=T_END)
    ra = run_scene("flipped-frames", line_search=False, **base)
    re = run_scene("flipped-frames", line_search=False, gradient="exact", **base)
    rl = run_scene("flipped-frames", line_search=True, **base)
    tr = ra.trajectory
    fig, axes = plt.subplots(2, 3, figsize=(14, 7.5))
    t = tr["t"]
    picks = np.linspace(0, len(t) - 1, 7).astype(int)
    for ax, xs, title in ((axes[0, 0], tr["x"], "4D curvature [6]"),
                          (axes[0, 1], tr["x_slerp"], "2D, slerped frames, approx. gradient [41]"),
                          (axes[0, 2], rl.trajectory["x_slerp"], "same, with Armijo line search")):
        ax.plot(tr["rest"][:, 0], tr["rest"][:, 1], "k:", lw=1, label="rest shape")
        for k, f in enumerate(picks):
            ax.plot(xs[f][:, 0], xs[f][:, 1], color=plt.cm.viridis(k / (len(picks) - 1)), lw=1.2,
                    label=f"t = {t[f]:.1f} s")
        ax.set_title(title + " (top view)", fontsize=9)
        ax.set_aspect("equal")
        ax.set_xlabel("x [m]")
        ax.set_ylabel("y [m]")
    axes[0, 0].legend(fontsize=7)
    ax = axes[1, 0]
    for xs, lab, st in ((tr["x"], "4D", "-"), (tr["x_slerp"], "slerp, approx. gradient", "-"),
                        (re.trajectory["x_slerp"], "slerp, exact gradient", "--"),
                        (rl.trajectory["x_slerp"], "slerp, approx., line search", ":")):
        ax.plot(t[: len(xs)], xs[:, -1, 2], st, label=lab)
    ax.set_xlabel("t [s]")
    ax.set_ylabel("tip height z [m]")
    ax.legend(fontsize=7)
    ax = axes[1, 1]
    e_ref = float(np.min(tr["energy_4d"]))
    for E, lab, st in ((tr["energy_4d"], "4D", "-"), (tr["energy_slerp"], "slerp, approx. gradient", "-"),
                       (re.trajectory["energy_slerp"], "slerp, exact gradient", "--"),
                       (rl.trajectory["energy_slerp"], "slerp, approx., line search", ":")):
        ax.plot(t[: len(E)], (E - e_ref) * 1e3, st, label=lab)
    ax.set_xlabel("t [s]")
    ax.set_ylabel("energy above the 4D minimum [mJ]")
    ax.set_yscale("log")
    ax.legend(fontsize=7)
    ax = axes[1, 2]
    for xs, lab in ((tr["x"], "4D"), (tr["x_slerp"], "slerp, approx.")):
        ax.plot(xs[-1][:, 0], xs[-1][:, 2], label=f"{lab}, t = {t[len(xs) - 1]:.1f} s")
    ax.plot(tr["x"][0][:, 0], tr["x"][0][:, 2], "k--", label="initial")
    ax.set_aspect("equal")
    ax.set_xlabel("x [m]")
    ax.set_ylabel("z [m]")
    ax.set_title("side view", fontsize=9)
    ax.legend(fontsize=7)
    fig.suptitle(f"Fig. 3: horizontal strand (30 vertices), frames flipped, rest curl {KAPPA:g} 1/m in the horizontal "
                 "plane, implicit Euler, 1 Gauss-Newton iteration, 4 x 1/240 s per frame", fontsize=10)
    fig.tight_layout()
    FIG.mkdir(parents=True, exist_ok=True)
    fig.savefig(FIG / "sagfree_fig3_slerp_frames.png", dpi=90)
    plt.close(fig)
    rows = []
    for lab, r in (("4D", ra), ("slerp approx, no line search", ra), ("slerp exact, no line search", re),
                   ("slerp approx, line search", rl)):
        m = r.metrics
        key = "4d" if lab == "4D" else "slerp"
        rows.append([lab, m[f"tip_z_{key}"], m[f"energy_growth_{key}"], m[f"energy_growth_rel_{key}"],
                     m[f"tip_osc_{key}"], m[f"line_search_failures_{key}"], m[f"stable_{key}"]])
    print(table(["model", "tip z at 3 s [m]", "energy growth [J]", "growth / energy range",
                 "tip z peak-to-peak, 1.5-3 s [m]", "line-search failures", "stable"], rows))


def sweep():
    rows = []
    for kappa in (0.0, 4.0, 12.0, 20.0, 30.0):
        for ls in (False, True):
            for grad in ("approx", "exact"):
                m = run_scene("flipped-frames", model="2d-slerp", rest_curvature=kappa, t_end=T_END, line_search=ls,
                              gradient=grad).metrics
                rows.append([kappa, ls, grad, m["tip_z_4d"], m["tip_z_slerp"], m["energy_growth_slerp"],
                             m["tip_osc_slerp"], m["line_search_failures_slerp"], m["stable_slerp"], m["stable_4d"]])
    print(table(["rest curvature [1/m]", "line search", "gradient", "tip z 4D [m]", "tip z slerp [m]",
                 "energy growth slerp [J]", "tip osc. slerp [m]", "LS failures", "slerp stable", "4D stable"], rows))


def main():
    t0 = time.perf_counter()
    run_scene("flipped-frames", model="2d-slerp", t_end=0.05)  # compile
    figure()
    print()
    sweep()
    print(f"\n{time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
