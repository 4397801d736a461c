"""Command-line interface: ``rodlab COMMAND`` (``rodlab --help`` lists every command).

All quantities are SI: metres, seconds, kilograms, pascals, newtons, radians.
Exit status: 0 ok; 2 bad input (unknown scene or parameter, value out of range, an --out that
cannot be written, a run over the size limits without --force); 3 the simulation failed (one line
says what, when and what to try; the run up to its last good state is written); 130 interrupted
(Ctrl-C; what was computed is written). Options such as -v go before or after the command.
"""
from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

import numpy as np


def _parse_sets(items: list[str]) -> dict:
    out = {}
    for item in items:
        if "=" not in item:
            from .scenes.registry import SceneError

            raise SceneError(f"--set expects NAME=VALUE (got {item!r})")
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


class RunFailed(Exception):
    """A run failed or was interrupted after its one line was printed and its outputs written;
    ``status``: the exit status (3 failed, 130 interrupted)."""

    def __init__(self, status: int):
        super().__init__(status)
        self.status = status


SIMULATION_FAILURES = ("SimulationError", "FloatingPointError", "LinAlgError", "ZeroDivisionError")
"""Exceptions (by class name, with their subclasses) that mean "the simulation failed" (exit 3)."""


def _is_simulation_failure(exc: BaseException) -> bool:
    return any(c.__name__ in SIMULATION_FAILURES for c in type(exc).__mro__)


def report_failure(label: str, exc: BaseException, out: Path, *, metrics: dict, meta: dict, hint: str) -> int:
    """The failure contract (module docstring): write ``metrics.json`` (``success`` false,
    ``error``, ``t_reached``) and the frames up to the last good state into ``out`` (atomically),
    print one line, return the exit status (130 interrupted, 3 failed)."""
    from . import runctl
    from .io.outputs import atomic_output_dir, failure_outputs
    from .runctl import active

    interrupted = isinstance(exc, KeyboardInterrupt)
    rec = getattr(exc, "recording", None) or (active().partial if active() is not None else None)
    if rec is not None:
        trajectory = {"t": rec.t, "x": rec.x, **{k: v for k, v in rec.probes.items()}}
        if rec.edge_m1 is not None and len(rec.edge_m1) == len(rec.t):
            trajectory["edge_m1"] = rec.edge_m1   # the twist up to the last good state (docs/pictures.md)
        steps = int(rec.steps)
    else:
        trajectory, steps = getattr(exc, "trajectory", None), None
    t = np.asarray(trajectory["t"]) if trajectory is not None else np.zeros(0)
    t_reached = float(t[-1]) if t.size else None
    what = "interrupted" if interrupted else " ".join(str(exc).split()) or type(exc).__name__
    data = {**metrics, "success": False, "error": what, "t_reached": t_reached}
    if steps is not None:
        data["steps"] = steps
    when = f"at t = {t_reached:.6g} s" if t_reached is not None else "before its first frame"
    runctl.stop_spinner()
    try:
        with atomic_output_dir(out) as tmp:
            failure_outputs(tmp, data, trajectory, meta)
            from .checkpoint import carry_over

            carry_over(out, tmp)  # rodlab resume continues from it
        wrote = f"wrote metrics.json{' and trajectory.npz' if t.size else ''} to {out}"
    except OSError as err:
        wrote = f"could not write {out}: {err}"
    if interrupted:
        print(f"rodlab: {label} interrupted {when}; {wrote}", file=sys.stderr)
        return 130
    tip = "" if "try " in what else f"; try {hint}"
    print(f"rodlab: {label} failed {when}: {what}{tip}; {wrote}", file=sys.stderr)
    return 3


