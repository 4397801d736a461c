"""Run a scene file: its :class:`rodlab.world.World`, the simulator of its method, the recording
loop of :mod:`rodlab.experiment` and the outputs (``metrics.json``, ``trajectory.npz``, a picture).

    run = run_scene_file("examples/cantilever-der.toml", out="out/cantilever")
    run.metrics["tip_z"], run.recording.x.shape

Rods are numbered in world order: every ``[[rod]]`` table in file order (one rod each, or one per
strand of a ``shape = "file"`` table), then every ``[[hairstyle]]`` table's strands. Welds and
point forces use these numbers.
"""
from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .. import metrics as M
from ..experiment import Recording, record
from ..hair.formats import HairFormatError, read_hair_file
from ..io import jsonsafe
from ..model import ModelError, twist_about_axis
from ..state import save_arrays
from ..world import State, World, WorldBuilder, shapes
from ..world.obstacles import Capsule, Cylinder, Plane, Sphere, TriangleMesh
from .schema import SceneFileError, SceneSpec, dumps, load


@contextlib.contextmanager
def _context(spec: SceneSpec, key: str):
    """Turn a :class:`ModelError` (or a hair-file error) raised while building ``key`` into a
    :class:`SceneFileError` naming the file and the key."""
    try:
        yield
    except SceneFileError:
        raise
    except (ModelError, HairFormatError) as exc:
        raise spec.error(key, str(exc)) from None


# ---- world -----------------------------------------------------------------------------------
def _polylines(spec: SceneSpec, rod: dict, key: str) -> list[np.ndarray]:
    shape = rod["shape"]
    if shape == "straight":
        return [shapes.straight(rod["n"], rod["length"], rod["start"], rod["direction"])]
    if shape == "helix":
        return [shapes.helix(rod["n"], rod["helix_radius"], rod["pitch"], rod["turns"], rod["start"], rod["direction"])]
    if shape == "circle":
        return [shapes.circle(rod["n"], rod["length"], rod["start"], rod["direction"])]
    if shape == "points":
        return [np.array(rod["points"], dtype=float)]
    path = Path(rod["file"])
    path = path if path.is_absolute() else Path(spec.base_dir) / path
    strands = read_hair_file(path)
    if not strands:
        raise spec.error(f"{key}.file", f"{path} holds no strands")
    if "strands" in rod:
        for i, s in enumerate(rod["strands"]):
            if s >= len(strands):
                raise spec.error(f"{key}.strands[{i}]", f"strand {s} is out of range: {path} has strands 0..{len(strands) - 1}")
        strands = [strands[s] for s in rod["strands"]]
    if "max_strands" in rod:
        strands = strands[:rod["max_strands"]]
    return [rod["scale"] * s for s in strands]


def _rest_d1(spec: SceneSpec, d1, x: np.ndarray, closed: bool, key: str) -> np.ndarray | None:
    """``rest_d1`` of the file (one vector, or one per edge) made unit and normal to each rest edge."""
    if d1 is None:
        return None
    e = np.diff(np.vstack([x, x[:1]]) if closed else x, axis=0)
    t = e / np.linalg.norm(e, axis=1)[:, None]
    d = np.broadcast_to(np.asarray(d1, dtype=float), t.shape)
    d = d - np.sum(d * t, axis=1)[:, None] * t
    norm = np.linalg.norm(d, axis=1)
    bad = np.flatnonzero(norm < 1e-9 * max(1.0, float(np.max(np.linalg.norm(d1, axis=-1)))))
    if bad.size:
        raise spec.error(key, f"rest_d1 is parallel to edge {int(bad[0])}: it must have a component normal to every edge")
    return d / norm[:, None]


