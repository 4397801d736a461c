"""Command-line interface: ``rodlab scenes | run | export | demo | validate``.

All quantities are SI: metres, seconds, kilograms, pascals, newtons, radians.
Exit status 2 on bad input (unknown scene or parameter, value out of range).
"""
from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path


def _parse_sets(items: list[str]) -> dict:
    out = {}
    for item in items:
        if "=" not in item:
            raise SystemExit(f"--set expects NAME=VALUE (got {item!r})")
        k, v = item.split("=", 1)
        out[k.strip()] = v.strip()
    return out


def _fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


def cmd_scenes(args) -> int:
    from .scenes.registry import scenes

    for name, scene in scenes().items():
        print(f"{name:24s} {scene.summary}")
    return 0


def cmd_params(args) -> int:
    from .scenes.registry import get_scene

    scene = get_scene(args.scene)
    print(f"{scene.name}: {scene.summary}")
    for p in scene.params:
        print(f"  {p.name:14s} default {p.default!r:12}  {p.allowed():28s} {p.doc}")
    return 0


def run_and_write(name: str, overrides: dict, out: Path, *, plot: bool = True, quiet: bool = False):
    from .io.outputs import write_scene_outputs
    from .scenes.registry import TqdmProgress, get_scene, run_scene

    scene = get_scene(name)
    params = scene.resolve(overrides)
    progress = TqdmProgress(name) if not quiet else None
    try:
        result = run_scene(name, progress=progress, **params)
    finally:
        if progress:
            progress.close()
    files = write_scene_outputs(name, params, result, out, plot=plot)
    if not quiet:
        print(f"scene {name}:")
        for k, v in result.metrics.items():
            print(f"  {k:28s} {_fmt(v)}")
        print("wrote " + ", ".join(str(f) for f in files))
    return result, files


def cmd_run(args) -> int:
    if args.scene.lower().endswith(".toml"):  # a scene file (docs/scene-files.md)
        from .scenefile.runner import cli_run

        status = cli_run(args.scene, args.set, args.out, plot=not args.no_plot)
        out = Path(args.out) if args.out else Path("rodlab-out") / Path(args.scene).stem
        return status or _export_after_run(out, args.export)
    out = Path(args.out or Path("rodlab-out") / args.scene)
    run_and_write(args.scene, _parse_sets(args.set or []), out, plot=not args.no_plot)
    return _export_after_run(out, args.export)


def _export_after_run(out: Path, formats) -> int:
    """``rodlab run ... --export FMT``: export the run folder ``out`` into ``out/export``."""
    from .io.exports import export_run, load_run

    if not formats:
        return 0
    run = load_run(out)
    for fmt in dict.fromkeys(formats):
        files = export_run(run, fmt, out / "export")
        print(f"exported {fmt}: {_files_summary(files)}")
    for note in run.notes:
        print(f"  note: {note}")
    return 0


def _files_summary(files) -> str:
    return str(files[0]) + (f" (+ {len(files) - 1} frame files)" if len(files) > 1 else "")


def cmd_export(args) -> int:
    from .io.exports import export_run, load_run

    run = load_run(args.run_dir, radius=args.radius)
    out = Path(args.out) if args.out else Path(args.run_dir) / "export"
    files = export_run(run, args.format, out, frame=args.frame)
    print(f"exported {args.format}: {_files_summary(files)}")
    for note in run.notes:
        print(f"  note: {note}")
    return 0


def cmd_demo(args) -> int:
    out = Path(args.out)
    print("rodlab demo: a helical perversion (Bergou et al. 2008, Fig. 2) and a cantilever sagging under gravity")
    run_and_write("perversion", {}, out / "perversion")
    # damped at about twice its slowest frequency, so that after 2 s it has settled onto the
    # static elastica that tip_error_over_length compares it with
    run_and_write("cantilever", {"t_end": 2.0, "damping": 11.0}, out / "cantilever")
    print(f"pictures and metrics are in {out.resolve()}")
    return 0


def cmd_validate(args) -> int:
    from .validate import run_validation

    ok = run_validation(Path(args.out), only=args.only, quick=args.quick)
    return 0 if ok else 1


def build_parser() -> argparse.ArgumentParser:
    from .io.exports import FORMATS as EXPORT_FORMATS

    parser = argparse.ArgumentParser(prog="rodlab", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-v", "--verbose", action="store_true", help="log solver diagnostics")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("scenes", help="list scene names, one per line")
    p.set_defaults(fn=cmd_scenes)
    p = sub.add_parser("params", help="list a scene's parameters with defaults and allowed ranges")
    p.add_argument("scene")
    p.set_defaults(fn=cmd_params)
    p = sub.add_parser("run", help="run a scene or a scene file (PATH.toml): writes metrics.json, trajectory.npz and pictures")
    p.add_argument("scene", help="a scene name (rodlab scenes) or a scene file PATH.toml (docs/scene-files.md)")
    p.add_argument("--set", action="append", metavar="NAME=VALUE", help="override a parameter (SI units); repeatable")
    p.add_argument("--out", help="output folder (default rodlab-out/SCENE)")
    p.add_argument("--no-plot", action="store_true", help="skip the pictures")
    p.add_argument("--export", action="append", choices=EXPORT_FORMATS, metavar="FORMAT",
                   help=f"after the run, export it into OUT/export ({', '.join(EXPORT_FORMATS)}; docs/exports.md); repeatable")
    p.set_defaults(fn=cmd_run)
    p = sub.add_parser("export", help="export a run folder to VTK (.vtp + .pvd), USD, PLY or hair files (docs/exports.md)")
    p.add_argument("run_dir", help="a folder written by rodlab run --out (trajectory.npz, metrics.json)")
    p.add_argument("--format", required=True, choices=EXPORT_FORMATS,
                   help="vtk: .vtp per frame + .pvd; usd: BasisCurves (needs usd-core); ply: one frame's vertices + edges; "
                        "hair / data: one frame's strands")
    p.add_argument("--out", help="output folder (default RUN_DIR/export), or a file name for usd, ply, hair, data")
    p.add_argument("--frame", type=int, help="frame index, negative from the end (ply, hair, data: default the last; "
                                             "vtk, usd: default every frame)")
    p.add_argument("--radius", type=float, help="rod radius [m] to write instead of the run's (default: the run's, else 0.001)")
    p.set_defaults(fn=cmd_export)
    p = sub.add_parser("demo", help="run a demo scene and write pictures and metrics")
    p.add_argument("--out", default="rodlab-demo", help="output folder (default rodlab-demo)")
    p.set_defaults(fn=cmd_demo)
    p = sub.add_parser("validate", help="run the validation cases; print and write a table with plots")
    p.add_argument("--out", default="rodlab-validate", help="output folder (default rodlab-validate)")
    p.add_argument("--only", action="append", help="run only cases whose name contains this text")
    p.add_argument("--quick", action="store_true", help="coarser resolutions (what the test suite runs)")
    p.set_defaults(fn=cmd_validate)
    _add_method_commands(sub)
    return parser


def _add_method_commands(sub) -> None:
    """Subcommands owned by a method package: ``module.add_subcommand(sub)`` registers its parser."""
    import importlib

    for module_name in ("rodlab.inverse.cli",):
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name != module_name and not module_name.startswith(str(exc.name)):
                raise
            continue
        module.add_subcommand(sub)


def main(argv: list[str] | None = None) -> int:
    from .model import ModelError
    from .scenes.registry import SceneError

    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        return int(args.fn(args) or 0)
    except (SceneError, ModelError) as exc:
        print(f"rodlab: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
