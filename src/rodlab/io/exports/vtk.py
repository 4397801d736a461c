"""VTK export: one XML PolyData file (``.vtp``) per frame and a ``.pvd`` time series.

Each ``.vtp`` holds the frame's vertices as ``Points`` (Float64, [m]), one polyline cell per rod
(a closed rod's polyline repeats its first vertex at the end), the per-vertex fields of
:meth:`rodlab.io.exports.run.RunData.point_fields` as ``PointData`` (Float64: ``velocity`` [m/s],
``radius`` [m], ``curvature`` [1/m], ``twist`` [rad/m], ``contact_force`` [N], each where the run
has it), the rod index of each cell as ``CellData`` ``rod`` and the frame's time as ``FieldData``
``TimeValue`` [s]. Arrays are written inline, base64 encoded, uncompressed, little-endian, with a
UInt64 byte-count header (VTK XML file format, version 1.0). The ``.pvd`` collection lists the
frames with their times, so that ParaView opens the animation.
"""
from __future__ import annotations

import base64
from pathlib import Path
from xml.sax.saxutils import quoteattr

import numpy as np

from .run import RunData

_VTK_TYPE = {np.dtype("<f8"): "Float64", np.dtype("<f4"): "Float32", np.dtype("<i8"): "Int64"}


def _data_array(values: np.ndarray, name: str | None = None, *, indent: str = "        ", tuples: bool = False) -> str:
    a = np.ascontiguousarray(values)
    a = a.astype(a.dtype.newbyteorder("<"), copy=False)
    comps = 1 if a.ndim == 1 else a.shape[1]
    raw = a.tobytes()
    payload = base64.b64encode(np.uint64(len(raw)).astype("<u8").tobytes() + raw).decode("ascii")
    attrs = f'type="{_VTK_TYPE[a.dtype]}"'
    if name is not None:
        attrs += f" Name={quoteattr(name)}"
    attrs += f' NumberOfComponents="{comps}"' + (f' NumberOfTuples="{a.shape[0]}"' if tuples else "") + ' format="binary"'
    return f"{indent}<DataArray {attrs}>{payload}</DataArray>\n"


def polyline_cells(run: RunData) -> tuple[np.ndarray, np.ndarray]:
    """VTK ``connectivity`` and ``offsets`` (Int64) of one polyline per rod."""
    pieces, ends, total = [], [], 0
    for r, (a, b) in enumerate(zip(run.rod_offsets[:-1], run.rod_offsets[1:])):
        idx = np.arange(a, b, dtype=np.int64)
        if run.rod_closed[r]:
            idx = np.append(idx, a)
        pieces.append(idx)
        total += idx.shape[0]
        ends.append(total)
    return np.concatenate(pieces), np.array(ends, dtype=np.int64)


def vtp_text(run: RunData, k: int, cells=None) -> str:
    """The ``.vtp`` document of frame ``k``."""
    conn, offs = cells if cells is not None else polyline_cells(run)
    fields = run.point_fields(k)
    vectors = [n for n, v in fields.items() if v.ndim == 2]
    head = '      <PointData Scalars="radius"' + (f' Vectors="{vectors[0]}"' if vectors else "") + ">\n"
    parts = [
        '<?xml version="1.0"?>\n',
        '<VTKFile type="PolyData" version="1.0" byte_order="LittleEndian" header_type="UInt64">\n',
        "  <PolyData>\n",
        "    <FieldData>\n",
        _data_array(np.array([run.t[k]], dtype="<f8"), "TimeValue", indent="      ", tuples=True),
        "    </FieldData>\n",
        f'    <Piece NumberOfPoints="{run.n_vertices}" NumberOfVerts="0" NumberOfLines="{run.n_rods}" '
        'NumberOfStrips="0" NumberOfPolys="0">\n',
        head,
        *(_data_array(np.asarray(v, dtype="<f8"), n) for n, v in fields.items()),
        "      </PointData>\n",
        "      <CellData>\n",
        _data_array(np.arange(run.n_rods, dtype="<i8"), "rod"),
        "      </CellData>\n",
        "      <Points>\n",
        _data_array(np.asarray(run.x[k], dtype="<f8"), "Points"),
        "      </Points>\n",
        "      <Lines>\n",
        _data_array(conn, "connectivity"),
        _data_array(offs, "offsets"),
        "      </Lines>\n",
        "    </Piece>\n",
        "  </PolyData>\n",
        "</VTKFile>\n",
    ]
    return "".join(parts)


def write_vtk(run: RunData, out_dir, *, frames=None) -> list[Path]:
    """Write ``out_dir/SCENE.pvd`` and ``out_dir/SCENE/frame_#####.vtp`` for ``frames`` (indices;
    default every frame). Returns the paths written, the ``.pvd`` first."""
    out_dir = Path(out_dir)
    frames = list(range(run.n_frames)) if frames is None else list(frames)
    sub = out_dir / run.scene
    sub.mkdir(parents=True, exist_ok=True)
    cells = polyline_cells(run)
    written, entries = [], []
    for k in frames:
        path = sub / f"frame_{k:05d}.vtp"
        path.write_text(vtp_text(run, k, cells), encoding="ascii")
        written.append(path)
        rel = path.relative_to(out_dir).as_posix()
        entries.append(f'    <DataSet timestep="{float(run.t[k])!r}" group="" part="0" file={quoteattr(rel)}/>\n')
    pvd = out_dir / f"{run.scene}.pvd"
    pvd.write_text('<?xml version="1.0"?>\n<VTKFile type="Collection" version="0.1" byte_order="LittleEndian">\n'
                   "  <Collection>\n" + "".join(entries) + "  </Collection>\n</VTKFile>\n", encoding="ascii")
    return [pvd, *written]
