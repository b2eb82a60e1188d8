"""A DEPTHWISE_CONV_2D over a one-channel image runs natively as the CONV_2D it is (``lower._one_channel_conv``:
filter (1, fh, fw, oc) read as (oc, fh, fw, 1)): the interpreter's and the wheel's bytes, batched and one sample at a
time, with the host ports and with the portable kernels, across multipliers, windows, strides, dilations, paddings,
activations, per-tensor weights, zero points and a batch of images; micro_speech's first layer among them."""

from __future__ import annotations

import re

import pytest
from test_native_ports import _inputs, assert_ported_same, depthwise

from micronn.export import NativeModel

CASES = [
    {"c": 1, "mult": 8, "fh": 10, "fw": 8, "h": 49, "w": 40, "stride": (2, 2), "pad": 0, "act": 1},  # micro_speech's
    {"c": 1, "mult": 1, "fh": 3, "fw": 3},
    {"c": 1, "mult": 3, "fh": 1, "fw": 1, "per_channel": False},
    {"c": 1, "mult": 5, "fh": 5, "fw": 2, "pad": 1, "stride": (1, 3), "act": 3},
    {"c": 1, "mult": 16, "fh": 3, "fw": 3, "dil": (2, 1), "pad": 1, "in_zp": -128, "out_zp": 127},
    {"c": 1, "mult": 24, "fh": 2, "fw": 4, "n": 2, "h": 6, "w": 11, "stride": (2, 1)},
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_one_channel_depthwise_as_conv(case: dict) -> None:
    data = depthwise(**case)
    native = NativeModel(data)
    calls = native.program.files["mn_native.c"].split("_invoke(void)")[1]
    assert re.findall(r"(mn_\w+)\(mn_native_args", calls) == ["mn_conv_2d_s8"], calls
    assert_ported_same(data, wheel=True)
    portable, xs = NativeModel(data, host_ports=False), _inputs(data, 4, 1)
    for k in range(4):
        assert [y.tobytes() for y in portable.run([x[k] for x in xs])] == \
            [y.tobytes() for y in native.run([x[k] for x in xs])], k