def run_and_write(name: str, overrides: dict, out: Path, *, plot: bool = True, quiet: bool = False, force: bool = False,
                  checkpoint=None):
    """Run scene ``name`` and write its outputs into ``out`` (atomically, after checking ``out``
    before any work); a failed or interrupted run raises :class:`RunFailed` after writing what
    it computed. ``checkpoint``: a :class:`rodlab.checkpoint.Checkpointer` (docs/checkpoints.md)."""
    from . import runctl
    from .io.outputs import atomic_output_dir, check_output_dir, relocate, write_scene_outputs
    from .scenes.registry import TqdmProgress, get_scene, run_scene

    scene = get_scene(name)
    params = scene.resolve(overrides)
    check_output_dir(out)
    progress = TqdmProgress(name) if not quiet else None
    with runctl.session(force=force, spinner=not quiet, checkpoint=checkpoint):
        try:
            result = run_scene(name, progress=progress, **params)
        except (Exception, KeyboardInterrupt) as exc:
            if not (isinstance(exc, KeyboardInterrupt) or _is_simulation_failure(exc)):
                raise
            if progress:
                progress.close()
            has_dt = any(p.name == "dt" for p in scene.params)
            hint = "a smaller time step (--set dt=...)" if has_dt else "milder parameters (rodlab params " + name + ")"
            raise RunFailed(report_failure(f"scene {name}", exc, out, metrics={"scene": name}, hint=hint,
                                           meta={"scene": name, "params": params})) from None
        finally:
            if progress:
                progress.close()
        failed = result.metrics.get("success") is False  # a solver that did not converge, reported by the scene
        if failed:
            t = np.asarray(result.trajectory.get("t", []))
            result.metrics.setdefault("error", str(result.metrics.get("message") or "the scene reported success: false"))
            result.metrics.setdefault("t_reached", float(t[-1]) if t.size else None)
        with atomic_output_dir(out) as tmp:
            files = relocate(write_scene_outputs(name, params, result, tmp, plot=plot), tmp, out)
    if failed:
        what = " ".join(str(result.metrics["error"]).split())
        has_dt = any(p.name == "dt" for p in scene.params)
        tip = "" if "try " in what else ("; try a smaller time step (--set dt=...)" if has_dt else "; try milder parameters")
        print(f"rodlab: scene {name} failed: {what} (run to t = {_fmt(result.metrics['t_reached'])} s){tip}; "
              f"wrote {', '.join(str(f) for f in files)}", file=sys.stderr)
        raise RunFailed(3)
    if not quiet:
        print(f"scene {name}:")
        for k, v in result.metrics.items():
            print(f"  {k:28s} {_fmt(v)}")
        print("wrote " + ", ".join(str(f) for f in files))
    return result, files


def _checkpointer(args, out: Path, is_file: bool, sets: list[str] | None = None):
    """The :class:`rodlab.checkpoint.Checkpointer` of ``rodlab run --checkpoint-every`` (or None)."""
    if args.checkpoint_every is None:
        return None
    from . import checkpoint as ck

    every = ck.check_interval(args.checkpoint_every)
    options = {"plot": not args.no_plot, "animate": args.animate, "export": list(args.export or [])}
    if is_file:
        path = Path(args.scene)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            from .scenefile.schema import SceneFileError

            raise SceneFileError(f"cannot read the scene file ({exc.strerror or exc})", source=str(path)) from None
        identity = ck.scene_file_identity(text, str(path), str(path.resolve().parent), list(sets or []))
    else:
        from .scenes.registry import get_scene

        ck.check_scene(args.scene)
        identity = ck.scene_identity(args.scene, get_scene(args.scene).resolve(_parse_sets(args.set or [])))
    return ck.Checkpointer(out, every, identity, options)


def cmd_run(args) -> int:
    if args.scene.lower().endswith(".toml"):  # a scene file (docs/scene-files.md)
        from .scenefile.runner import cli_run

        if args.animate:  # before the run: a missing imageio-ffmpeg is known now, not after it
            from .render.animate import check_available

            check_available(args.animate)
        sets = list(args.set or []) + ([f'output.animate="{args.animate}"'] if args.animate else [])  # the file's key
        out = Path(args.out) if args.out else Path("rodlab-out") / Path(args.scene).stem
        ckp = _checkpointer(args, out, True, sets)
        status = cli_run(args.scene, sets, args.out, plot=not args.no_plot, force=args.force, checkpoint=ckp)
        return status or _export_after_run(out, args.export)
    out = Path(args.out or Path("rodlab-out") / args.scene)
    if args.animate:
        from .render.animate import check_available

        check_available(args.animate)
    result, _ = run_and_write(args.scene, _parse_sets(args.set or []), out, plot=not args.no_plot, force=args.force,
                              checkpoint=_checkpointer(args, out, False))
    if args.animate:  # docs/pictures.md
        from .scenes.registry import get_scene
        from .viz.tubes import animate_result

        path = animate_result(result, out, args.animate, scene_name=args.scene,
                              params=get_scene(args.scene).resolve(_parse_sets(args.set or [])))
        print(f"wrote {path}")
    return _export_after_run(out, args.export)


def cmd_resume(args) -> int:
    """``rodlab resume OUT``: continue the run whose checkpoint is in ``OUT/checkpoint`` to its end
    and write its outputs as ``rodlab run`` would (docs/checkpoints.md)."""
    from . import checkpoint as ck

    out = Path(args.out_dir)
    loaded = ck.load(out)
    index = loaded["index"]
    identity, options = index["identity"], index.get("options", {})
    checker = ck.Checkpointer(out, index["every"], identity, options, resume=loaded)
    print(f"resuming {out} from its checkpoint at t = {index['t']:.6g} s (step {index['loop']['done']} of "
          f"{index['loop']['nsteps']})", file=sys.stderr)
    if identity.get("kind") == "scene_file":
        from .scenefile.runner import cli_run

        status = cli_run(identity["source"], identity["sets"], str(out), plot=options.get("plot", True),
                         force=args.force, checkpoint=checker, text=identity["text"], base_dir=identity["base_dir"])
        return status or _export_after_run(out, options.get("export"))
    name = identity.get("scene")
    ck.check_scene(name)
    result, _ = run_and_write(name, identity["params"], out, plot=options.get("plot", True), force=args.force,
                              checkpoint=checker)
    if options.get("animate"):
        from .scenes.registry import get_scene
        from .viz.tubes import animate_result

        path = animate_result(result, out, options["animate"], scene_name=name,
                              params=get_scene(name).resolve(identity["params"]))
        print(f"wrote {path}")
    return _export_after_run(out, options.get("export"))


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


