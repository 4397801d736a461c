"""Animations: one rendered picture per recorded frame, written as MP4 (H.264 through
imageio-ffmpeg, which ships its own ffmpeg binary) or GIF (imageio with Pillow).

The camera is fitted once to every frame, so the view does not jump; each picture carries the
frame's time in its top left corner. ``pip install 'rodlab[render]'`` installs what it needs.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..model import ModelError, require
from .scene import RenderScene, render_frame, scene_camera

FORMATS = ("mp4", "gif")


class RenderDependencyError(ModelError):
    """An optional package the animation needs is not installed (the message names the extra)."""


def _imageio():
    try:
        import imageio.v2 as imageio
    except ModuleNotFoundError:
        raise RenderDependencyError("animations need imageio: pip install 'rodlab[render]' (imageio, imageio-ffmpeg)") from None
    return imageio


def _check_ffmpeg() -> None:
    try:
        import imageio_ffmpeg
    except ModuleNotFoundError:
        raise RenderDependencyError("MP4 animations need imageio-ffmpeg: pip install 'rodlab[render]' "
                                    "(or use --animate gif)") from None
    imageio_ffmpeg.get_ffmpeg_exe()


def check_available(fmt: str) -> None:
    """Raise :class:`RenderDependencyError` (naming the ``render`` extra) when writing ``fmt``
    (``"mp4"`` or ``"gif"``) needs a package that is not installed; call before a long run."""
    require(fmt in FORMATS, f"animation format must be one of {', '.join(FORMATS)} (got {fmt!r})")
    _imageio()
    if fmt == "mp4":
        _check_ffmpeg()


def _stamp(image: np.ndarray, text: str) -> np.ndarray:
    """``text`` in dark grey on a light box in the top left corner (Pillow's default font)."""
    from PIL import Image, ImageDraw

    pic = Image.fromarray(image)
    draw = ImageDraw.Draw(pic)
    box = draw.textbbox((6, 4), text)
    draw.rectangle((box[0] - 3, box[1] - 2, box[2] + 3, box[3] + 2), fill=(255, 255, 255))
    draw.text((6, 4), text, fill=(50, 50, 50))
    return np.asarray(pic)


def playback_fps(t: np.ndarray) -> float:
    """Frames per second that play ``t`` (F,) [s] in real time, kept within [5, 30] (a run
    slower or faster than that plays slowed down or sped up; the stamped times stay true)."""
    t = np.asarray(t, dtype=float)
    if len(t) < 2 or not t[-1] > t[0]:
        return 10.0
    return float(np.clip((len(t) - 1) / (t[-1] - t[0]), 5.0, 30.0))


def write_animation(path, scene: RenderScene, x_frames: np.ndarray, t: np.ndarray, *, fmt: str | None = None,
                    edge_m1_frames=None, body_x=None, body_q=None, view: dict | None = None, width: int = 640,
                    height: int = 480, fps: float | None = None, supersample: int = 1, title: str = "",
                    max_frames: int = 2000) -> Path:
    """Write ``path``: one picture of ``scene`` per frame of ``x_frames`` (F, N, 3) [m] at times
    ``t`` (F,) [s]; ``fmt`` ``"mp4"`` or ``"gif"`` (default: the suffix). ``edge_m1_frames``
    (F, E, 3), ``body_x`` (F, B, 3), ``body_q`` (F, B, 4): per-frame directors and bodies where
    recorded (without directors the stripe follows parallel-transported frames, so no twist
    shows, and every picture says so). ``width`` and ``height`` [px] are rounded up to multiples of 16 (H.264 blocks).
    Returns the path."""
    path = Path(path)
    fmt = (fmt or path.suffix.lstrip(".")).lower()
    require(fmt in FORMATS, f"animation format must be one of {', '.join(FORMATS)} (got {fmt!r})")
    x_frames = np.asarray(x_frames, dtype=float)
    t = np.asarray(t, dtype=float).reshape(-1)
    require(x_frames.ndim == 3 and x_frames.shape[2] == 3 and x_frames.shape[0] >= 1,
            f"animation positions must be (F, N, 3) with F >= 1 (got {x_frames.shape})")
    require(t.shape == (x_frames.shape[0],), f"animation times must be (F,) = ({x_frames.shape[0]},) (got {t.shape})")
    require(x_frames.shape[0] <= max_frames, f"animation has {x_frames.shape[0]} frames; at most max_frames = {max_frames}")
    if edge_m1_frames is not None:
        edge_m1_frames = np.asarray(edge_m1_frames, dtype=float)
        require(edge_m1_frames.shape == (x_frames.shape[0], scene.n_edges, 3),
                f"edge_m1_frames must be (F, E, 3) = ({x_frames.shape[0]}, {scene.n_edges}, 3) "
                f"(got {edge_m1_frames.shape})")
    width, height = 16 * -(-int(width) // 16), 16 * -(-int(height) // 16)
    imageio = _imageio()
    if fmt == "mp4":
        _check_ffmpeg()
    camera = scene_camera(scene, x_frames, body_x=body_x, view=view, width=width, height=height)
    bounds = (x_frames.reshape(-1, 3).min(axis=0), x_frames.reshape(-1, 3).max(axis=0))
    fps = playback_fps(t) if fps is None else float(fps)
    require(0 < fps <= 120, f"animation fps must be in (0, 120] (got {fps})")
    path.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "mp4":
        writer = imageio.get_writer(path, format="FFMPEG", mode="I", fps=fps, codec="libx264", quality=7,
                                    pixelformat="yuv420p", macro_block_size=16)
    else:
        writer = imageio.get_writer(path, format="GIF", mode="I", duration=1000.0 / fps, loop=0)
    try:
        for f in range(x_frames.shape[0]):
            image, info = render_frame(scene, x_frames[f], camera=camera, bounds=bounds, supersample=supersample,
                                       edge_m1=None if edge_m1_frames is None else edge_m1_frames[f],
                                       body_x=None if body_x is None else body_x[f], body_q=None if body_q is None else body_q[f])
            label = f"{title}  t = {t[f]:.4g} s" if title else f"t = {t[f]:.4g} s"
            if edge_m1_frames is None:  # an older run: no recorded twist (docs/pictures.md)
                label += "  (stripe: transported frames, twist not recorded)"
            writer.append_data(_stamp(image, label))
    finally:
        writer.close()
    return path
