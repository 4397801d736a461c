"""Compact inextensible Cosserat rods (Zhao et al.): root position + one axis-angle per segment,
implicit Euler by SQP with O(n) products, PCG with a hybrid block-tridiagonal preconditioner,
and an active-set method for constraints. See docs/compact.md.

Internals of ``rodlab.make_simulator(world, "compact")`` (the public front door; docs/world.md),
kept importable for the simulator, the adapters and kernel-level tests, with no promise of
stability (docs/architecture.md)."""
from .sqp import CompactModel, CompactSolver, CompactState, SolverOptions, StepStats

__all__ = ["CompactModel", "CompactSolver", "CompactState", "SolverOptions", "StepStats"]
