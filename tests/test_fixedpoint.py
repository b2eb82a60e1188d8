"""micronn.fixedpoint: gemmlowp-style primitives, C's expf and TFLM's int16 tables.

End-to-end exactness against TFLM is checked by the SOFTMAX tests; these pin the primitives' own
semantics (constants, rounding, saturation, accuracy) so other kernels can rely on them.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import math

import numpy as np
import pytest

from micronn import fixedpoint as fp
from micronn.quant import INT32_MAX, INT32_MIN, multiply_by_quantized_multiplier, rounding_divide_by_pot
from micronn.testing import T, op_model, run_tflm


def test_barrel_shifter_constants_are_exp_of_powers_of_two():
    for exponent, multiplier in fp._EXP_BARREL:
        assert multiplier == round(math.exp(-(2.0**exponent)) * 2**31)
    assert fp._EXP_MINUS_ONE_EIGHTH_Q31 == round(math.exp(-1 / 8) * 2**31)
    assert fp._ONE_THIRD_Q31 == round(2**31 / 3)


def test_fixed_one():
    assert fp.fixed_one(0) == INT32_MAX
    assert fp.fixed_one(5) == 1 << 26


def test_saturating_rounding_multiply_by_pot():
    x = np.array([1, -1, 3, -3, 5, 2**26, -(2**26), 2**26 - 1, INT32_MAX, INT32_MIN])
    up = fp.saturating_rounding_multiply_by_pot(x, 5)
    assert up.tolist() == [32, -32, 96, -96, 160, INT32_MAX, INT32_MIN, (2**26 - 1) * 32, INT32_MAX, INT32_MIN]
    down = fp.saturating_rounding_multiply_by_pot(np.array([3, -3, 5, -5, 6, -6]), -1)
    assert down.tolist() == [2, -2, 3, -3, 3, -3]  # halves away from zero
    assert fp.saturating_rounding_multiply_by_pot(x, 0).tolist() == x.tolist()


def test_rescale_changes_format():
    one_q5 = 1 << 26
    assert fp.rescale(np.array([one_q5]), 5, 0).tolist() == [INT32_MAX]  # 1.0 does not fit Q0.31: saturates
    assert fp.rescale(np.array([-one_q5]), 5, 0).tolist() == [INT32_MIN]
    assert fp.rescale(np.array([1 << 30]), 0, 12).tolist() == [1 << 18]


def test_rounding_half_sum():
    a = np.array([1, -1, 3, INT32_MAX, INT32_MIN, 0, -3])
    b = np.array([2, -2, 3, INT32_MAX, INT32_MIN, 0, 0])
    assert fp.rounding_half_sum(a, b).tolist() == [2, -2, 3, INT32_MAX, INT32_MIN, 0, -2]


def test_count_leading_zeros():
    vals = [0, 1, 2, 3, 255, 2**30, 2**31 - 1, -1, INT32_MIN, 12345678]
    expect = [32 - (v & 0xFFFFFFFF).bit_length() for v in vals]
    assert fp.count_leading_zeros(np.array(vals)).tolist() == expect


def test_exp_on_negative_values_accuracy():
    for bits in (0, 3, 5, 6):
        frac = 31 - bits
        lo = -(2.0**bits) if bits else -1.0
        a = np.unique(np.round(np.linspace(lo, 0, 20001) * 2.0**frac)).astype(np.int64)
        a = a[a >= INT32_MIN]
        got = fp.exp_on_negative_values(a, bits) / 2.0**31
        want = np.exp(a / 2.0**frac)
        assert np.max(np.abs(got - want)) < 3e-7, bits  # 4th-order Taylor on [-1/4, 0)
    assert fp.exp_on_negative_values(np.array([0]), 5).tolist() == [INT32_MAX]


def test_exp_on_negative_values_clamps_below_minus_32():
    a = np.array([-(33 << 24), -(40 << 24)])  # Q7.24
    assert fp.exp_on_negative_values(a, 7).tolist() == [0, 0]


def test_one_over_one_plus_x_accuracy():
    x = np.linspace(0, 1, 10001)
    raw = np.minimum(np.round(x * 2.0**31), INT32_MAX).astype(np.int64)
    got = fp.one_over_one_plus_x_for_x_in_0_1(raw) / 2.0**31
    assert np.max(np.abs(got - 1 / (1 + raw / 2.0**31))) < 4e-9


def test_get_reciprocal():
    x = np.array([3 << 19, 1 << 19, 7 << 17, 1000 << 19])  # Q12.19: 3, 1, 1.75, 1000
    scale, bits = fp.get_reciprocal(x, 12)
    value = x / 2.0**19
    assert np.allclose(scale / 2.0**31 * 2.0 ** -bits.astype(float), 1 / value, rtol=1e-8)


def test_preprocess_softmax_scaling():
    mult, shift = fp.preprocess_softmax_scaling(1.0, 0.0625, 5)  # 0.0625 * 2**26 = 2**22
    assert (mult, shift) == (1 << 30, 23)
    assert fp.preprocess_softmax_scaling(1e9, 1.0, 5) == fp.preprocess_softmax_scaling(1e10, 1.0, 5)  # capped
    with pytest.raises(ValueError):
        fp.preprocess_softmax_scaling(1.0, 2.0**-26, 5)
    assert fp.calculate_input_radius(5, 23) == math.floor(31 * 2**26 / 2**23)


def test_multiply_by_quantized_multiplier_greater_than_one():
    assert fp.multiply_by_quantized_multiplier_greater_than_one(np.array([-3, 5]), 1 << 30, 2).tolist() == [-6, 10]


def _libm_expf():
    fn = ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6").expf
    fn.restype, fn.argtypes = ctypes.c_float, [ctypes.c_float]
    return fn


def test_expf_matches_c_library():
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.uniform(-110, 90, 40000), -rng.exponential(3, 40000)]).astype(np.float32)
    x = np.append(x, np.array([0, -0.0, 1e-45, -1e-45, 88.72, 88.73, -103.9, -104, -150, np.inf, -np.inf], np.float32))
    libm_expf = _libm_expf()
    ref = np.array([libm_expf(float(v)) for v in x], np.float32)
    assert fp.expf(x).tobytes() == ref.tobytes()
    assert np.isnan(fp.expf(np.array([np.nan], np.float32)))[0]


def test_exp_lut_shape_and_ends():
    lut = fp.exp_lut_int16()
    assert lut.dtype == np.int16 and lut.shape == (fp.INT16_LUT_SIZE,)
    assert lut[-1] == 32767  # exp(0) * 32768 saturates
    assert abs(int(lut[0]) - math.exp(-10) * 32768) <= 1
    assert np.all(np.diff(lut.astype(int)) >= 0)


def test_one_over_one_plus_x_lut_ends():
    lut = fp.one_over_one_plus_x_lut_int16()
    assert lut[0] == 32767 and lut[-1] == 16384
    assert np.all(np.diff(lut.astype(int)) <= 0)


def test_int16_table_lookup_interpolates():
    lut = fp.exp_lut_int16()
    v = np.arange(-32768, 32768)
    got = fp.int16_table_lookup(v, lut)
    want = np.exp((v + 32768) / 65536 * 10 - 10) * 32768  # table domain [-10, 0] over the int16 range
    assert np.max(np.abs(got - np.minimum(want, 32767))) <= 2
    assert got[v == -32768][0] == lut[0]  # table entries are hit exactly at multiples of 128
    assert got[v == -32768 + 128 * 7][0] == lut[7]


def test_gen_lut_identity():
    """A linear function is reproduced exactly (no interpolation bias)."""
    lut = fp.gen_lut_int16(lambda v: v, -1.0, 1.0, -1.0, 1.0)
    assert lut[0] == -32768 and lut[256] == 0 and lut[-1] == 32767
    assert np.all(np.diff(lut[:-1].astype(int)) == 128)


# ---- activations checked against the TFLM wheel's LOGISTIC and TANH kernels ----------------------------------


def _tflm_unary(op: str, x: np.ndarray, in_q: tuple[float, int], out_q: tuple[float, int]) -> np.ndarray:
    m = op_model(op, [T(x.shape, x.dtype, *in_q)], [T(x.shape, x.dtype, *out_q)])
    return run_tflm(m, [x])[0]


@pytest.mark.parametrize("op", ["LOGISTIC", "TANH"])
@pytest.mark.parametrize("scale", [2**-12, 2**-11, 2**-10, 2**-13, 0.001, 1 / 3000, 0.05, 1.0, 100.0, 1e-6])
def test_int16_logistic_tanh_match_tflm_on_every_input(op, scale):
    x = np.arange(-32768, 32768, dtype=np.int16).reshape(1, -1)
    ref = _tflm_unary(op, x, (scale, 0), (2**-15, 0))
    multiplier, shift = fp.int16_activation_params(scale)
    fn = fp.logistic_int16 if op == "LOGISTIC" else fp.tanh_int16
    got = fn(x, multiplier, shift).astype(np.int16)
    assert got.tobytes() == ref.tobytes(), f"{np.sum(got != ref)} of 65536 differ"


@pytest.mark.parametrize("op", ["LOGISTIC", "TANH"])
@pytest.mark.parametrize("scale,zp", [(0.1, 0), (0.05, -20), (0.02, 5), (0.5, 3), (0.0078125, 0), (0.3, -128),
                                      (1e-3, 7), (2.5, -1)])
def test_gemmlowp_logistic_tanh_match_tflm_int8(op, scale, zp):
    """The int8 LOGISTIC/TANH kernels are gemmlowp logistic/tanh on Q4.27 inputs: all 256 inputs agree."""
    x = np.arange(-128, 128, dtype=np.int8).reshape(1, -1)
    out_q = (1 / 256, -128) if op == "LOGISTIC" else (1 / 128, 0)
    ref = _tflm_unary(op, x, (scale, zp), out_q)
    multiplier, shift, radius = fp.int8_activation_params(scale)
    centred = x.astype(np.int64) - zp
    q4 = multiply_by_quantized_multiplier(np.clip(centred, 1 - radius, radius - 1), multiplier, shift)
    if op == "LOGISTIC":
        inner = rounding_divide_by_pot(fp.logistic(q4, 4), 31 - 8) - 128
    else:
        inner = rounding_divide_by_pot(fp.tanh(q4, 4), 31 - 7)
    got = np.where(centred <= -radius, -128, np.where(centred >= radius, 127, np.clip(inner, -128, 127)))
    assert got.astype(np.int8).tobytes() == ref.tobytes()


def test_checked_log2():
    assert fp.checked_log2(2**-12) == (True, -12)
    assert fp.checked_log2(2**-15 * 1.0005) == (True, -15)
    assert fp.checked_log2(0.001)[0] is False


def test_sigmoid_table():
    table = fp.sigmoid_table_uint16()
    assert table.shape == (256,) and table[0] == 32768 and table[-1] == 65535
    assert np.all(np.diff(table) >= 0)
    assert np.max(np.abs(table[:-1] - 65536 / (1 + np.exp(-np.arange(255) / 24)))) < 1.2


def test_gemmlowp_logistic_tanh_accuracy():
    a = np.arange(-(8 << 27), 8 << 27, 1 << 17, dtype=np.int64)  # Q4.27 in [-8, 8)
    real = a / 2.0**27
    assert np.max(np.abs(fp.logistic(a, 4) / 2.0**31 - 1 / (1 + np.exp(-real)))) < 1e-6
    assert np.max(np.abs(fp.tanh(a, 4) / 2.0**31 - np.tanh(real))) < 2e-6
    x = np.minimum(np.round(np.linspace(0, 1, 1001) * 2.0**31), INT32_MAX).astype(np.int64)
    xr = x / 2.0**31
    assert np.max(np.abs(fp.one_minus_x_over_one_plus_x_for_x_in_0_1(x) / 2.0**31 - (1 - xr) / (1 + xr))) < 1e-8
