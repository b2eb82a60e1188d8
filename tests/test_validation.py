"""Hostile and malformed models end in a clear micronn error naming the culprit, never a crash or a hang."""

from __future__ import annotations

import dataclasses
import struct

import numpy as np
import pytest
from conftest import model_bytes
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from micronn import Interpreter, MicronnError, ModelError, OpResolver, PrepareError, UnsupportedError, read
from micronn.planners.base import OFFLINE_KEY
from micronn.testing import T, TflmError, assert_same_as_tflm, op_model, run_tflm
from micronn.tflite.writer import write


def _mutated(name: str, change) -> bytes:
    m = read(model_bytes(name))
    change(m)
    return write(m)


def test_input_index_out_of_range_names_the_operator() -> None:
    data = _mutated("hello_world_int8", lambda m: m.main.operators[1].inputs.__setitem__(0, 999))
    with pytest.raises(ModelError, match=r"operator 1 \(FULLY_CONNECTED\): input tensor index 999 out of range"):
        read(data)


def test_unsorted_operators_are_refused() -> None:
    def swap(m):
        ops = m.main.operators
        ops[0], ops[1] = ops[1], ops[0]
    with pytest.raises(ModelError, match="unsorted or cyclic"):
        read(_mutated("hello_world_int8", swap))


def test_cycle_is_refused() -> None:
    def cycle(m):  # operator 0 reads what operator 2 writes
        m.main.operators[0].inputs[0] = m.main.operators[2].outputs[0]
    with pytest.raises(ModelError, match="unsorted or cyclic"):
        read(_mutated("hello_world_int8", cycle))


def test_buffer_smaller_than_shape_names_tensor_and_buffer(monkeypatch: pytest.MonkeyPatch) -> None:
    from micronn.tflite import writer  # the writer refuses such IR; write the raw bytes to forge the file

    monkeypatch.setattr(writer, "_tensor_bytes", lambda t: np.asarray(t.data).tobytes())

    def shrink(m):
        t = next(t for t in m.main.tensors if t.is_constant and t.data.size > 4)
        t.shape = (t.shape[0] * 2,) + tuple(t.shape[1:])
    data = _mutated("hello_world_int8", shrink)
    with pytest.raises(ModelError, match=r"tensor \d+ .* buffer \d+ holds \d+ bytes but shape"):
        read(data)


def test_absurd_shape_is_refused_before_allocating() -> None:
    def huge(m):
        t = m.main.tensors[m.main.operators[0].outputs[0]]
        t.shape = (1 << 20, 1 << 20)
    with pytest.raises(ModelError, match="beyond any microcontroller"):
        read(_mutated("hello_world_int8", huge))


def test_negative_dimension_is_refused() -> None:
    data = _mutated("hello_world_int8", lambda m: setattr(m.main.tensors[m.main.inputs[0]], "shape", (1, -5)))
    with pytest.raises(ModelError, match="invalid shape"):
        read(data)


def test_huge_vector_length_does_not_hang() -> None:
    data = bytearray(model_bytes("hello_world_int8"))
    # Find the subgraph's operator vector length field by patching every uint32 that equals the op count (3)
    # in turn; at least one corrupts a vector length to 2**31 and must be refused quickly.
    hits = 0
    for off in range(8, len(data) - 4, 4):
        if struct.unpack_from("<I", data, off)[0] == 3:
            bad = bytearray(data)
            struct.pack_into("<I", bad, off, 0x7FFFFFF0)
            try:
                read(bytes(bad))
            except MicronnError:
                hits += 1
    assert hits > 0


def test_unsupported_lists_every_pair() -> None:
    def exotic(m):
        m.main.operators[0].op = "HARD_SWISH_X"
        m.main.operators[0].custom = True
        m.main.operators[2].op = "ROUND_X"
        m.main.operators[2].custom = True
    with pytest.raises(UnsupportedError) as e:
        Interpreter(_mutated("hello_world_int8", exotic), resolver=OpResolver())
    assert e.value.pairs == [("FULLY_CONNECTED", "int8"), ("HARD_SWISH_X", "int8"), ("ROUND_X", "int8")]
    assert "HARD_SWISH_X (int8)" in str(e.value)


# -- bounded fuzzing: random corruption of real models must end in MicronnError or run cleanly --------------

SMALL = ["hello_world_int8", "hello_world_float", "micro_speech_quantized", "keyword_scrambled"]


