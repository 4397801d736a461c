"""Checkpoints of a run and ``rodlab resume`` (docs/checkpoints.md).

``rodlab run SCENE|FILE.toml --checkpoint-every SECONDS`` keeps, in ``OUT/checkpoint/``:

- ``state-NNNNNN.npz``: the full :class:`rodlab.world.State` (:meth:`State.save`, with the
  method's own unknowns), metadata naming the run (``run_key``);
- ``frames-NNNNNN.npz``: the frames recorded so far (``t``, ``x``, ``edge_m1``, ``probe/NAME``);
- ``checkpoint.json``: format and version, rodlab's version, what the run is (the scene name and
  its resolved parameters, or the scene file's text and ``--set`` overrides), the output options,
  the recording loop's counters (steps done, frame schedule, chunk schedule, wall time, Newton and
  linear iterations, contact bookkeeping) and the SHA-256 of both ``.npz`` files.

Every file is written to a temporary name, fsynced and renamed; ``checkpoint.json`` is renamed
last, so it always names a complete checkpoint (the previous one stays valid until the new one is
in place; the files of the previous one are removed after). A checkpoint is taken at the first
chunk boundary at or after each multiple of the interval: with checkpoints on, the recording loop
(:func:`rodlab.experiment.record`) cuts its chunks at fixed step counts (multiples of
:attr:`Checkpointer.chunk_steps`, of the interval and the frame ends), so a resumed run advances in
exactly the calls the uninterrupted one does and is bit-identical to it.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import re
import shutil
import tempfile
from pathlib import Path

import numpy as np

from .model import ModelError

CHECKPOINT_FORMAT = "rodlab.checkpoint"
CHECKPOINT_FORMAT_VERSION = 2
"""2: the frames hold the material directors ``edge_m1`` and the loop the failed calls, residual and tallies."""
CHECKPOINT_DIR = "checkpoint"
INDEX = "checkpoint.json"
CHUNK_VERTEX_STEPS = 10_000
"""With checkpoints on, the recording loop's chunks are at most ``CHUNK_VERTEX_STEPS / n_vertices``
steps (at least 1): a fixed schedule (the adaptive one depends on wall time), about 0.2 s of a step
costing 20 us per vertex."""

CHECKPOINT_SCENES = frozenset({
    "hairstyle", "knot-tighten", "drop-cylinders", "drag-root", "helix-gravity", "tree", "incline",
    "michell", "perversion", "twist-asymmetry", "uniform-twist", "helical-buckling", "wilberforce",
    "torque-transducer", "cantilever", "capstan", "flipped-frames", "galpha-buckling", "galpha-helix-load",
    "galpha-sinus", "galpha-spring", "galpha-torque", "galpha-tress", "galpha-tress-gravity",
})
"""Registered scenes whose run is one :func:`rodlab.experiment.record` call on a simulator (or a
wrapper marked ``keeps_nothing_outside_state``) with nothing kept outside the state: these can be
checkpointed and resumed bit for bit. A few of them refuse some parameter values from inside the
run, before stepping (:func:`refuse_in_run`): ``cantilever`` with ``static = true`` (no time
steps), ``flipped-frames`` with a 2D model beside the 4D one and ``galpha-tress-gravity`` with more
than one setting (several independent runs)."""

REFUSED_SCENES = {
    "sagfree-strand": "its run is an optimization (Newton / augmented Lagrangian with box-constrained QPs, not a "
                      "time-stepping loop) followed by two short forward runs that check it; checkpoint a forward "
                      "run by running the optimized strand from a scene file",
}
"""Registered scenes that cannot be checkpointed, and why."""


class CheckpointError(ModelError):
    """A checkpoint cannot be written, is corrupt (checksum mismatch, truncated, unreadable) or
    foreign (another format version, rodlab version or run), or the run cannot be checkpointed."""


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _write_atomic(path: Path, write) -> None:
    """``write(tmp_path)`` then fsync and rename onto ``path``; on any error the temporary file is
    removed and ``path`` is untouched."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp" + path.suffix, dir=path.parent)
    os.close(fd)
    tmp = Path(tmp)
    try:
        write(tmp)
        with open(tmp, "rb+") as f:
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)


