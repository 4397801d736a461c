"""One tube picture per paper figure that rodlab has a scene for, into docs/figures/render_*.png
(docs/pictures.md shows them).

    python bench/figures_gallery.py                 # every entry of GALLERY (a few minutes)
    python bench/figures_gallery.py --only tree     # entries whose name contains "tree"
    python bench/figures_gallery.py --list

Each entry runs its scene (:func:`rodlab.scenes.registry.run_scene`) with parameters chosen to
keep the whole gallery within a few minutes, then draws the final frame as tubes beside the
run's time series (:func:`rodlab.viz.tubes.plot_tubes`, the same picture ``rodlab run`` writes as
``scene.png``). Where a scene hands over its world and final state, the radii, obstacles, bodies
and material frames are the simulated ones; the caption of each picture says which.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "figures"

GALLERY = (
    # (file stem, paper figure, scene, parameter overrides)
    ("render_der_fig2_perversion", "Bergou et al. 2008, Fig. 2", "perversion", {}),
    ("render_der_fig12_tree", "Bergou et al. 2008, Fig. 12", "tree", {"levels": 3, "vertices": 600, "t_end": 0.3}),
    ("render_compact_fig6_helix", "Zhao et al., Fig. 6", "helix-gravity", {"t_end": 0.5}),
    ("render_compact_fig11_drag_root", "Zhao et al., Fig. 11", "drag-root", {"t_end": 2.25}),
    ("render_compact_fig17_drop_cylinders", "Zhao et al., Fig. 17", "drop-cylinders", {"t_end": 1.0}),
    ("render_sagfree_fig10_hairstyle", "sag-free hair, Fig. 10", "hairstyle", {"strands": 300, "t_end": 0.3}),
    ("render_der_fig9_plectonemes_hanging", "Bergou et al. 2008, Fig. 9", "plectonemes-hanging",
     {"n": 120, "dt": 2.5e-4, "t_end": 2.5}),
    ("render_der_fig10_hanging_chain", "Bergou et al. 2008, Fig. 10", "hanging-chain",
     {"links": 4, "n": 12, "dt": 5e-4, "pull_speed": 0.2, "t_end": 0.6}),
    ("render_compact_fig14_strand_through_springs", "Zhao et al., Fig. 14", "strand-through-springs", {}),
    ("render_compact_fig15_knot_tighten", "Zhao et al., Fig. 15", "knot-tighten", {}),
    ("render_compact_fig16_plectoneme", "Zhao et al., Fig. 16", "plectoneme", {}),
)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", action="append", help="only entries whose file stem or scene contains this text")
    ap.add_argument("--list", action="store_true", help="list the entries and exit")
    ap.add_argument("--out", default=str(OUT), help="folder to write into (default docs/figures)")
    args = ap.parse_args(argv)
    if args.list:
        for stem, figure, scene, params in GALLERY:
            print(f"{stem:40s} {figure:36s} rodlab run {scene} " + " ".join(f"--set {k}={v}" for k, v in params.items()))
        return 0
    from rodlab.scenes.registry import get_scene, run_scene
    from rodlab.viz.tubes import plot_tubes

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for stem, figure, name, overrides in GALLERY:
        if args.only and not any(o in stem or o in name for o in args.only):
            continue
        t0 = time.perf_counter()
        params = get_scene(name).resolve(overrides)
        result = run_scene(name, **params)
        path = plot_tubes(result, out, scene_name=name, params=params, name=f"{stem}.png", label=f"{name} ({figure})")
        print(f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}  ({time.perf_counter() - t0:.1f} s)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
