"""One world for every method: rods, rigid bodies, welds, boundary conditions, obstacles, loads
(:class:`World`, built by :class:`WorldBuilder`) and one :class:`State` of it."""
from . import shapes
from .builder import WorldBuilder
from .obstacles import Capsule, Cylinder, Plane, Sphere, TriangleMesh
from .state import State
from .world import Body, ContactSettings, RodMaterial, Weld, Wind, World, WorldLoads

__all__ = ["Body", "Capsule", "ContactSettings", "Cylinder", "Plane", "RodMaterial", "Sphere", "State", "TriangleMesh", "Weld", "Wind",
           "World", "WorldBuilder", "WorldLoads", "shapes"]