def _exercise(data: bytes) -> None:
    try:
        it = Interpreter(data)
        it.allocate_tensors()
        it.invoke()
    except MicronnError:
        pass


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(SMALL), flips=st.lists(st.tuples(st.floats(0, 1, exclude_max=True), st.integers(0, 7)),
                                                     min_size=1, max_size=8))
def test_fuzz_bit_flips(name: str, flips: list[tuple[float, int]]) -> None:
    data = bytearray(model_bytes(name))
    for pos, bit in flips:
        data[int(pos * len(data))] ^= 1 << bit
    _exercise(bytes(data))


@settings(max_examples=60, deadline=None)
@given(name=st.sampled_from(SMALL), frac=st.floats(0, 1, exclude_max=True))
def test_fuzz_truncation(name: str, frac: float) -> None:
    data = model_bytes(name)
    _exercise(data[: int(frac * len(data))])


@settings(max_examples=150, deadline=None)
@given(name=st.sampled_from(SMALL), pos=st.floats(0, 1, exclude_max=True),
       value=st.sampled_from([0, 1, 0x7F, 0xFF, 0xFFFF, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0xFFFFFFFE]))
def test_fuzz_index_corruption(name: str, pos: float, value: int) -> None:
    data = bytearray(model_bytes(name))
    off = int(pos * (len(data) - 4)) & ~3
    struct.pack_into("<I", data, off, value)
    _exercise(bytes(data))


# -- load-time rules: what the kernels rely on, and models whose TFLM result is undefined ----------------------------
# Each was found by `python -m micronn.testing.fuzz` (issue 12); each failure names the tensor or the operator.


def _first_activation(m):
    return m.main.tensors[m.main.operators[0].outputs[0]]


def test_zero_point_outside_int8_is_refused_at_load() -> None:
    # a variable int8 tensor with zero point 2**31 used to leak OverflowError from Interpreter.reset()
    def far(m):
        t = _first_activation(m)
        t.is_variable, t.quant.zero_point = True, np.array([2**31], np.int64)
    with pytest.raises(ModelError, match=r"tensor \d+ \('.*'\): zero point 2147483648 is outside \[-128, 127\], "
                                         r"the range of its int8 storage"):
        Interpreter(_mutated("hello_world_int8", far))


def test_zero_point_beyond_int32_is_refused_for_wide_tensors() -> None:
    def far(m):
        bias = next(t for t in m.main.tensors if t.dtype == np.int32 and t.quant is not None)
        bias.quant.zero_point = np.full(len(bias.quant.scale), 2**40, np.int64)
    with pytest.raises(ModelError, match=r"zero point 1099511627776 is outside \[-2147483648, 2147483647\]"):
        read(_mutated("hello_world_int8", far))


@pytest.mark.parametrize("scale", [np.nan, np.inf, -np.inf])
def test_non_finite_scale_is_refused(scale: float) -> None:
    def bad(m):
        _first_activation(m).quant.scale = np.array([scale], np.float32)
    with pytest.raises(ModelError, match=r"tensor \d+ .*: scale .* is not a finite number"):
        read(_mutated("hello_world_int8", bad))


def test_per_channel_scales_must_match_their_dimension() -> None:
    def short(m):  # person_detect's first filter has 8 channels along axis 3
        w = m.main.tensors[m.main.operators[0].inputs[1]]
        w.quant.scale, w.quant.zero_point = w.quant.scale[:7].copy(), w.quant.zero_point[:7].copy()
    with pytest.raises(ModelError, match=r"tensor 0 \('.*'\): 7 per-channel scales along axis 3 fit no dimension"):
        read(_mutated("person_detect", short))

    def axis(m):
        m.main.tensors[m.main.operators[0].inputs[1]].quant.axis = 1
    with pytest.raises(ModelError, match=r"8 per-channel scales along quantized dimension 1 do not match"):
        read(_mutated("person_detect", axis))


def test_constant_subgraph_input_is_refused() -> None:
    def const_input(m):
        m.main.inputs.append(next(t.index for t in m.main.tensors if t.is_constant))
    with pytest.raises(ModelError, match=r"subgraph 0: input tensor \d+ \('.*'\) is a constant"):
        read(_mutated("hello_world_int8", const_input))


@pytest.mark.parametrize("dtype", ["float32", "int8"])
def test_fully_connected_weights_must_be_2d(dtype: str) -> None:
    # rank-3 weights (16x1x1): the wheel reads past them and answers differently every run
    q = (0.5, 0) if dtype == "int8" else (None, None)
    model = op_model("FULLY_CONNECTED", [T((1, 1), dtype, *q), T((16, 1, 1), dtype, *q, data=1)],
                     [T((1, 16), dtype, *q)])
    with pytest.raises(PrepareError, match=r"operator 0 \(FULLY_CONNECTED\): weights \[16, 1, 1\] must be 2-D"):
        Interpreter(model).allocate_tensors()


