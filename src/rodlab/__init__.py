"""rodlab: simulation of thin elastic rods.

Methods: Discrete Elastic Rods (Bergou et al. 2008), compact inextensible Cosserat rods
(Zhao et al.), generalized-alpha Cosserat rods, sag-free parameter optimisation of DER strands.
SI units throughout.
"""
from . import _numba_cache

_numba_cache.install()  # before any kernel compiles: process-safe on-disk cache (see the module)

from .model import BoundaryConditions, Clamp, CrossSection, Loads, Material, ModelError, PointForce, Rod
from .scenes.registry import SceneError, SceneResult, run_scene, scenes
from .state import RodState
from .world import State, World, WorldBuilder, shapes
from .solvers import SimulationError, UnsupportedFeature, make_simulator

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
    "SimulationError",
    "State",
    "UnsupportedFeature",
    "World",
    "WorldBuilder",
    "make_simulator",
    "shapes",
    "run_scene",
    "scenes",
]
