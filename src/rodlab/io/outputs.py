"""Write a scene run to a folder: metrics.json, trajectory.npz, pictures; and the pieces the command
line uses to make that safe: :func:`check_output_dir` (before any work), :func:`atomic_output_dir`
(a temporary folder beside the target, renamed into place) and :func:`failure_outputs` (what a
failed or interrupted run writes)."""
from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import shutil
import stat
import tempfile
from pathlib import Path

import numpy as np

from ..model import ModelError
from ..state import save_arrays
from .jsonsafe import dumps


class OutputDirError(ModelError):
    """``--out`` cannot be written (a file, a read-only folder, a folder that cannot be created)."""


def write_scene_outputs(scene_name: str, params: dict, result, out_dir, *, plot: bool = True) -> list[Path]:
    """Write ``metrics.json`` (``scene`` + ``result.metrics``), ``trajectory.npz`` (``result.trajectory``,
    metadata: scene and ``params``) and, with ``plot``, the scene's pictures into ``out_dir``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    path = out / "metrics.json"
    path.write_text(dumps({"scene": scene_name, **result.metrics}, indent=2) + "\n")
    written.append(path)
    path = out / "trajectory.npz"
    arrays = {k: np.asarray(v) for k, v in result.trajectory.items()}
    meta = {"scene": scene_name, "params": params}
    if "edge_m1" not in arrays and "x" in arrays:  # the twist of every frame (rodlab.experiment.record)
        from ..experiment import recorded_m1

        m1 = recorded_m1(result.trajectory["x"])
        if m1 is not None:
            arrays["edge_m1"] = m1
    world = getattr(result, "world", None)
    if world is not None:  # what exports and the viewer draw: each rod's radius, the obstacles
        from ..world.obstacles import obstacle_record

        arrays.setdefault("rod_radius", np.asarray(world.rod_radius, dtype=float))
        if world.obstacles:
            meta["obstacles"] = [obstacle_record(ob) for ob in world.obstacles]
        if world.bodies:  # boxes of their mass and inertia, for the viewer (rodlab.render.scene.body_records)
            from ..render.scene import body_records

            meta["bodies"] = body_records(world)
    save_arrays(path, arrays, meta)
    written.append(path)
    if plot:
        from ..viz.plots import plot_trajectory

        from ..viz.tubes import with_tubes

        painter = with_tubes(result.plot or plot_trajectory, scene_name, params)  # the tube picture first
        written.extend(Path(p) for p in painter(result, out))
    return written


def _writable(path: Path) -> bool:
    """Write permission on ``path`` (for root, which ``os.access`` always grants, the mode's write bits)."""
    if not os.access(path, os.W_OK | os.X_OK):
        return False
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        return bool(path.stat().st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    return True


def check_output_dir(out) -> Path:
    """Check before any work that the output folder ``out`` can be written: not an existing file,
    not a read-only folder, its parent creatable and writable (the run is written beside it and
    renamed into place). Creates the missing parents; raises :class:`OutputDirError`."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise OutputDirError(f"--out {out} is a file, not a folder: give a folder name")
    if out.is_dir() and not _writable(out):
        raise OutputDirError(f"--out {out} is a read-only folder: give a writable folder")
    parent = out.absolute().parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputDirError(f"--out {out}: cannot create its parent folder {parent} ({exc.strerror or exc})") from None
    if not _writable(parent):
        raise OutputDirError(f"--out {out}: its parent folder {parent} is read-only (the run is written beside "
                             "--out and renamed into place): give a writable place")
    try:
        probe = tempfile.mkdtemp(prefix=f".{out.name}.check-", dir=parent)
        os.rmdir(probe)
    except OSError as exc:
        raise OutputDirError(f"--out {out}: cannot write in {parent} ({exc.strerror or exc})") from None
    return out


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths atomically (Linux ``renameat2(RENAME_EXCHANGE)``); False where unavailable."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
        fn = libc.renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    return fn(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0


@contextlib.contextmanager
def atomic_output_dir(out):
    """Yield a fresh temporary folder beside ``out``; when the block ends without an exception it
    replaces ``out`` (an atomic swap where the system has one, else two renames), otherwise it is
    removed and ``out`` keeps its previous contents. So ``out`` holds one whole run, never a mix."""
    out = Path(out)
    parent = out.absolute().parent
    parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.new-", dir=parent))
    try:
        yield tmp
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if not out.exists():
        os.rename(tmp, out)
        return
    if _exchange(tmp, out):
        shutil.rmtree(tmp, ignore_errors=True)  # now the previous run
        return
    old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-", dir=parent))
    os.rmdir(old)
    os.rename(out, old)
    os.rename(tmp, out)
    shutil.rmtree(old, ignore_errors=True)


def relocate(files, tmp: Path, out: Path) -> list[Path]:
    """Paths written under ``tmp`` as they are after :func:`atomic_output_dir` moved them to ``out``."""
    moved = []
    for f in files:
        f = Path(f)
        try:
            moved.append(Path(out) / f.relative_to(tmp))
        except ValueError:
            moved.append(f)
    return moved


def failure_outputs(out_dir, metrics: dict, trajectory: dict | None, meta: dict) -> list[Path]:
    """Write a failed or interrupted run: ``metrics.json`` (``metrics``: at least ``success``
    false, ``error``, ``t_reached`` [s]) and, when frames exist, ``trajectory.npz`` (``t`` (F,),
    ``x`` (F, N, 3) up to the last good state, metadata ``meta``)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "metrics.json"
    path.write_text(dumps(metrics, indent=2) + "\n")
    files = [path]
    if trajectory is not None and len(np.asarray(trajectory.get("t", []))):
        path = out / "trajectory.npz"
        save_arrays(path, {k: np.asarray(v) for k, v in trajectory.items()}, meta)
        files.append(path)
    return files