def run_key(identity: dict) -> str:
    """A short hash of what the run is (scene + parameters, or scene file text + overrides)."""
    return hashlib.sha256(json.dumps(identity, sort_keys=True, default=str).encode()).hexdigest()[:16]


def scene_identity(name: str, params: dict) -> dict:
    return {"kind": "scene", "scene": name, "params": {k: params[k] for k in sorted(params)}}


def scene_file_identity(text: str, source: str, base_dir: str, sets: list[str]) -> dict:
    return {"kind": "scene_file", "text": text, "source": source, "base_dir": base_dir, "sets": list(sets)}


def check_scene(name: str) -> None:
    """Refuse ``--checkpoint-every`` for a registered scene that cannot be resumed bit for bit."""
    if name in REFUSED_SCENES:
        raise CheckpointError(f"scene {name} does not support --checkpoint-every: {REFUSED_SCENES[name]}")
    if name not in CHECKPOINT_SCENES:
        raise CheckpointError(
            f"scene {name} does not support --checkpoint-every: its run is not a single recording loop "
            "(rodlab.experiment.record) on a simulator with nothing kept outside the state; "
            f"scenes that do: {', '.join(sorted(CHECKPOINT_SCENES))}, and every scene file (.toml)")


def refuse_in_run(scene: str, why: str) -> None:
    """Called by a scene before stepping: raise :class:`CheckpointError` (``scene`` does not support
    ``--checkpoint-every`` because ``why``) when the active session (:func:`rodlab.runctl.session`)
    writes checkpoints; nothing otherwise."""
    from .runctl import active

    ctl = active()
    if ctl is not None and ctl.checkpoint is not None:
        raise CheckpointError(f"scene {scene} does not support --checkpoint-every {why}")


def check_interval(seconds) -> float:
    try:
        s = float(seconds)
    except (TypeError, ValueError):
        raise CheckpointError(f"--checkpoint-every {seconds!r}: expected a number of simulated seconds > 0") from None
    if not (math.isfinite(s) and s > 0):
        raise CheckpointError(f"--checkpoint-every {seconds!r} out of range: expected simulated seconds in (0, inf)")
    return s


