"""Generalized-alpha Cosserat rod ("GA paper": Sobottka, Lay and Weber, "Stable Integration of the
Dynamic Cosserat Equations with Application to Hair Modeling", 2008; docs/galpha.md): 12 nodal
unknowns (u, omega, kappa, n) in local director coordinates (plus the local gravity vector),
generalized-alpha in time and space, Newton relaxation on a block-banded Jacobian.

Internals of ``rodlab.make_simulator(world, "galpha")`` (the public front door; docs/world.md),
kept importable for the simulator, the cosseratbench adapter and kernel-level tests, with no
promise of stability (docs/architecture.md)."""

from .boundary import Boundary, RootMotion, TipLoad, TipMotion, line_constraint
from .model import Coefficients, GAlphaRod
from .solver import GAlphaOptions, GAlphaSolver, StepResult
from .state import GAlphaState

__all__ = ["Boundary", "RootMotion", "TipLoad", "TipMotion", "line_constraint", "Coefficients", "GAlphaRod",
           "GAlphaOptions", "GAlphaSolver", "StepResult", "GAlphaState"]
