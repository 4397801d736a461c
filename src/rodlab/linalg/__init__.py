"""Linear algebra shared by the rod methods (compiled with numba, options from :mod:`rodlab.geometry._vec`).

Band layout. Symmetric banded matrices are stored as their **lower band** (:mod:`.banded_ldlt`):
``band[i, k] = A[i, i - k]`` for ``k = 0..p`` (``p`` the half bandwidth), shape ``(n, p + 1)``, entries
with ``i - k < 0`` ignored; every symmetric banded matrix is assembled, passed between packages and
factored in this layout. Two derived compute layouts exist only inside hot loops and are made from it:
the row-aligned full rows and the column-aligned factor of :mod:`.banded_rows` (contiguous windows for
vectorized products and substitutions). Non-symmetric banded matrices use LAPACK's ``gbtrf`` layout,
transposed (:mod:`.banded_lu`).

Solvers (one of each):

* tridiagonal, :mod:`.tridiagonal`: :func:`~.tridiagonal.thomas` (general), :func:`~.tridiagonal.thomas_symmetric`,
  :func:`~.tridiagonal.thomas_masked` (runs of free unknowns), :func:`~.tridiagonal.solve_tridiagonal_masked`
  (symmetric or cyclic, Sherman-Morrison), :func:`~.tridiagonal.solve_tridiagonal` (checked wrapper);
* banded symmetric LDL^T, :mod:`.banded_ldlt`: :func:`~.banded_ldlt.ldlt_factor_band` /
  :func:`~.banded_ldlt.ldlt_solve_band` (any half bandwidth), ``*_band10`` (half bandwidth 10, unrolled,
  bitwise equal), :func:`~.banded_ldlt.band_matvec`; in the row/column-aligned layouts
  :func:`~.banded_rows.cldlt_factor` and :func:`~.banded_rows.rband_matvec`;
* banded LU with partial pivoting, :mod:`.banded_lu` (``gbtrf`` / ``gbtrs`` / ``gbsv``, block variant
  ``block_lu``);
* block-tridiagonal SPD (block Thomas), :mod:`.block_tridiagonal` (any block size, and unrolled 3x3).

The box-constrained QP solvers that run on the lower band (MPRGP, PGS, interior point) live with their
only user, :mod:`rodlab.inverse.qp`.
"""
