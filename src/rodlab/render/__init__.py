"""Pictures and animations of rods: shaded tubes of their real radius with a stripe along the
material director d1, obstacles and rigid bodies, drawn by a numba z-buffer rasteriser into an RGB
array (docs/pictures.md).

- :class:`RenderScene`, :func:`render_frame`, :func:`render_state`: one frame;
- :func:`rodlab.render.figure.scene_figure`: the 3D view beside time series of a run's metrics;
- :func:`rodlab.render.animate.write_animation`: MP4 (imageio-ffmpeg) or GIF, one picture per frame.
"""
from .raster import Camera, fit_camera, rasterize
from .scene import FRAMES_MATERIAL, FRAMES_TRANSPORTED, FrameInfo, RenderScene, render_frame, render_state

__all__ = ["Camera", "FRAMES_MATERIAL", "FRAMES_TRANSPORTED", "FrameInfo", "RenderScene", "fit_camera", "rasterize",
           "render_frame", "render_state"]