def build_world_indexed(spec: SceneSpec) -> tuple[World, list[list[int]]]:
    """The world of ``spec`` and, per ``[[rod]]`` then ``[[hairstyle]]`` table, the world rod
    indices it added."""
    from ..world.hairstyle import add_hairstyle

    sim = spec.simulation
    with _context(spec, "simulation"):
        b = WorldBuilder(gravity=sim["gravity"], damping=sim["damping"])
    groups: list[list[int]] = []
    for i, rod in enumerate(spec.data.get("rod", [])):
        key = f"rod[{i}]"
        material = ({k: rod[k] for k in ("E", "G", "rho", "radius")} if "E" in rod else
                    {k: rod[k] for k in ("bending", "twisting", "linear_density", "radius") if k in rod}
                    | ({"stretching": rod["stretching"]} if "stretching" in rod else {}))
        group = []
        with _context(spec, key):
            for s, x in enumerate(_polylines(spec, rod, key)):
                where = key if rod["shape"] != "file" else f"{key} (strand {s})"
                with _context(spec, where):
                    d1 = _rest_d1(spec, rod.get("rest_d1"), x, rod["closed"], f"{key}.rest_d1")
                    r = b.add_rod(x, closed=rod["closed"], rest_d1=d1, **material)
                    for end in rod["clamp"]:
                        b.clamp(r, end)
                    for v in rod["pin"]:
                        b.pin(r, v)
                group.append(r)
        groups.append(group)
    for i, h in enumerate(spec.data.get("hairstyle", [])):
        with _context(spec, f"hairstyle[{i}]"):
            groups.append(list(add_hairstyle(b, **h)))
    for i, body in enumerate(spec.data.get("body", [])):
        with _context(spec, f"body[{i}]"):
            b.add_body(body["mass"], body["inertia"], body["position"], body["orientation"])
    n_rods = sum(len(g) for g in groups)
    for name, items in (("weld", spec.data.get("weld", [])), ("clamp", spec.data.get("clamp", [])),
                        ("point_force", spec.data.get("point_force", []))):
        for i, item in enumerate(items):
            if item["rod"] >= n_rods:
                raise spec.error(f"{name}[{i}].rod", f"{item['rod']} is out of range: the scene has rods 0..{n_rods - 1} "
                                 "([[rod]] tables in file order, then [[hairstyle]] strands)")
    n_bodies = len(spec.data.get("body", []))
    for i, w in enumerate(spec.data.get("weld", [])):
        if w["body"] >= n_bodies:
            raise spec.error(f"weld[{i}].body", f"{w['body']} is out of range: the scene has {n_bodies} [[body]] tables")
        clamped = _clamped_ends(spec, groups)[w["rod"]]
        if w["end"] in clamped:
            raise spec.error(f"weld[{i}].end", f"rod {w['rod']}'s {w['end']} edge is both clamped and welded: "
                             "leave out the clamp or weld the other end")
        with _context(spec, f"weld[{i}]"):
            b.weld(w["rod"], w["end"], w["body"])
    _add_clamps(spec, b, groups)
    for i, o in enumerate(spec.data.get("obstacle", [])):
        with _context(spec, f"obstacle[{i}]"):
            b.add_obstacle(_obstacle(o), friction=o.get("friction", 0.0))
    for i, pf in enumerate(spec.data.get("point_force", [])):
        with _context(spec, f"point_force[{i}]"):
            b.add_point_force(pf["rod"], pf["vertex"], pf["force"])
    if "wind" in spec.data:
        with _context(spec, "wind"):
            b.set_wind(spec.data["wind"]["velocity"], spec.data["wind"]["drag"])
    if "contact" in spec.data:
        c = spec.data["contact"]
        for i, (ra, rb, _) in enumerate(c["pair_friction"]):
            if max(ra, rb) >= n_rods:
                raise spec.error(f"contact.pair_friction[{i}]", f"rod {max(ra, rb)} is out of range: the scene has rods 0..{n_rods - 1}")
        with _context(spec, "contact"):
            b.set_contact(rods=c["rods"], friction=c["friction"], pair_friction=c["pair_friction"],
                          thickness=c.get("thickness"), skip=c.get("skip") or "auto")
    with _context(spec, "scene"):
        world = b.build()
    return world, groups


def _clamped_ends(spec: SceneSpec, groups: list[list[int]]) -> list[list[str]]:
    """Per world rod, the ends clamped by its ``[[rod]]`` table's ``clamp`` list, by its hairstyle
    (the root) and by ``[[clamp]]`` tables."""
    per_table = [list(rod["clamp"]) for rod in spec.data.get("rod", [])] + [["start"] for _ in spec.data.get("hairstyle", [])]
    ends = [list(e) for g, e in zip(groups, per_table) for _ in g]
    for c in spec.data.get("clamp", []):
        if c["rod"] < len(ends):
            ends[c["rod"]].append(c["end"])
    return ends


