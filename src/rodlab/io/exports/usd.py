"""USD export: the rods as ``BasisCurves`` with time-sampled points, through ``pxr`` (usd-core).

One prim ``/Rods/open`` (``wrap = nonperiodic``) holds the open rods and, where the run has closed
rods, ``/Rods/closed`` (``wrap = periodic``) the closed ones; both are ``type = linear`` with one
``curveVertexCounts`` entry per rod, in the run's rod order. ``points`` (float32, [m]) and, where
the run has velocities, ``velocities`` [m/s] and ``extent`` are time-sampled per frame; ``widths``
= 2 x radius [m] per vertex (``vertex`` interpolation) is constant. The stage is Z-up with
``metersPerUnit = 1``; frame k sits at time code ``(t_k - t_0) x timeCodesPerSecond`` with
``timeCodesPerSecond = (F - 1) / (t_{F-1} - t_0)`` frames per simulated second (uniform frames
land on 0, 1, ..., F - 1; one frame, or times that do not increase, get codes 0, 1, ... at 24 per
second). Each prim's ``customData`` ``rodlab:rods`` lists the run's indices of the rods it holds.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from .run import ExportError, RunData

INSTALL_HINT = "USD export needs the usd-core package (module pxr): pip install 'rodlab[usd]' (or pip install usd-core)"


def _pxr():
    try:
        from pxr import Sdf, Usd, UsdGeom, Vt
    except ImportError:
        raise ExportError(INSTALL_HINT) from None
    return Sdf, Usd, UsdGeom, Vt


def time_codes(run: RunData, frames: list[int]) -> tuple[np.ndarray, float]:
    """Time code of each frame in ``frames`` and the stage's ``timeCodesPerSecond``."""
    t = run.t[frames]
    if len(frames) < 2 or not np.all(np.diff(t) > 0):
        return np.arange(len(frames), dtype=np.float64), 24.0
    per_second = (len(frames) - 1) / float(t[-1] - t[0])
    codes = (t - t[0]) * per_second
    near = np.abs(codes - np.round(codes)) < 1e-9 * max(1.0, len(frames))
    codes[near] = np.round(codes[near])
    return codes, per_second


def write_usd(run: RunData, path, *, frames=None) -> Path:
    """Write ``frames`` (default all) of ``run`` to the USD file ``path`` (``.usd``, ``.usda``
    or ``.usdc``)."""
    Sdf, Usd, UsdGeom, Vt = _pxr()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    frames = list(range(run.n_frames)) if frames is None else list(frames)
    codes, per_second = time_codes(run, frames)
    if path.exists():
        path.unlink()  # CreateNew refuses an existing layer
    stage = Usd.Stage.CreateNew(str(path))
    UsdGeom.SetStageUpAxis(stage, UsdGeom.Tokens.z)
    UsdGeom.SetStageMetersPerUnit(stage, 1.0)
    stage.SetTimeCodesPerSecond(per_second)
    stage.SetFramesPerSecond(per_second)
    stage.SetStartTimeCode(float(codes[0]))
    stage.SetEndTimeCode(float(codes[-1]))
    root = UsdGeom.Xform.Define(stage, "/Rods")
    stage.SetDefaultPrim(root.GetPrim())
    root.GetPrim().SetCustomDataByKey("rodlab:scene", run.scene)
    velocities = [run.velocity(k) for k in frames]
    has_v = all(v is not None for v in velocities)
    counts = run.rod_vertex_count
    for name, closed in (("open", False), ("closed", True)):
        rods = np.flatnonzero(run.rod_closed == closed)
        if rods.size == 0:
            continue
        verts = np.concatenate([np.arange(run.rod_offsets[r], run.rod_offsets[r + 1]) for r in rods])
        curves = UsdGeom.BasisCurves.Define(stage, f"/Rods/{name}")
        curves.CreateTypeAttr(UsdGeom.Tokens.linear)
        curves.CreateWrapAttr(UsdGeom.Tokens.periodic if closed else UsdGeom.Tokens.nonperiodic)
        curves.CreateCurveVertexCountsAttr(Vt.IntArray.FromNumpy(counts[rods].astype(np.int32)))
        widths = (2.0 * run.vertex_radius[verts]).astype(np.float32)
        curves.CreateWidthsAttr(Vt.FloatArray.FromNumpy(widths))
        curves.SetWidthsInterpolation(UsdGeom.Tokens.vertex)
        curves.GetPrim().SetCustomDataByKey("rodlab:rods", Vt.IntArray.FromNumpy(rods.astype(np.int32)))
        points_attr = curves.CreatePointsAttr()
        extent_attr = curves.CreateExtentAttr()
        vel_attr = curves.CreateVelocitiesAttr() if has_v else None
        half = widths[:, None].astype(np.float64) / 2.0
        for k, code, v in zip(frames, codes, velocities):
            p = run.x[k, verts]
            tc = Usd.TimeCode(float(code))
            points_attr.Set(Vt.Vec3fArray.FromNumpy(p.astype(np.float32)), tc)
            ext = np.stack([(p - half).min(axis=0), (p + half).max(axis=0)]).astype(np.float32)
            extent_attr.Set(Vt.Vec3fArray.FromNumpy(ext), tc)
            if vel_attr is not None:
                vel_attr.Set(Vt.Vec3fArray.FromNumpy(v[verts].astype(np.float32)), tc)
    stage.GetRootLayer().Save()
    return path
