"""Reading and writing: scene outputs, trajectories, checkpoints."""
from .outputs import write_scene_outputs

__all__ = ["write_scene_outputs"]