def cmd_warmup(args) -> int:
    """``rodlab warmup``: compile every method's kernels into numba's cache (one step of each
    method's smallest cantilever world) and say how long it took."""
    import time

    from . import runctl
    from .scenes.cantilever_world import cantilever_world
    from .solvers import METHODS, make_simulator

    methods = args.method or list(METHODS)
    params = dict(n=6, length=0.1, radius=0.001, E=1e7, G=1e7 / 3, rho=1000.0, g=9.81, damping=0.0)
    total = time.perf_counter()
    with runctl.session(spinner=False):
        for method in methods:
            t0, c0 = time.perf_counter(), runctl.compile_seconds()
            print(f"warmup {method}: compiling kernels (first run only), or loading them from the cache ...", end="", flush=True)
            sim = make_simulator(cantilever_world(params, method), method)
            sim.advance(sim.initial_state(), 1)
            compiled = runctl.compile_seconds() - c0
            print(f" ready in {time.perf_counter() - t0:.1f} s"
                  + (f" ({compiled:.1f} s compiling)" if compiled > 0 else " (loaded from the cache)"))
    print(f"warmup: {len(methods)} method(s) ready in {time.perf_counter() - total:.1f} s; "
          "later runs load the kernels from the cache")
    return 0


def cmd_validate(args) -> int:
    from .validate import run_validation

    ok = run_validation(Path(args.out), only=args.only, quick=args.quick, html=args.html)
    return 0 if ok else 1


def build_parser() -> argparse.ArgumentParser:
    from .io.exports import FORMATS as EXPORT_FORMATS
    from .solvers import METHODS

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
    p.add_argument("--animate", nargs="?", const="mp4", choices=("mp4", "gif"),
                   help="also write OUT/animation.mp4 (default; needs imageio-ffmpeg: pip install 'rodlab[render]') "
                        "or animation.gif, one tube picture per recorded frame (docs/pictures.md)")
    p.add_argument("--force", action="store_true", help="run even when over 1e8 steps or the memory available "
                                                        "(otherwise refused with an estimate)")
    p.add_argument("--export", action="append", choices=EXPORT_FORMATS, metavar="FORMAT",
                   help=f"after the run, export it into OUT/export ({', '.join(EXPORT_FORMATS)}; docs/exports.md); repeatable")
    p.add_argument("--checkpoint-every", type=float, metavar="SECONDS",
                   help="write OUT/checkpoint every SECONDS of simulated time (docs/checkpoints.md); "
                        "rodlab resume OUT continues a killed or interrupted run")
    p.set_defaults(fn=cmd_run)
    p = sub.add_parser("resume", help="continue a run from its checkpoint (rodlab run --checkpoint-every) and write its outputs")
    p.add_argument("out_dir", help="the run's output folder (holding checkpoint/)")
    p.add_argument("--force", action="store_true", help="as for rodlab run")
    p.set_defaults(fn=cmd_resume)
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
    p.add_argument("--html", action="store_true", help="also write validation.html: every row and its figures on one offline page")
    p.set_defaults(fn=cmd_validate)
    p = sub.add_parser("warmup", help="compile every method's kernels into the cache (the first run is then fast)")
    p.add_argument("--method", action="append", choices=METHODS, help="only this method; repeatable (default: all)")
    p.set_defaults(fn=cmd_warmup)
    _add_method_commands(sub)
    return parser


def _add_method_commands(sub) -> None:
    """Subcommands owned by a method package: ``module.add_subcommand(sub)`` registers its parser."""
    import importlib

    for module_name in ("rodlab.inverse.cli", "rodlab.distributed.cli", "rodlab.viewer.cli"):
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
    argv = list(sys.argv[1:] if argv is None else argv)
    # global options anywhere: before or after the subcommand (up to a "--")
    end = argv.index("--") if "--" in argv else len(argv)
    verbose = any(a in ("-v", "--verbose") for a in argv[:end])
    argv = [a for a in argv[:end] if a not in ("-v", "--verbose")] + argv[end:]
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        return int(args.fn(args) or 0)
    except (SceneError, ModelError) as exc:
        print(f"rodlab: error: {exc}", file=sys.stderr)
        return 2
    except RunFailed as exc:
        return exc.status
    except KeyboardInterrupt:
        print("rodlab: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        if not _is_simulation_failure(exc):
            raise
        print(f"rodlab: error: the simulation failed: {' '.join(str(exc).split())}", file=sys.stderr)
        return 3


if __name__ == "__main__":
    sys.exit(main())
