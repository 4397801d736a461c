"""Rigid-body coupling for Discrete Elastic Rods (Bergou et al. 2008, Sec. 8): docs/coupling.md."""
from .stepper import CoupledDERStepper, CoupledState, RigidBody, Weld

__all__ = ["CoupledDERStepper", "CoupledState", "RigidBody", "Weld"]