def _add_clamps(spec: SceneSpec, b: WorldBuilder, groups: list[list[int]]) -> None:
    """The ``[[clamp]]`` tables: sliding, twisting (``twist_about_axis``) or swivel clamps."""
    per_table = [list(rod["clamp"]) for rod in spec.data.get("rod", [])] + [["start"] for _ in spec.data.get("hairstyle", [])]
    plain = [e for g, e in zip(groups, per_table) for _ in g]
    seen = set()
    for i, c in enumerate(spec.data.get("clamp", [])):
        key = f"clamp[{i}]"
        if c["end"] in plain[c["rod"]] or (c["rod"], c["end"]) in seen:
            raise spec.error(f"{key}.end", f"rod {c['rod']}'s {c['end']} edge is clamped twice: list it in the rod's "
                             "clamp (a plain clamp) or in one [[clamp]] table (a clamp with options), not both")
        seen.add((c["rod"], c["end"]))
        motion = None
        if "twist_rate" in c:
            axis = c.get("twist_axis")
            if axis is None:
                x = b.rest_positions(c["rod"])
                axis = x[1] - x[0] if c["end"] == "start" else x[-1] - x[-2]
            if not np.linalg.norm(axis) > 0:
                raise spec.error(f"{key}.twist_axis", "expected a nonzero 3-vector")
            motion = twist_about_axis(axis, c["twist_rate"], c["twist_ramp"], c.get("twist_total"))
        elif "twist_axis" in c or "twist_total" in c:
            raise spec.error(f"{key}.twist_rate", "missing: twist_axis and twist_total need a twist_rate [rad/s]")
        if c.get("slide_axis") is not None and not np.linalg.norm(c["slide_axis"]) > 0:
            raise spec.error(f"{key}.slide_axis", "expected a nonzero 3-vector")
        with _context(spec, key):
            b.clamp(c["rod"], c["end"], motion=motion, free_rotation=c["free_rotation"], slide_axis=c.get("slide_axis"))


def _obstacle(o: dict):
    kind = o["kind"]
    if kind == "plane":
        return Plane(o["point"], o["normal"])
    if kind == "sphere":
        return Sphere(o["center"], o["radius"])
    if kind == "capsule":
        return Capsule(o["a"], o["b"], o["radius"])
    if kind == "cylinder":
        return Cylinder(o["point"], o["axis"], o["radius"])
    return TriangleMesh(o["vertices"], np.array(o["triangles"], dtype=np.int64))


def build_world(spec: SceneSpec) -> World:
    """The :class:`rodlab.world.World` that ``spec`` describes (errors name the file and key)."""
    return build_world_indexed(spec)[0]


# ---- simulator -------------------------------------------------------------------------------
def make_scene_simulator(spec: SceneSpec, world: World):
    """``spec``'s method built for ``world`` with ``simulation.dt`` and ``simulation.options``;
    a missing method module, an unknown option or an unsupported feature becomes a
    :class:`SceneFileError` naming the key."""
    from ..solvers import METHODS, UnsupportedFeature, simulator_class

    sim = spec.simulation
    method = sim["method"]
    try:
        cls = simulator_class(method)
    except ImportError as exc:
        module = METHODS[method].split(":")[0]
        raise spec.error("simulation.method", f"method {method} is not available in this installation "
                         f"({module} cannot be imported: {exc})") from None
    options = sim["options"]
    allowed = ", ".join(["dt", *sorted(cls.options)]) if cls.options else "dt"
    for name in options:
        if name == "dt":
            raise spec.error("simulation.options.dt", "set the time step as simulation.dt, not as an option")
        if name not in cls.options:
            raise spec.error(f"simulation.options.{name}", f"method {method} has no option {name!r} (its options: {allowed})")
    try:
        return cls(world, dt=sim.get("dt"), **options)
    except UnsupportedFeature as exc:
        raise spec.error("simulation.method", f"{exc}; choose another method or leave the feature out") from None
    except (ModelError, TypeError, ValueError) as exc:
        named = [k for k in options if k in str(exc)]
        key = f"simulation.options.{named[0]}" if named else "simulation"
        raise spec.error(key, str(exc)) from None


# ---- running ---------------------------------------------------------------------------------
@dataclass
class SceneRun:
    """A finished scene-file run: the spec, world, simulator, final ``state``, the ``recording``
    (frames ``t``, ``x``), the flat ``metrics`` written to metrics.json and the ``files`` written."""

    spec: SceneSpec
    world: World
    sim: object
    state: State
    recording: Recording
    metrics: dict
    groups: list
    files: list = field(default_factory=list)


def _body_probes(world: World) -> dict:
    if not world.n_bodies:
        return {}
    return {"body_x": lambda s: np.array(s.body_x), "body_q": lambda s: np.array(s.body_q)}


