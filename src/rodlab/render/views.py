"""Per-scene camera overrides for :func:`rodlab.render.scene.scene_camera` (azimuth and elevation
in degrees, matplotlib's convention, z up). Scenes not listed get the default three-quarter view
(azimuth -60, elevation 25)."""
from __future__ import annotations

SCENE_VIEWS: dict[str, dict] = {
    # planar bending in x-z: look along +y
    "cantilever": {"azimuth": -90.0, "elevation": 8.0},
    "drop-cylinders": {"azimuth": -72.0, "elevation": 18.0},
    "drag-root": {"azimuth": -90.0, "elevation": 10.0},
    "tree": {"azimuth": -75.0, "elevation": 8.0},
    "hairstyle": {"azimuth": -65.0, "elevation": 12.0},
    "helix-gravity": {"azimuth": -60.0, "elevation": 15.0},
    "sagfree-strand": {"azimuth": -90.0, "elevation": 5.0},
    "galpha-tress-gravity": {"azimuth": -60.0, "elevation": 15.0},
}


def view_for(scene_name: str | None) -> dict:
    """The camera override of ``scene_name`` (a copy; empty when it has none)."""
    return dict(SCENE_VIEWS.get(scene_name or "", {}))
