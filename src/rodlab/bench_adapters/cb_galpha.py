"""cosseratbench adapter for rodlab's ``galpha`` method (see ``rodlab.bench_adapters.cosseratbench``)."""
from __future__ import annotations

from .cosseratbench import _RodlabSolver


class GAlphaSolver(_RodlabSolver):
    method = "galpha"
    name = "rodlab-galpha"
    capabilities = frozenset()
