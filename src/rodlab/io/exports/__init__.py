"""Export a finished run (a ``rodlab run --out DIR`` folder) to files other tools open.

Formats (docs/exports.md):

* ``vtk``: one XML PolyData ``.vtp`` per frame plus a ``.pvd`` time series (ParaView), with
  per-vertex velocity, radius, curvature, twist and contact force where the run has them
  (:mod:`.vtk`);
* ``usd``: ``BasisCurves`` with widths and time-sampled points (Blender, Houdini, Omniverse;
  needs ``pip install 'rodlab[usd]'``) (:mod:`.usd`);
* ``ply``: one frame's vertices + edges (:mod:`.ply`);
* ``hair`` / ``data``: one frame's rods as strands, Cem Yuksel's ``.hair`` or USC-HairSalon
  ``.data`` (:mod:`.hair`).

All coordinates are in metres as simulated, times in seconds.
"""
from __future__ import annotations

from pathlib import Path

from .run import DEFAULT_RADIUS, ExportError, RunData, load_run

FORMATS = ("vtk", "usd", "ply", "hair", "data")
"""export formats, as ``rodlab export --format`` names them"""
SUFFIXES = {"usd": (".usd", ".usda", ".usdc"), "ply": (".ply",), "hair": (".hair",), "data": (".data",)}
"""file suffixes that make ``out`` a file rather than a folder (single-file formats)"""

__all__ = ["DEFAULT_RADIUS", "ExportError", "FORMATS", "RunData", "export", "export_run", "load_run"]


def _target(run: RunData, fmt: str, out: Path) -> Path:
    if out.suffix.lower() in SUFFIXES[fmt]:
        return out
    if out.suffix and not out.is_dir():
        raise ExportError(f"out {out} has suffix {out.suffix!r}; a {fmt} file must end with "
                          f"{' or '.join(SUFFIXES[fmt])}, or give a folder")
    return out / f"{run.scene}{SUFFIXES[fmt][0]}"


def export_run(run: RunData, fmt: str, out, *, frame=None) -> list[Path]:
    """Export an already loaded ``run`` (see :func:`export`); ``out`` is required."""
    if fmt not in FORMATS:
        raise ExportError(f"format must be one of {', '.join(FORMATS)} (got {fmt!r})")
    out = Path(out)
    if fmt == "vtk":
        from .vtk import write_vtk

        frames = None if frame is None else [run.frame_index(frame)]
        if out.exists() and not out.is_dir():
            raise ExportError(f"out for vtk must be a folder ({out} is a file)")
        return write_vtk(run, out, frames=frames)
    if fmt == "usd":
        from .usd import _pxr, write_usd

        _pxr()  # a missing usd-core is reported before anything is written
        frames = None if frame is None else [run.frame_index(frame)]
        return [write_usd(run, _target(run, fmt, out), frames=frames)]
    k = run.frame_index(frame)
    if fmt == "ply":
        from .ply import write_ply

        return [write_ply(run, _target(run, fmt, out), k)]
    from .hair import write_strands

    return [write_strands(run, _target(run, fmt, out), k, fmt)]


def export(run_dir, fmt: str, out=None, frame: int | None = None, *, radius: float | None = None) -> list[Path]:
    """Export the run in ``run_dir`` (``trajectory.npz`` + ``metrics.json``) to ``fmt``.

    Parameters
    ----------
    run_dir : path
        A folder written by ``rodlab run --out``.
    fmt : str
        One of :data:`FORMATS`.
    out : path, optional
        Folder to write into (default ``run_dir/export``); for the single-file formats also a file
        name with the format's suffix (``.usd``/``.usda``/``.usdc``, ``.ply``, ``.hair``, ``.data``).
    frame : int, optional
        Frame index (negative counts from the end). ``vtk`` and ``usd`` write every frame unless
        one is given; ``ply``, ``hair`` and ``data`` write one frame, the last by default.
    radius : float, optional
        Rod radius [m] to write, overriding the run's (see :mod:`.run` for where it is read from;
        :data:`DEFAULT_RADIUS` when nothing says).

    Returns
    -------
    list of Path
        The files written (for ``vtk`` the ``.pvd`` first).

    Raises
    ------
    ExportError
        Missing or malformed run files, an unknown format, a frame out of range, a missing
        ``usd-core`` for ``usd``.
    """
    if fmt not in FORMATS:
        raise ExportError(f"format must be one of {', '.join(FORMATS)} (got {fmt!r})")
    run = load_run(run_dir, radius=radius)
    return export_run(run, fmt, Path(run_dir) / "export" if out is None else out, frame=frame)