def simulate(spec: SceneSpec, *, progress=None) -> SceneRun:
    """Build and run ``spec``: ``t_end / dt`` steps (rounded) through :func:`rodlab.experiment.record`
    in ``output.frames`` chunks, or a static solve when ``simulation.static``. Metrics come from
    :mod:`rodlab.metrics` and the recording; raises :class:`rodlab.solvers.SimulationError` when a
    step fails and when the final state is not finite."""
    from ..solvers import SimulationError

    world, groups = build_world_indexed(spec)
    sim = make_scene_simulator(spec, world)
    state = sim.initial_state()
    static = spec.simulation["static"]
    probes = _body_probes(world)
    extra = {}
    if static:
        rec = record(sim, state, 0, frames=1, probes=probes, warmup=False)
        rep = sim.solve_static(state)
        rec.t = np.append(rec.t, state.t)
        rec.x = np.concatenate([rec.x, state.vertex_x[None].copy()])
        for name, fn in probes.items():
            rec.probes[name] = np.concatenate([rec.probes[name], fn(state)[None]])
        extra = {"static_success": bool(rep.success), "static_iterations": int(rep.iterations),
                 "static_residual": float(rep.residual), "static_message": rep.message, "static_wall_s": float(rep.wall_s)}
    else:
        t_end = spec.simulation["t_end"]
        nsteps = int(round(t_end / sim.dt)) if t_end > 0 else 0
        if t_end > 0 and nsteps == 0:
            nsteps = 1
        rec = record(sim, state, nsteps, frames=spec.frames, progress=progress, probes=probes)
    if not state.is_finite():
        raise SimulationError(f"{spec.source}: the final state of method {spec.method} is not finite (NaN or inf); "
                              f"try a smaller simulation.dt (now {sim.dt:g} s)")
    tip = M.tip(world, state, 0)
    out = {"scene": spec.name, "method": spec.method, "n_rods": world.n_rods, "n_vertices": world.n_vertices,
           "n_edges": world.n_edges, "n_bodies": world.n_bodies, **rec.summary(world.n_vertices),
           "t_end": float(state.t), "dt": float(sim.dt), "wall_s": float(rec.wall_s),
           "inextensibility": M.inextensibility(world, state), "kinetic_energy": M.kinetic_energy(world, state),
           "gravity_potential": M.gravity_potential(world, state),
           "tip_x": float(tip[0]), "tip_y": float(tip[1]), "tip_z": float(tip[2]), "static": bool(static), **extra}
    if not static and world.features() & {"obstacles", "rod contact"}:
        out.update(rec.contact_summary())  # min_gap, mean_contacts, max_contacts (rodlab.metrics)
    for k, v in out.items():
        if isinstance(v, float) and not math.isfinite(v):
            raise SimulationError(f"{spec.source}: metric {k} is not finite ({v})")
    return SceneRun(spec, world, sim, state, rec, out, groups)


