"""Named scenes: one builder per paper experiment, registered by name (see registry.py)."""
from .registry import Param, Progress, SceneError, SceneResult, get_scene, register, run_scene, scenes

__all__ = ["Param", "Progress", "SceneError", "SceneResult", "get_scene", "register", "run_scene", "scenes"]