class Checkpointer:
    """Checkpoint settings of one run, handed to :func:`rodlab.runctl.session` and used by
    :func:`rodlab.experiment.record`.

    Parameters
    ----------
    out : path
        The run's output folder; checkpoints go to ``out/checkpoint``.
    every : float
        Interval [s] of simulated time between checkpoints.
    identity : dict
        What the run is (:func:`scene_identity` / :func:`scene_file_identity`).
    options : dict
        Output options to restore on resume (``plot``, ``animate``, ``export``).
    resume : dict or None
        A loaded checkpoint (:func:`load`) to continue from, else a fresh run.
    """

    def __init__(self, out, every: float, identity: dict, options: dict | None = None, resume: dict | None = None):
        self.dir = Path(out) / CHECKPOINT_DIR
        self.every = check_interval(every)
        self.identity = identity
        self.key = run_key(identity)
        self.options = dict(options or {})
        self.resume = resume
        self.calls = 0
        self.serial = int(resume["index"]["serial"]) if resume else 0
        self.chunk_steps = int(resume["index"]["loop"]["chunk_steps"]) if resume else None
        self.interval_steps = None
        if resume is None and self.dir.exists():  # a previous run's checkpoint: not this run's
            shutil.rmtree(self.dir, ignore_errors=True)

    # ---- the recording loop's side -----------------------------------------------------------
    def begin(self, sim, state, nsteps: int, per: int) -> dict | None:
        """Called by :func:`rodlab.experiment.record` before stepping: checks that the run can be
        checkpointed, fixes the chunk schedule, and returns the loop's saved counters and frames
        when resuming (after loading the saved state into ``state``), else None."""
        from .solvers.base import Simulator

        self.calls += 1
        if self.calls > 1:
            raise CheckpointError("--checkpoint-every: this run records more than one loop; only a single "
                                  "rodlab.experiment.record call can be checkpointed")
        if not (isinstance(sim, Simulator) or getattr(sim, "keeps_nothing_outside_state", False)):
            raise CheckpointError(f"--checkpoint-every: the run steps a {type(sim).__name__}, not a "
                                  "rodlab simulator, and may keep history outside the state; it cannot be resumed")
        dt = float(sim.dt)
        self.interval_steps = max(1, int(round(self.every / dt)))
        if self.chunk_steps is None:
            self.chunk_steps = max(1, CHUNK_VERTEX_STEPS // max(int(state.vertex_x.shape[0]), 1))
        if self.resume is None:
            return None
        loop = self.resume["index"]["loop"]
        for name, mine in (("nsteps", nsteps), ("steps_per_frame", per), ("method", sim.method),
                           ("n_vertices", int(state.vertex_x.shape[0])), ("dt", dt)):
            if loop[name] != mine:
                raise CheckpointError(f"checkpoint {self.dir} does not match this run: {name} is {loop[name]!r} "
                                      f"there and {mine!r} here")
        saved = self.resume["state"]
        if saved.vertex_x.shape != state.vertex_x.shape or saved.edge_theta.shape != state.edge_theta.shape:
            raise CheckpointError(f"checkpoint {self.dir} holds a state of another layout")
        state.assign(saved)
        for k in [k for k in state.solver if k not in saved.solver]:
            del state.solver[k]
        return {**loop, "frames": self.resume["frames"]}

    def due(self, done: int) -> bool:
        return done > 0 and done % self.interval_steps == 0

    def next_boundary(self, done: int, frame_end: int) -> int:
        """The next chunk boundary after ``done`` steps: a frame end, a multiple of the chunk size
        or of the checkpoint interval, whichever comes first."""
        c, k = self.chunk_steps, self.interval_steps
        return min(frame_end, (done // c + 1) * c, (done // k + 1) * k)

    def save(self, sim, state, loop: dict, frames: dict) -> Path:
        """Write a checkpoint of ``state`` and the loop (module docstring); returns its index file."""
        from . import __version__

        self.dir.mkdir(parents=True, exist_ok=True)
        serial = self.serial + 1
        state_path = self.dir / f"state-{serial:06d}.npz"
        frames_path = self.dir / f"frames-{serial:06d}.npz"
        meta = {"run_key": self.key, "serial": serial}
        _write_atomic(state_path, lambda p: state.save(p, metadata=meta))
        arrays = {"t": np.asarray(frames["t"]), "x": np.asarray(frames["x"]),
                  "edge_m1": np.asarray(frames["edge_m1"], dtype=np.float32).reshape(len(frames["edge_m1"]), -1, 3),
                  **{f"probe/{k}": np.asarray(v) for k, v in frames["probes"].items()}}
        for k, v in arrays.items():
            if v.dtype == object:
                raise CheckpointError(f"--checkpoint-every: probe {k} holds values of mixed shapes; it cannot be saved")

        def write_frames(p):
            with open(p, "wb") as f:
                np.savez(f, **arrays, __metadata__=np.array(json.dumps(meta)))

        _write_atomic(frames_path, write_frames)
        index = {"format": CHECKPOINT_FORMAT, "format_version": CHECKPOINT_FORMAT_VERSION, "rodlab_version": __version__,
                 "run_key": self.key, "identity": self.identity, "options": self.options, "every": self.every,
                 "serial": serial, "t": float(state.t),
                 "loop": {**loop, "method": sim.method, "dt": float(sim.dt), "n_vertices": int(state.vertex_x.shape[0]),
                          "chunk_steps": self.chunk_steps, "interval_steps": self.interval_steps},
                 "files": {"state": state_path.name, "frames": frames_path.name},
                 "sha256": {state_path.name: _sha256(state_path), frames_path.name: _sha256(frames_path)}}
        from .io import jsonsafe

        text = jsonsafe.dumps(index, indent=2) + "\n"
        _write_atomic(self.dir / INDEX, lambda p: p.write_text(text))
        self.serial = serial
        for old in self.dir.glob("*-*.npz"):  # the previous checkpoint's files (and strays of a crash)
            if old.name not in (state_path.name, frames_path.name):
                old.unlink(missing_ok=True)
        return self.dir / INDEX


# ---- reading ---------------------------------------------------------------------------------
def load(out) -> dict:
    """Read and check the checkpoint of run folder ``out``: ``{"index", "state", "frames"}``.
    Raises :class:`CheckpointError` naming what is wrong (missing, corrupt, foreign)."""
    from . import __version__
    from .world.state import State

    cdir = Path(out) / CHECKPOINT_DIR
    path = cdir / INDEX
    if not path.is_file():
        raise CheckpointError(f"{out}: no checkpoint to resume ({path} does not exist; "
                              "run with --checkpoint-every SECONDS to write one)")
    try:
        index = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CheckpointError(f"{path}: corrupt checkpoint index ({exc})") from None
    if not isinstance(index, dict) or index.get("format") != CHECKPOINT_FORMAT:
        raise CheckpointError(f"{path}: not a rodlab checkpoint (format {index.get('format') if isinstance(index, dict) else None!r})")
    if index.get("format_version") != CHECKPOINT_FORMAT_VERSION:
        raise CheckpointError(f"{path}: checkpoint format version {index.get('format_version')!r} is not supported "
                              f"(this rodlab reads version {CHECKPOINT_FORMAT_VERSION})")
    if index.get("rodlab_version") != __version__:
        raise CheckpointError(f"{path}: written by rodlab {index.get('rodlab_version')}, this is rodlab {__version__}: "
                              "a resumed run would not be bit-identical; rerun from the start")
    try:
        identity, key = index["identity"], index["run_key"]
        files, sums, loop = index["files"], index["sha256"], index["loop"]
    except KeyError as exc:
        raise CheckpointError(f"{path}: corrupt checkpoint index (no {exc.args[0]!r})") from None
    if run_key(identity) != key:
        raise CheckpointError(f"{path}: corrupt checkpoint index (its run key does not match the run it describes)")
    for role in ("state", "frames"):
        name = files.get(role, "")
        f = cdir / name
        if not re.fullmatch(r"[a-z]+-\d{6}\.npz", name) or not f.is_file():
            raise CheckpointError(f"{path}: the {role} file {name!r} is missing")
        if _sha256(f) != sums.get(name):
            raise CheckpointError(f"{f}: corrupt checkpoint (SHA-256 checksum mismatch: truncated or changed)")
    try:
        state = State.load(cdir / files["state"])
        smeta = State.metadata_of(cdir / files["state"])
        with np.load(cdir / files["frames"], allow_pickle=False) as data:
            fmeta = json.loads(str(data["__metadata__"]))
            frames = {"t": np.array(data["t"]), "x": np.array(data["x"]), "edge_m1": np.array(data["edge_m1"]),
                      "probes": {k[len("probe/"):]: np.array(data[k]) for k in data.files if k.startswith("probe/")}}
    except (ModelError, OSError, ValueError, KeyError) as exc:
        raise CheckpointError(f"{cdir}: corrupt checkpoint ({exc})") from None
    for what, meta in (("state", smeta), ("frames", fmeta)):
        if meta.get("run_key") != key or meta.get("serial") != index.get("serial"):
            raise CheckpointError(f"{cdir}: foreign checkpoint: the {what} file belongs to another run "
                                  f"(run {meta.get('run_key')!r}, checkpoint {meta.get('serial')!r}; the index names "
                                  f"run {key!r}, checkpoint {index.get('serial')!r})")
    if frames["t"].shape[0] != loop.get("n_frames_kept") or state.t != index.get("t"):
        raise CheckpointError(f"{cdir}: corrupt checkpoint (frames or time do not match the index)")
    return {"index": index, "state": state, "frames": frames}


def carry_over(out, tmp) -> None:
    """Move ``out/checkpoint`` into the folder ``tmp`` that is about to replace ``out`` (a failed or
    interrupted run keeps its checkpoint for ``rodlab resume``)."""
    src = Path(out) / CHECKPOINT_DIR
    if src.is_dir() and (src / INDEX).is_file():
        shutil.move(str(src), str(Path(tmp) / CHECKPOINT_DIR))
