"""The 4D joint's Gauss-Newton block from registers (der_implicit.joint_hessian) against der_joint's."""
import numpy as np
import pytest
from test_der_joint import random_joint, rows_of

from rodlab.der_implicit.joint_hessian import joint_gn_hessian_add4d_regs_call
from rodlab.geometry.der_joint import ROW_WEIGHT, joint_gn_hessian_add4d


@pytest.mark.parametrize("seed", range(6))
def test_register_block_is_bitwise_der_joint_block(seed):
    """Added into a band that already holds values (as in an assembly), at an offset: every entry
    bitwise that of joint_gn_hessian_add4d, and the workspace R left unchanged."""
    q, p = random_joint(seed, at_rest=seed % 3 == 0)
    R = rows_of(q, p)
    R[ROW_WEIGHT:ROW_WEIGHT + 5] *= np.random.default_rng(seed).uniform(0.1, 10.0, 5)
    band0 = np.random.default_rng(seed + 100).normal(size=(19, 11))
    expected, got = band0.copy(), band0.copy()
    joint_gn_hessian_add4d(expected, 4, R.copy())
    R_before = R.copy()
    joint_gn_hessian_add4d_regs_call(got, 4, R)
    assert np.array_equal(expected, got)
    assert np.array_equal(R, R_before[:R.size])
    assert not np.array_equal(got, band0)
