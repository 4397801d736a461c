"""Box-constrained convex QPs on banded SPD matrices: MPRGP with preconditioners, PGS, interior point.

Files: :mod:`.mprgp` (MPRGP, every preconditioner), :mod:`.mprgp_fast` (its compiled fast path),
:mod:`.preconditioners` and :mod:`.fast_preconditioners` (their set-up and application), :mod:`.box`
(free set and projected gradients), :mod:`.pgs`, :mod:`.interior_point`. Used by the sag-free optimizer
(:mod:`rodlab.inverse.sagfree`).

Problem: ``min 1/2 x^T A x - b^T x`` subject to ``lo <= x <= hi`` (entries may be infinite), ``A`` given
by its lower band (see :mod:`rodlab.linalg.banded_ldlt`).

* :func:`mprgp` - Modified Proportioning with Reduced Gradient Projections (Dostal and Schoberl 2005):
  conjugate gradients on the free set, proportioning steps along the chopped gradient when it
  dominates, expansion steps (feasible half-step, then a projected gradient step of fixed length
  ``abar = 1.9 / ||A||``, ``||A||`` bounded by the largest absolute row sum). Our addition: the
  expansion first tries the projected *preconditioned* step ``P(x - a M_F^{-1} phi)``, ``a`` in
  {1, 1/2, 1/4}, and takes it as soon as it lowers the objective (else the fixed-length step).
  The fixed step is ~1/||A|| and does almost nothing on the stiff sag-free systems (condition
  numbers beyond 1e10), where each expansion would add a single bound; the preconditioned step
  keeps the iteration monotone and activates many bounds at once. (This replaces the rate
  guarantee of the fixed step by monotone decrease; the reference-solution tests check the result.) Preconditioning acts on the free set only (``PC_*`` codes):

  - ``PC_NONE``, ``PC_DIAG`` (Jacobi), ``PC_WJ`` (two weighted-Jacobi sweeps, weight 2/3, from zero),
    ``PC_SSOR`` (symmetric SOR, weight 1.2);
  - ``PC_IC`` / ``PC_MIC``: incomplete LDL^T on the nonzero pattern of ``A`` (modified: dropped
    fill added to the pivot), ``PC_ASC``: the complete banded LDL^T (Takahashi and Batty, Sec. V-A).
    All three are applied by the **filtered symmetric substitution** of Takahashi and Batty
    (Eqs. 32-35): forward ``y_i = f_i (r_i - sum_{j<i} L_ij y_j)``, scaling ``y_i / D_i``, backward
    ``z_i = f_i (y_i/D_i - sum_{j>i} L_ji z_j)`` with ``f_i = 0`` on active entries. The operator is
    ``L_F^{-T} F D^{-1} F L_F^{-1}`` with ``L_F = I + F (L - I) F``: symmetric, reuses the factor whatever
    the active set, and equal to ``A^{-1}`` when nothing is active (one iteration).
  - ``PC_ASCS`` ("asc-schur", our extension): the same complete factor, applied as an exact solve on
    the free set through a Schur-complement (capacitance) correction over the active set
    (:func:`schur_apply`). With ``k`` active bounds the filtered factor differs from ``A_FF`` by a
    rank-``k`` term, so plain ASC needs about ``k + 1`` CG steps per active set; the corrected one needs
    one, at the price of one cached solve per newly active index and a ``k x k`` Cholesky per change.
    Its compiled fast path (:func:`.fast_preconditioners._schur_fast` inside :func:`mprgp_fast`, the default of the sag-free
    optimizer) updates that Cholesky factor by one appended row per newly active index.

* :func:`pgs` - projected Gauss-Seidel. :func:`ipm` - primal-dual interior point (Mehrotra-free,
  centering 0.1, fraction to the boundary 0.995) with a banded LDL^T of ``A + diag`` per iteration.

Every solver records the projected-gradient norm per iteration into ``hist`` (for the convergence
figures) and returns ``(iterations, final residual)``.
"""
from __future__ import annotations

from .box import norm_bound
from .fast_preconditioners import FAST_PCS, prepare_fast, prepare_rows, rfiltered_apply
from .interior_point import ipm
from .mprgp import mprgp, mprgp_core
from .mprgp_fast import NWS, MprgpWorkspace, mprgp_asc_solve, mprgp_fast, mprgp_fast_solve, mprgp_rows_solve, schur_scratch
from .pgs import pgs
from .preconditioners import (PC_ASC, PC_ASCS, PC_DIAG, PC_IC, PC_MIC, PC_NAMES, PC_NONE, PC_SSOR, PC_WJ, SCHUR_CAP,
                              apply_filtered_ldlt, apply_pc, ic_factor_band, prepare_pc, schur_apply)

__all__ = ["FAST_PCS", "NWS", "PC_ASC", "PC_ASCS", "PC_DIAG", "PC_IC", "PC_MIC", "PC_NAMES", "PC_NONE", "PC_SSOR", "PC_WJ",
           "SCHUR_CAP", "MprgpWorkspace", "apply_filtered_ldlt", "apply_pc", "ic_factor_band", "ipm", "mprgp", "mprgp_asc_solve",
           "mprgp_core", "mprgp_fast", "mprgp_fast_solve", "mprgp_rows_solve", "norm_bound", "pgs", "prepare_fast", "prepare_pc",
           "prepare_rows", "rfiltered_apply", "schur_apply", "schur_scratch"]