def _fc(weight_scale: float) -> bytes:
    w = np.arange(-16, 16, dtype=np.int8).reshape(4, 8)
    return op_model("FULLY_CONNECTED", [T((2, 8), "int8", 1.0, 0), T((4, 8), "int8", weight_scale, 0, data=w)],
                    [T((2, 4), "int8", 1.0, 0)])


def test_multiplier_shift_of_31_bits_still_matches_the_wheel() -> None:
    assert_same_as_tflm(_fc(1.5 * 2.0**30))  # effective scale 1.5 * 2**30: shift 31, the last defined one


def test_multiplier_shift_past_31_bits_is_refused_fully_connected() -> None:
    with pytest.raises(PrepareError, match=r"operator 0 \(FULLY_CONNECTED\).*filter 'input1' scale 1e\+30 / output "
                                           r"'output0' scale 1: effective scale 1e\+30 needs a left shift of 100 bits"):
        Interpreter(_fc(1e30)).allocate_tensors()


def test_multiplier_shift_past_31_bits_is_refused_conv_2d() -> None:
    model = op_model("CONV_2D", [T((1, 4, 4, 2), "int8", 1e30, 0), T((3, 1, 1, 2), "int8", [0.5, 0.5, 0.5], data=1),
                                 T((3,), "int32", [5e29, 5e29, 5e29], data=0)], [T((1, 4, 4, 3), "int8", 0.5, 0)],
                     {"stride_w": 1, "stride_h": 1, "dilation_w_factor": 1, "dilation_h_factor": 1})
    with pytest.raises(PrepareError, match=r"operator 0 \(CONV_2D\).*\(channel 0\).*left shift of \d+ bits; TFLM's "
                                           r"int32 fixed-point arithmetic is undefined past 31"):
        Interpreter(model).allocate_tensors()


def test_multiplier_shift_past_31_bits_is_refused_lstm() -> None:
    def huge(m):  # an input-to-gate weight of the LSTM
        m.main.tensors[m.main.operators[0].inputs[1]].quant.scale = np.array([1e30], np.float32)
    with pytest.raises(PrepareError, match=r"operator 0 \(UNIDIRECTIONAL_SEQUENCE_LSTM\).*left shift of \d+ bits"):
        Interpreter(_mutated("trained_lstm_int8", huge)).allocate_tensors()


def test_transpose_conv_stride_overflowing_int32_is_refused() -> None:
    def stride(m):
        op = next(o for o in m.main.operators if o.op == "TRANSPOSE_CONV")
        op.options = dataclasses.replace(op.options, stride_h=2**31 - 1)
    with pytest.raises(PrepareError, match=r"\(TRANSPOSE_CONV\): stride 2147483647x2 .* overflow TFLM's int32"):
        Interpreter(_mutated("tiny_unet", stride)).allocate_tensors()


def test_conv_dilation_overflowing_int32_is_refused() -> None:
    options = {"padding": 0, "stride_w": 1, "stride_h": 1, "dilation_h_factor": 2**30, "dilation_w_factor": 1}
    model = op_model("CONV_2D", [T((1, 4, 4, 1), "float32"), T((1, 3, 3, 1), "float32", data=1)],
                     [T((1, 4, 4, 1), "float32")], options)
    with pytest.raises(PrepareError, match=r"operator 0 \(CONV_2D\): .*dilation 1073741824x1 .* overflow"):
        Interpreter(model).allocate_tensors()


def test_offline_plan_overlapping_live_tensors_is_refused() -> None:
    def overlap(m):  # every tensor of the arena at offset 0
        offsets = [-1 if t.is_constant else 0 for t in m.main.tensors]
        m.metadata[OFFLINE_KEY] = np.array([1, 1, len(offsets), *offsets], "<i4").tobytes()
    with pytest.raises(ModelError, match=r"OfflineMemoryAllocation metadata places tensors t\d+ \(offset 0, \d+ "
                                         r"bytes\) and t\d+ \(offset 0, \d+ bytes\) in overlapping memory while both "
                                         r"are alive"):
        Interpreter(_mutated("hello_world_int8", overlap)).allocate_tensors()


