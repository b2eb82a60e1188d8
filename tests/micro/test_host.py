"""The host device: native code on a host buffer, same session API (word size 8)."""

from __future__ import annotations

import numpy as np
import pytest
from test_device import kernels, scale_ref

from micronn.micro.device import DeviceFault
from micronn.micro.host import HostDevice
from micronn.micro.session import Session, SessionError

X = np.arange(-128, 128, dtype=np.int8)


def test_host_session(tmp_path):
    with Session("host") as s:
        assert s.word_size == 8
        mod = s.load_module([kernels(tmp_path, arm=False)])
        x, o = s.array(X), s.empty(X.shape, np.int8)
        mod["t_scale"](o, x, X.size, 7, -3)
        counter = s.array(np.zeros(1, np.int32))
        for _ in range(5):
            mod["t_add1"](counter)
        assert np.array_equal(o.numpy(), scale_ref(X, 7, -3)) and counter.numpy()[0] == 5
        assert s.executions == 1 and s.last_exec.instructions is None  # native code is not counted
        with pytest.raises(SessionError, match="C sources only"):
            s.load_module([tmp_path / "k.o"])


def test_host_bounds():
    with HostDevice(4096) as dev:
        dev.write(dev.ram.base + 4092, b"wxyz")
        assert dev.read(dev.ram.base + 4092, 4) == b"wxyz"
        with pytest.raises(DeviceFault, match="outside the device memory"):
            dev.read(dev.ram.base + 4093, 4)
        with pytest.raises(DeviceFault, match="no code loaded"):
            dev.execute(dev.ram.base, 0)
