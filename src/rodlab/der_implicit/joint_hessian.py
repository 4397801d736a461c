"""The 4D joint's Gauss-Newton Hessian block added into the band from registers (implicit DER's hot loop).

:func:`joint_gn_hessian_add4d_regs` is :func:`rodlab.geometry.der_joint.joint_gn_hessian_add4d`
(the Gram matrix ``S = sum_r C_r J_r^T J_r`` of the joint's five compact Jacobian rows, Bergou et al.
2008 "Discrete Elastic Rods" Eqs. 2-5 in the Gauss-Newton form of Takahashi and Batty "A sag-free
initialization of discrete elastic rods", Sec. VI, mapped onto the 11 x 11 block through
``J = [-u, t0, u - v, t1, v]``) with every weighted row entry and Gram entry a local value instead of
a slot of the workspace ``R``: the compiler then keeps them in registers (or its own stack), where
the workspace version stores 76 values to ``R`` and, since ``R`` and the band may alias as far as it
can tell, reloads them after every store into the band. Same products, same sums from the same
0.0 in the same order, same band updates: every band entry is bitwise that of
``joint_gn_hessian_add4d`` (tests/test_der_implicit_energies.py checks it on random rows).
Generated once by writing out the loops of ``joint_gn_hessian_add4d`` and ``_scatter_gram`` of
:mod:`rodlab.geometry.der_joint` (rows ``r``, columns ``p``: 0-2 ``u``, 3 ``t0``, 4-6 ``v``, 7 ``t1``;
``r{r}{p}`` the row entry, ``w{r}{p} = C_r r{r}{p}``, ``s{p}{c}`` the Gram entry ``S[p, c]``; the
products with the exact zeros of rows 0, 1 (column ``t1``) and 2, 3 (column ``t0``) are left out as
there).
"""
from __future__ import annotations

from numba import njit

from ..geometry._vec import JIT
from ..geometry.der_joint import ROW_WEIGHT


