"""cosseratbench adapter for rodlab's ``compact`` method (see ``rodlab.bench_adapters.cosseratbench``)."""
from __future__ import annotations

from .cosseratbench import _RodlabSolver


class CompactSolver(_RodlabSolver):
    method = "compact"
    name = "rodlab-compact"
    capabilities = frozenset()