def test_malformed_pad_is_left_to_its_kernel() -> None:
    # PADV2 with one input used to trip the PAD folding of the planner (IndexError) before any kernel looked
    def one_input(m):
        op = m.main.operators[0]
        op.op, op.options = "PADV2", None
        del op.inputs[1:]
    with pytest.raises(PrepareError, match=r"operator 0 \(PADV2\)"):
        Interpreter(_mutated("hello_world_int8", one_input)).allocate_tensors()


def test_operator_without_tensors_is_unsupported_not_a_crash() -> None:
    def bare(m):
        m.main.operators[1].inputs, m.main.operators[1].outputs = [], []
    with pytest.raises(MicronnError):
        Interpreter(_mutated("hello_world_int8", bare)).allocate_tensors()


def test_conv_stride_past_int16_is_refused() -> None:
    # TFLM keeps strides as int16: 65536 wraps to 0 there and every output row reads input row 0
    options = {"padding": 1, "stride_w": 1, "stride_h": 65536, "dilation_w_factor": 1, "dilation_h_factor": 1}
    model = op_model("CONV_2D", [T((1, 6, 6, 2), "float32"), T((3, 1, 1, 2), "float32", data=0.5)],
                     [T((1, 6, 6, 3), "float32")], options)
    with pytest.raises(PrepareError, match=r"\(CONV_2D\): stride 65536x1, .* exceeds 32767, beyond the int16"):
        Interpreter(model).allocate_tensors()
    assert_same_as_tflm(op_model("CONV_2D", [T((1, 6, 6, 2), "float32"), T((3, 1, 1, 2), "float32", data=0.5)],
                                 [T((1, 6, 6, 3), "float32")], {**options, "stride_h": 32767}))


def test_pool_padding_past_int16_is_refused() -> None:
    options = {"padding": 0, "stride_w": 1, "stride_h": 1, "filter_width": 1, "filter_height": 65539}
    model = op_model("MAX_POOL_2D", [T((1, 6, 6, 2), "float32")], [T((1, 6, 6, 2), "float32")], options)
    with pytest.raises(PrepareError, match=r"\(MAX_POOL_2D\): .*padding 32769x0 exceeds 32767"):
        Interpreter(model).allocate_tensors()


def test_float_average_pool_window_outside_the_input_is_refused() -> None:
    # TFLM stops at the first window without a tap in the input: the rest of its output is never written
    options = {"padding": 1, "stride_w": 1, "stride_h": 1, "filter_width": 1, "filter_height": 1}
    model = op_model("AVERAGE_POOL_2D", [T((1, 1, 2, 1), "float32")], [T((1, 1, 4, 1), "float32")], options)
    with pytest.raises(PrepareError, match=r"\(AVERAGE_POOL_2D\): a pooling window lies entirely in the padding"):
        Interpreter(model).allocate_tensors()


def test_fully_connected_bias_scale_check_is_in_double() -> None:
    # scales where input * filter in float32 equals the bias scale but in double is 2.3% (of the output) away
    w = np.ones((16, 4), np.int8)
    scales = (0.13141785562038422, 0.0059727393090724945, 0.0007849246030673385, 4.656612873077393e-10)
    model = op_model("FULLY_CONNECTED", [T((1, 4), "int8", scales[0], 0), T((16, 4), "int8", scales[1], 0, data=w),
                                         T((16,), "int32", scales[2], 0, data=1)], [T((1, 16), "int8", scales[3], 0)])
    with pytest.raises(PrepareError, match="bias scale .* is not input scale \\* filter scale"):
        Interpreter(model).allocate_tensors()
    with pytest.raises(TflmError):
        run_tflm(model, [np.zeros((1, 4), np.int8)])


def test_lstm_negative_scale_is_refused_like_the_wheel() -> None:
    def negative(m):
        t = m.main.tensors[m.main.operators[0].inputs[1]]
        t.quant.scale = -t.quant.scale
    with pytest.raises(PrepareError, match=r"\(UNIDIRECTIONAL_SEQUENCE_LSTM\): tensor '.*' has a negative scale"):
        Interpreter(_mutated("trained_lstm_int8", negative)).allocate_tensors()


def test_conv_with_a_fourth_input_is_refused() -> None:
    def extra(m):
        conv = next(o for o in m.main.operators if o.op == "CONV_2D")
        conv.inputs.append(conv.inputs[-1])
    with pytest.raises(PrepareError, match=r"\(CONV_2D\): needs input, filter, optional bias and one output"):
        Interpreter(_mutated("person_detect", extra)).allocate_tensors()


