"""Hair-file export: one frame's rods as strands, through :mod:`rodlab.hair.formats`.

``.hair`` (Cem Yuksel's format: segment counts and float32 points) and ``.data`` (USC-HairSalon,
Hu et al. 2015: float32 points). Coordinates are written in metres as stored in the run. Neither
format knows closed curves or radii: a closed rod is written as an open strand (its first vertex
is not repeated) and the radius is not written (``.hair`` keeps its default thickness 1).
"""
from __future__ import annotations

from pathlib import Path

from ...hair.formats import write_data, write_hair
from .run import ExportError, RunData


def write_strands(run: RunData, path, k: int, fmt: str) -> Path:
    """Write frame ``k``'s rods as strands to ``path`` in ``fmt`` ("hair" or "data")."""
    path = Path(path)
    strands = run.rod_points(k)
    path.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "hair":
        longest = max(s.shape[0] for s in strands)
        if longest > 65536:
            raise ExportError(f".hair strands hold at most 65536 vertices (a rod has {longest}); use --format data")
        write_hair(path, strands, info=f"rodlab {run.scene} frame {k}")
    elif fmt == "data":
        write_data(path, strands)
    else:
        raise ExportError(f"hair format must be 'hair' or 'data' (got {fmt!r})")
    return path