def write_outputs(run: SceneRun, out_dir, *, plot: bool = True) -> list[Path]:
    """Write ``metrics.json``, ``trajectory.npz`` (``t`` (F,), ``x`` (F, N, 3), ``rod_offsets``
    (R + 1,), ``rod_closed`` (R,), per-body ``body_x``/``body_q`` when bodies exist; metadata: the
    normalized scene file), with ``plot``, ``world.png`` (tubes and time series) and
    ``world_views.png`` (side views), and with ``[output] animate``, ``animation.mp4``/``.gif``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    files = []
    path = out / "metrics.json"
    path.write_text(jsonsafe.dumps(run.metrics, indent=2) + "\n")
    files.append(path)
    world, rec = run.world, run.recording
    arrays = {"t": rec.t, "x": rec.x, "rod_offsets": np.array(world.rod_vertex_start),
              "rod_closed": np.array(world.rod_closed), **{k: np.asarray(v) for k, v in rec.probes.items()}}
    path = out / "trajectory.npz"
    save_arrays(path, arrays, {"scene": run.spec.name, "method": run.spec.method, "scene_file": dumps(run.spec)})
    files.append(path)
    if plot:
        from ..viz.world_plots import plot_world_recording

        files.extend(plot_world_recording(world, rec, out, title=f"{run.spec.name} ({run.spec.method})", state=run.state))
    if run.spec.data["output"].get("animate"):  # [output] animate = "mp4" | "gif" (docs/pictures.md)
        from ..render.animate import RenderDependencyError
        from ..viz.world_plots import animate_world_recording

        try:
            files.append(animate_world_recording(world, rec, out, run.spec.data["output"]["animate"], title=run.spec.name))
        except RenderDependencyError as exc:  # keep the run; say what to install
            import sys

            print(f"rodlab: note: no animation: {exc}", file=sys.stderr)
    return files


def run_scene_file(path, out=None, overrides: dict | None = None, *, plot: bool | None = None, progress=None) -> SceneRun:
    """Load, run and (when ``out`` is given) write the scene file ``path``. ``overrides``:
    ``{"simulation.t_end": 0.1, "rod[0].n": "20"}`` (``--set`` syntax); ``plot``: write the
    picture (default: the file's ``output.pictures``); ``progress``: ``update(done, total)``."""
    spec = load(path, overrides)
    run = simulate(spec, progress=progress)
    if out is not None:
        run.files = write_outputs(run, out, plot=spec.pictures if plot is None else plot)
    return run


# ---- command line ----------------------------------------------------------------------------
def parse_sets(items: list[str]) -> dict:
    out = {}
    for item in items or []:
        if "=" not in item:
            raise SceneFileError(f"--set expects section.key=value (got {item!r})")
        k, v = item.split("=", 1)
        out[k.strip()] = v.strip()
    return out


class _LazyProgress:
    """A progress bar drawn at the first update, so errors raised while building the world or the
    simulator print without a bar before them."""

    def __init__(self, make):
        self._make, self._bar = make, None

    def update(self, done, total):
        if self._bar is None:
            self._bar = self._make()
        self._bar.update(done, total)

    def close(self):
        if self._bar is not None:
            self._bar.close()


def cli_run(path: str, sets: list[str] | None, out: str | None, *, plot: bool = True, force: bool = False,
            checkpoint=None, text: str | None = None, base_dir: str | None = None) -> int:
    """``rodlab run FILE.toml``: check ``out``, run, write the outputs atomically, print the summary;
    bad input raises :class:`SceneFileError` (the CLI prints it and exits 2); a failed run writes
    ``metrics.json`` (``success`` false, ``error``, ``t_reached``) and the frames up to the last
    good state, prints one line and returns 3; an interrupted run the same, returning 130.
    ``checkpoint``: a :class:`rodlab.checkpoint.Checkpointer` (docs/checkpoints.md); ``text`` and
    ``base_dir``: the file's text and folder as recorded in a checkpoint (``rodlab resume``)."""
    from .. import runctl
    from ..cli import _fmt, _is_simulation_failure, report_failure
    from ..io.outputs import atomic_output_dir, check_output_dir, relocate
    from ..scenes.registry import TqdmProgress

    spec_path = Path(path)
    out_dir = Path(out) if out else Path("rodlab-out") / spec_path.stem
    if text is None:
        spec = load(spec_path, parse_sets(sets))
    else:
        from .schema import loads

        spec = loads(text, name=spec_path.stem, source=str(spec_path), base_dir=base_dir or ".", overrides=parse_sets(sets))
    if checkpoint is not None and spec.simulation["static"]:
        raise SceneFileError("--checkpoint-every: a static solve (simulation.static = true) has no time steps to "
                             "checkpoint", source=str(spec_path))
    check_output_dir(out_dir)
    progress = _LazyProgress(lambda: TqdmProgress(spec.name))
    with runctl.session(force=force, checkpoint=checkpoint):
        try:
            run = simulate(spec, progress=progress)
        except (Exception, KeyboardInterrupt) as exc:
            progress.close()
            if not (isinstance(exc, KeyboardInterrupt) or _is_simulation_failure(exc)):
                raise
            return report_failure(f"{spec_path}", exc, out_dir, hint="a smaller simulation.dt (--set simulation.dt=...)",
                                  metrics={"scene": spec.name, "method": spec.method},
                                  meta={"scene": spec.name, "method": spec.method, "scene_file": dumps(spec)})
        progress.close()
        with atomic_output_dir(out_dir) as tmp:
            run.files = relocate(write_outputs(run, tmp, plot=spec.pictures and plot), tmp, out_dir)
    print(f"scene {run.spec.name} ({spec_path}):")
    for k, v in run.metrics.items():
        print(f"  {k:28s} {_fmt(v)}")
    print("wrote " + ", ".join(str(f) for f in run.files))
    return 0