def test_unknown_quantized_bias_type_is_refused() -> None:
    def bias_type(m):
        fc = m.main.operators[0]
        fc.options = dataclasses.replace(fc.options, quantized_bias_type=127)
    with pytest.raises(ModelError, match=r"operator 0 \(FULLY_CONNECTED\): quantized_bias_type 127 is not a tensor"):
        read(_mutated("hello_world_int8", bias_type))


def test_intermediates_must_be_empty() -> None:
    def intermediate(m):
        m.main.operators[0].intermediates = [m.main.operators[0].outputs[0]]
    with pytest.raises(ModelError, match=r"operator 0 \(FULLY_CONNECTED\): intermediate tensor \d+ .* holds \d+ "
                                         r"bytes; TFLM supports only empty intermediates"):
        read(_mutated("hello_world_int8", intermediate))


def test_scales_without_zero_points_are_no_quantization() -> None:
    # TFLM takes a tensor as quantized only when it has both; the LSTM then refuses its unquantized weight
    data = bytearray(model_bytes("trained_lstm_int8"))
    m = read(bytes(data))
    target = m.main.tensors[m.main.operators[0].inputs[1]]
    assert target.quant is not None
    from micronn.tflite import writer

    original = writer._Writer._quantization

    def without_zero_points(self, q):  # write this tensor's quantization with an empty zero point vector
        if q is target.quant:
            q = dataclasses.replace(q, zero_point=np.zeros(0, np.int64))
        return original(self, q)
    writer._Writer._quantization = without_zero_points
    try:
        forged = write(m)
    finally:
        writer._Writer._quantization = original
    assert read(forged).main.tensors[target.index].quant is None
    with pytest.raises(PrepareError, match="must be quantized per tensor"):
        Interpreter(forged).allocate_tensors()


def test_every_buffer_must_lie_in_the_file() -> None:
    # a buffer no tensor uses, whose data vector claims to run past the end of the file: TFLM refuses the model
    from micronn.tflite import writer

    w = writer._Writer(read(model_bytes("hello_world_int8")))
    w.buffers.data.append(b"\x5a\xa5\x5a\xa5")
    forged = bytearray(w.build())
    at = bytes(forged).find(b"\x04\x00\x00\x00\x5a\xa5\x5a\xa5")
    assert at > 0
    read(bytes(forged))  # an unused but intact buffer is fine
    forged[at:at + 4] = (1 << 30).to_bytes(4, "little")
    with pytest.raises(ModelError, match=r"buffer \d+: Data vector claims 1073741824 entries, more than the file"):
        read(bytes(forged))


def test_offline_offset_for_a_variable_is_refused() -> None:
    # TFLM plans such a variable in the head, where online tensors overwrite its state between invokes
    def variable_offset(m):
        offsets = [0 if t.is_variable else -1 for t in m.main.tensors]
        m.metadata[OFFLINE_KEY] = np.array([1, 1, len(offsets), *offsets], "<i4").tobytes()
    with pytest.raises(ModelError, match=r"OfflineMemoryAllocation metadata gives variable tensor \d+ \('.*'\) of "
                                         r"subgraph 0 the offset 0"):
        Interpreter(_mutated("trained_lstm_int8", variable_offset)).allocate_tensors()


def test_empty_dimension_cannot_hide_absurd_others() -> None:
    # a spliced TRANSPOSE_CONV weight shape (16, 788529154, 0, 32): zero bytes, but 788 million filter rows to loop
    def hollow(m):
        t = m.main.tensors[next(o for o in m.main.operators if o.op == "TRANSPOSE_CONV").inputs[1]]
        t.shape, t.data = (16, 788529154, 0, 32), np.zeros((16, 788529154, 0, 32), np.int8)
    with pytest.raises(ModelError, match=r"shape \(16, 788529154, 0, 32\) would need, were its empty dimension "
                                         r"filled, \d+ bytes, beyond any microcontroller"):
        read(_mutated("tiny_unet", hollow))


def test_transpose_conv_with_empty_weights_is_refused() -> None:
    model = op_model("TRANSPOSE_CONV", [T((4,), "int32", data=[1, 4, 4, 2]), T((2, 3, 0, 1), "float32"),
                                        T((1, 2, 2, 1), "float32")], [T((1, 4, 4, 2), "float32")],
                     {"padding": 1, "stride_w": 2, "stride_h": 2})
    with pytest.raises(PrepareError, match=r"\(TRANSPOSE_CONV\): weights \[2, 3, 0, 1\] are empty"):
        Interpreter(model).allocate_tensors()
