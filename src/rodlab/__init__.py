"""rodlab: simulation of thin elastic rods.

Methods: Discrete Elastic Rods (Bergou et al. 2008), compact inextensible Cosserat rods
(Zhao et al.), generalized-alpha Cosserat rods, sag-free parameter optimisation of DER strands.
SI units throughout.
"""
from .model import BoundaryConditions, Clamp, CrossSection, Loads, Material, ModelError, PointForce, Rod
from .scenes.registry import SceneError, SceneResult, run_scene, scenes
from .state import RodState

__version__ = "0.1.0"

__all__ = [
    "BoundaryConditions",
    "Clamp",
    "CrossSection",
    "Loads",
    "Material",
    "ModelError",
    "PointForce",
    "Rod",
    "RodState",
    "SceneError",
    "SceneResult",
    "run_scene",
    "scenes",
]