@njit(inline="always", **JIT)
def joint_gn_hessian_add4d_regs(band, base, R):
    """Add the 4D joint's Gauss-Newton block of the compact rows ``R`` (weights at ``ROW_WEIGHT``,
    :func:`rodlab.geometry.der_joint.joint_rows`) into the lower band ``band`` at the joint's unknowns
    ``base .. base + 10``; bitwise :func:`rodlab.geometry.der_joint.joint_gn_hessian_add4d` (module
    docstring). Writes nothing into ``R``."""
    c0, c1, c2, c3, c4 = R[ROW_WEIGHT + 0], R[ROW_WEIGHT + 1], R[ROW_WEIGHT + 2], R[ROW_WEIGHT + 3], R[ROW_WEIGHT + 4]
    r00, r01, r02, r03, r04, r05, r06 = R[0], R[1], R[2], R[3], R[4], R[5], R[6]
    r10, r11, r12, r13, r14, r15, r16 = R[8], R[9], R[10], R[11], R[12], R[13], R[14]
    r20, r21, r22, r24, r25, r26, r27 = R[16], R[17], R[18], R[20], R[21], R[22], R[23]
    r30, r31, r32, r34, r35, r36, r37 = R[24], R[25], R[26], R[28], R[29], R[30], R[31]
    r40, r41, r42, r43, r44, r45, r46, r47 = R[32], R[33], R[34], R[35], R[36], R[37], R[38], R[39]
    w00, w01, w02, w03, w04, w05, w06 = c0 * r00, c0 * r01, c0 * r02, c0 * r03, c0 * r04, c0 * r05, c0 * r06
    w10, w11, w12, w13, w14, w15, w16 = c1 * r10, c1 * r11, c1 * r12, c1 * r13, c1 * r14, c1 * r15, c1 * r16
    w20, w21, w22, w24, w25, w26, w27 = c2 * r20, c2 * r21, c2 * r22, c2 * r24, c2 * r25, c2 * r26, c2 * r27
    w30, w31, w32, w34, w35, w36, w37 = c3 * r30, c3 * r31, c3 * r32, c3 * r34, c3 * r35, c3 * r36, c3 * r37
    w40, w41, w42, w43 = c4 * r40, c4 * r41, c4 * r42, c4 * r43
    w44, w45, w46, w47 = c4 * r44, c4 * r45, c4 * r46, c4 * r47
    s00 = ((((0.0 + w00 * r00) + w10 * r10) + w20 * r20) + w30 * r30) + w40 * r40
    s10 = ((((0.0 + w01 * r00) + w11 * r10) + w21 * r20) + w31 * r30) + w41 * r40
    s11 = ((((0.0 + w01 * r01) + w11 * r11) + w21 * r21) + w31 * r31) + w41 * r41
    s20 = ((((0.0 + w02 * r00) + w12 * r10) + w22 * r20) + w32 * r30) + w42 * r40
    s21 = ((((0.0 + w02 * r01) + w12 * r11) + w22 * r21) + w32 * r31) + w42 * r41
    s22 = ((((0.0 + w02 * r02) + w12 * r12) + w22 * r22) + w32 * r32) + w42 * r42
    s30 = ((0.0 + w03 * r00) + w13 * r10) + w43 * r40
    s31 = ((0.0 + w03 * r01) + w13 * r11) + w43 * r41
    s32 = ((0.0 + w03 * r02) + w13 * r12) + w43 * r42
    s33 = ((0.0 + w03 * r03) + w13 * r13) + w43 * r43
    s40 = ((((0.0 + w04 * r00) + w14 * r10) + w24 * r20) + w34 * r30) + w44 * r40
    s41 = ((((0.0 + w04 * r01) + w14 * r11) + w24 * r21) + w34 * r31) + w44 * r41
    s42 = ((((0.0 + w04 * r02) + w14 * r12) + w24 * r22) + w34 * r32) + w44 * r42
    s43 = ((0.0 + w04 * r03) + w14 * r13) + w44 * r43
    s44 = ((((0.0 + w04 * r04) + w14 * r14) + w24 * r24) + w34 * r34) + w44 * r44
    s50 = ((((0.0 + w05 * r00) + w15 * r10) + w25 * r20) + w35 * r30) + w45 * r40
    s51 = ((((0.0 + w05 * r01) + w15 * r11) + w25 * r21) + w35 * r31) + w45 * r41
    s52 = ((((0.0 + w05 * r02) + w15 * r12) + w25 * r22) + w35 * r32) + w45 * r42
    s53 = ((0.0 + w05 * r03) + w15 * r13) + w45 * r43
    s54 = ((((0.0 + w05 * r04) + w15 * r14) + w25 * r24) + w35 * r34) + w45 * r44
    s55 = ((((0.0 + w05 * r05) + w15 * r15) + w25 * r25) + w35 * r35) + w45 * r45
    s60 = ((((0.0 + w06 * r00) + w16 * r10) + w26 * r20) + w36 * r30) + w46 * r40
    s61 = ((((0.0 + w06 * r01) + w16 * r11) + w26 * r21) + w36 * r31) + w46 * r41
    s62 = ((((0.0 + w06 * r02) + w16 * r12) + w26 * r22) + w36 * r32) + w46 * r42
    s63 = ((0.0 + w06 * r03) + w16 * r13) + w46 * r43
    s64 = ((((0.0 + w06 * r04) + w16 * r14) + w26 * r24) + w36 * r34) + w46 * r44
    s65 = ((((0.0 + w06 * r05) + w16 * r15) + w26 * r25) + w36 * r35) + w46 * r45
    s66 = ((((0.0 + w06 * r06) + w16 * r16) + w26 * r26) + w36 * r36) + w46 * r46
    s70 = ((0.0 + w27 * r20) + w37 * r30) + w47 * r40
    s71 = ((0.0 + w27 * r21) + w37 * r31) + w47 * r41
    s72 = ((0.0 + w27 * r22) + w37 * r32) + w47 * r42
    s73 = 0.0 + w47 * r43
    s74 = ((0.0 + w27 * r24) + w37 * r34) + w47 * r44
    s75 = ((0.0 + w27 * r25) + w37 * r35) + w47 * r45
    s76 = ((0.0 + w27 * r26) + w37 * r36) + w47 * r46
    s77 = ((0.0 + w27 * r27) + w37 * r37) + w47 * r47
    band[base + 0, 0] += s00
    band[base + 4, 0] += s00 - s40 - s40 + s44
    band[base + 8, 0] += s44
    band[base + 4, 4] += s40 - s00
    band[base + 8, 8] -= s40
    band[base + 8, 4] += s40 - s44
    band[base + 4, 3] += s41 - s10
    band[base + 8, 7] -= s41
    band[base + 8, 3] += s41 - s54
    band[base + 4, 2] += s42 - s20
    band[base + 8, 6] -= s42
    band[base + 8, 2] += s42 - s64
    band[base + 1, 1] += s10
    band[base + 5, 1] += s10 - s41 - s50 + s54
    band[base + 9, 1] += s54
    band[base + 5, 5] += s50 - s10
    band[base + 9, 9] -= s50
    band[base + 9, 5] += s50 - s54
    band[base + 1, 0] += s11
    band[base + 5, 0] += s11 - s51 - s51 + s55
    band[base + 9, 0] += s55
    band[base + 5, 4] += s51 - s11
    band[base + 9, 8] -= s51
    band[base + 9, 4] += s51 - s55
    band[base + 5, 3] += s52 - s21
    band[base + 9, 7] -= s52
    band[base + 9, 3] += s52 - s65
    band[base + 2, 2] += s20
    band[base + 6, 2] += s20 - s42 - s60 + s64
    band[base + 10, 2] += s64
    band[base + 6, 6] += s60 - s20
    band[base + 10, 10] -= s60
    band[base + 10, 6] += s60 - s64
    band[base + 2, 1] += s21
    band[base + 6, 1] += s21 - s52 - s61 + s65
    band[base + 10, 1] += s65
    band[base + 6, 5] += s61 - s21
    band[base + 10, 9] -= s61
    band[base + 10, 5] += s61 - s65
    band[base + 2, 0] += s22
    band[base + 6, 0] += s22 - s62 - s62 + s66
    band[base + 10, 0] += s66
    band[base + 6, 4] += s62 - s22
    band[base + 10, 8] -= s62
    band[base + 10, 4] += s62 - s66
    band[base + 3, 3] -= s30
    band[base + 4, 1] += s30 - s43
    band[base + 8, 5] += s43
    band[base + 7, 7] -= s70
    band[base + 7, 3] += s70 - s74
    band[base + 8, 1] += s74
    band[base + 3, 2] -= s31
    band[base + 5, 2] += s31 - s53
    band[base + 9, 6] += s53
    band[base + 7, 6] -= s71
    band[base + 7, 2] += s71 - s75
    band[base + 9, 2] += s75
    band[base + 3, 1] -= s32
    band[base + 6, 3] += s32 - s63
    band[base + 10, 7] += s63
    band[base + 7, 5] -= s72
    band[base + 7, 1] += s72 - s76
    band[base + 10, 3] += s76
    band[base + 3, 0] += s33
    band[base + 7, 4] += s73
    band[base + 7, 0] += s77


@njit(**JIT)
def joint_gn_hessian_add4d_regs_call(band, base, R):
    """:func:`joint_gn_hessian_add4d_regs` as a call (tests)."""
    joint_gn_hessian_add4d_regs(band, base, R)

