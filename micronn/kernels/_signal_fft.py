"""The FFT engine behind SignalRfft and SignalIrfft: a mixed-radix (4, 2, 3, 5) complex FFT, in fixed point
(Q15 for int16, Q31 for int32) or in float32, plus the split step that turns one complex FFT of half the length
into a real FFT (or back), reproducing TFLM's integer and float arithmetic exactly.

How the result is computed (the algorithm of the KISS FFT library that TFLM's signal library builds on, as
established against the wheel and described here in micronn's words):

* **Factoring.** A complex length ``n`` is split into radices: as many 4s as divide it, then a 2 when one is
  left, then 3s, then 5s. The first radix found is the outermost stage. Any other prime factor (and ``n = 1``)
  is refused: TFLM's generic-radix butterfly crashes the wheel.
* **Decimation in time.** Stage ``s`` (radix ``p``) works on ``n / (p * m)`` independent groups, ``m`` being
  the product of the later radices. Before the first (innermost) stage the input is read in digit-reversed
  order: output position ``sum(q_s * m_s)`` takes input ``sum(q_s * stride_s)``, ``stride_s`` being the product
  of the earlier radices. Stages then run from the innermost to the outermost, each over the whole array.
* **Twiddles.** ``w[k] = exp(-2 pi i k / n)`` (``+`` for the inverse), the phase computed in double as
  ``(-2 * pi) * k / n``; fixed point stores ``floor(0.5 + MAX * cos)`` and ``floor(0.5 + MAX * sin)`` with
  ``MAX = 2**15 - 1`` or ``2**31 - 1``; float32 stores the double cosine and sine rounded to float.
* **Fixed-point stages.** Every value is first divided by the radix: multiplied by ``MAX // p`` and rounded
  (``(x * c + 2**(B-1)) >> B``, ``B`` = 15 or 31). Products by twiddles round the same way (a complex product
  sums its two exact products before rounding). Sums and differences wrap to the scalar type. The radix-3
  butterfly halves by an arithmetic shift and scales by the imaginary part of ``w[n/3]``; the radix-5 one uses
  ``w[n/5]`` and ``w[2n/5]`` with separately rounded products.
* **Float stages.** The same butterflies in float32 in the same operation order, without the divisions. The
  radix-3 halving is a float32 multiplication by 0.5: the wheel's compiler narrowed the C expression's double
  arithmetic to float, which gives different results for subnormals.
* **Real split** (forward, real length ``N = 2n``): the real input is read as ``n`` complex pairs and
  transformed. Bin 0 and bin ``n`` come from the first value (``re + im`` and ``re - im``, imaginary 0); for
  ``k = 1 .. n/2`` ``X[k]`` and the conjugate of ``X[n-k]`` give their sum and difference, the
  difference is multiplied by ``exp(-i pi (k/n + 1/2))`` (its own rounded table) and added to the sum: bin
  ``k`` is half of sum + product, bin ``n-k`` the conjugate of half of sum - product (``(a + b) >> 1`` in fixed
  point, computed before wrapping for int16 and after a 32-bit wrap for int32). At ``k = n/2`` the second write
  wins. Fixed point halves every value read from the complex FFT first (the same rounded division by 2).
* **Real split, inverse**: the mirror image, bins first (bin 0 pairs with bin ``n``; their imaginary parts are
  never read; the value built for ``n-k`` is conjugated), then the inverse complex FFT, whose output pairs are
  the real samples. Fixed point divides by 2 at the split and by each radix in the stages; float32 does
  not scale, TFLM divides the float32 output by ``N`` afterwards.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from flatbuffers import flexbuffers

from micronn.ir import Tensor
from micronn.kernels._custom_options import read_options
from micronn.kernels.base import Node

PI = 3.14159265358979323846264338327


def radices(n: int) -> list[int] | None:
    """The radix of every stage, outermost first, or None when ``n`` cannot be transformed."""
    if n < 2:
        return None
    out = []
    while n % 4 == 0:
        out.append(4)
        n //= 4
    if n % 2 == 0:
        out.append(2)
        n //= 2
    for p in (3, 5):
        while n % p == 0:
            out.append(p)
            n //= p
    return out if n == 1 else None


def real_fft_length_ok(fft_length: int) -> bool:
    """Whether TFLM's real FFT handles ``fft_length``: even, with a half length that factors into 2, 3 and 5."""
    return fft_length >= 4 and fft_length % 2 == 0 and radices(fft_length // 2) is not None


class _Arith:
    """Scalar arithmetic of one kind: how values are stored, divided, multiplied and halved."""

    def __init__(self, kind: str):
        self.kind = kind
        self.fixed = kind != "float32"
        if self.fixed:
            self.bits = 15 if kind == "int16" else 31
            self.max = (1 << self.bits) - 1
            self.half_lsb = 1 << (self.bits - 1)
            self.off, self.mask = 1 << self.bits, (1 << (self.bits + 1)) - 1

    # values of fixed kinds live in int64 arrays; float32 in float32 arrays
    def store(self, x: np.ndarray) -> np.ndarray:
        """Wrap a value into the scalar type (a store into an int16/int32 variable)."""
        if not self.fixed:
            return x
        return ((x + self.off) & self.mask) - self.off

    def promote(self, x: np.ndarray) -> np.ndarray:
        """Wrap a sum to C's int (32 bits): a no-op for int16 operands."""
        return ((x + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)

    def div(self, x: np.ndarray, p: int) -> np.ndarray:
        if not self.fixed:
            return x
        return self.store((x * (self.max // p) + self.half_lsb) >> self.bits)

    def smul(self, a: np.ndarray, b: np.ndarray | np.integer | np.floating) -> np.ndarray:
        if not self.fixed:
            return a * b
        return self.store((a * b + self.half_lsb) >> self.bits)

    def cmul(self, ar: np.ndarray, ai: np.ndarray, br: np.ndarray, bi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if not self.fixed:
            return ar * br - ai * bi, ar * bi + ai * br
        h, b = self.half_lsb, self.bits
        return self.store((ar * br - ai * bi + h) >> b), self.store((ar * bi + ai * br + h) >> b)

    def minus_half(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """``a - b / 2``: an arithmetic shift in fixed point; in float32 a float halving (the wheel's compiler
        narrowed the C expression's double arithmetic to float, which differs for subnormals)."""
        if not self.fixed:
            return a - b * np.float32(0.5)
        return self.store(a - (b >> 1))

    def half_sum(self, s: np.ndarray) -> np.ndarray:
        """Half of ``s``, a sum of two scalars computed in C's int (or in float32)."""
        if not self.fixed:
            return s * np.float32(0.5)
        return self.store(self.promote(s) >> 1)

    def table(self, phases: list[float]) -> tuple[np.ndarray, np.ndarray]:
        """Rounded cosines and sines of ``phases`` (computed in double by the C library)."""
        cos = [math.cos(p) for p in phases]
        sin = [math.sin(p) for p in phases]
        if not self.fixed:
            return np.array(cos, np.float32), np.array(sin, np.float32)
        m = float(self.max)
        return (np.array([math.floor(0.5 + m * c) for c in cos], np.int64),
                np.array([math.floor(0.5 + m * s) for s in sin], np.int64))


@dataclass
class _Stage:
    p: int
    m: int
    stride: int  # groups of p * m values
    twr: np.ndarray  # (p - 1, m): twiddle q * u * stride for q = 1 .. p-1
    twi: np.ndarray
    extra: tuple  # radix 3: (w[n/3].i,); radix 5: (ya.r, ya.i, yb.r, yb.i)


class ComplexFft:
    """A planned complex FFT of length ``n``, forward or inverse, over ``(..., n)`` real/imaginary arrays."""

    def __init__(self, n: int, inverse: bool, kind: str):
        factors = radices(n)
        if factors is None:
            raise ValueError(f"complex FFT length {n} does not factor into 2, 3 and 5")
        self.n, self.inverse, self.ar = n, inverse, _Arith(kind)
        phases = []
        for k in range(n):
            phase = -2 * PI * k / n
            phases.append(phase * -1 if inverse else phase)
        wr, wi = self.ar.table(phases)
        self.order = np.zeros(n, np.int64)
        position = np.arange(n)
        self.stages: list[_Stage] = []
        stride, m = 1, n
        for p in factors:
            m //= p
            self.order += ((position // m) % p) * stride
            u = np.arange(m)
            index = np.array([(q * u * stride) % n for q in range(1, p)]).reshape(p - 1, m)
            extra: tuple = ()
            if p == 3:
                extra = (wi[stride * m],)
            elif p == 5:
                extra = (wr[stride * m], wi[stride * m], wr[2 * stride * m], wi[2 * stride * m])
            self.stages.append(_Stage(p, m, stride, wr[index], wi[index], extra))
            stride *= p

    def __call__(self, re: np.ndarray, im: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Transform ``(rows, n)`` arrays; returns new arrays."""
        re, im = re[:, self.order], im[:, self.order]
        rows = re.shape[0]
        for st in reversed(self.stages):
            shape = (rows, st.stride, st.p, st.m)
            re, im = re.reshape(shape), im.reshape(shape)
            re, im = self.ar.div(re, st.p), self.ar.div(im, st.p)
            fr = [re[:, :, q] for q in range(st.p)]
            fi = [im[:, :, q] for q in range(st.p)]
            out = getattr(self, f"_radix{st.p}")(fr, fi, st)
            re = np.stack([o[0] for o in out], axis=2).reshape(rows, self.n)
            im = np.stack([o[1] for o in out], axis=2).reshape(rows, self.n)
        return re, im

    def _twiddled(self, fr: list, fi: list, st: _Stage) -> list[tuple[np.ndarray, np.ndarray]]:
        return [self.ar.cmul(fr[q], fi[q], st.twr[q - 1], st.twi[q - 1]) for q in range(1, st.p)]

    def _radix2(self, fr: list, fi: list, st: _Stage) -> list:
        s = self.ar.store
        (tr, ti), = self._twiddled(fr, fi, st)
        return [(s(fr[0] + tr), s(fi[0] + ti)), (s(fr[0] - tr), s(fi[0] - ti))]

    def _radix4(self, fr: list, fi: list, st: _Stage) -> list:
        s = self.ar.store
        (ar, ai), (br, bi), (cr, ci) = self._twiddled(fr, fi, st)
        dr, di = s(fr[0] - br), s(fi[0] - bi)  # input 0 minus input 2
        er, ei = s(fr[0] + br), s(fi[0] + bi)
        gr, gi = s(ar + cr), s(ai + ci)  # inputs 1 and 3
        hr, hi = s(ar - cr), s(ai - ci)
        out0 = (s(er + gr), s(ei + gi))
        out2 = (s(er - gr), s(ei - gi))
        if self.inverse:
            out1, out3 = (s(dr - hi), s(di + hr)), (s(dr + hi), s(di - hr))
        else:
            out1, out3 = (s(dr + hi), s(di - hr)), (s(dr - hi), s(di + hr))
        return [out0, out1, out2, out3]

    def _radix3(self, fr: list, fi: list, st: _Stage) -> list:
        s, a = self.ar.store, self.ar
        (br, bi), (cr, ci) = self._twiddled(fr, fi, st)
        sr, si = s(br + cr), s(bi + ci)
        dr, di = s(br - cr), s(bi - ci)
        mr, mi = a.minus_half(fr[0], sr), a.minus_half(fi[0], si)
        dr, di = a.smul(dr, st.extra[0]), a.smul(di, st.extra[0])
        out0 = (s(fr[0] + sr), s(fi[0] + si))
        out2 = (s(mr + di), s(mi - dr))
        out1 = (s(mr - di), s(mi + dr))
        return [out0, out1, out2]

    def _radix5(self, fr: list, fi: list, st: _Stage) -> list:
        s, a = self.ar.store, self.ar
        yar, yai, ybr, ybi = st.extra
        (r1, i1), (r2, i2), (r3, i3), (r4, i4) = self._twiddled(fr, fi, st)
        r7, i7 = s(r1 + r4), s(i1 + i4)
        r10, i10 = s(r1 - r4), s(i1 - i4)
        r8, i8 = s(r2 + r3), s(i2 + i3)
        r9, i9 = s(r2 - r3), s(i2 - i3)
        out0 = (s(fr[0] + (r7 + r8)), s(fi[0] + (i7 + i8)))
        r5 = s(fr[0] + a.smul(r7, yar) + a.smul(r8, ybr))
        i5 = s(fi[0] + a.smul(i7, yar) + a.smul(i8, ybr))
        r6 = s(a.smul(i10, yai) + a.smul(i9, ybi))
        i6 = s(-a.smul(r10, yai) - a.smul(r9, ybi))
        r11 = s(fr[0] + a.smul(r7, ybr) + a.smul(r8, yar))
        i11 = s(fi[0] + a.smul(i7, ybr) + a.smul(i8, yar))
        r12 = s(-a.smul(i10, ybi) + a.smul(i9, yai))
        i12 = s(a.smul(r10, ybi) - a.smul(r9, yai))
        return [out0, (s(r5 - r6), s(i5 - i6)), (s(r11 + r12), s(i11 + i12)), (s(r11 - r12), s(i11 - i12)),
                (s(r5 + r6), s(i5 + i6))]


class RealFft:
    """TFLM's real FFT of even length ``fft_length`` (forward) or its inverse, in one scalar kind."""

    def __init__(self, fft_length: int, inverse: bool, kind: str):
        self.fft_length, self.half = fft_length, fft_length // 2
        self.ar = _Arith(kind)
        self.cfft = ComplexFft(self.half, inverse, kind)
        n = self.half
        phases = []
        for i in range(n // 2):
            phase = -PI * (float(i + 1) / n + 0.5)
            phases.append(phase * -1 if inverse else phase)
        self.sr, self.si = self.ar.table(phases)
        self.k = np.arange(1, n // 2 + 1)
        self.dtype = np.dtype(kind)

    def _load(self, x: np.ndarray) -> np.ndarray:
        return x.astype(np.int64) if self.ar.fixed else x.astype(np.float32)

    def forward(self, x: np.ndarray) -> np.ndarray:
        """``(rows, fft_length)`` real samples to ``(rows, fft_length + 2)`` interleaved bins."""
        a, s, n, k = self.ar, self.ar.store, self.half, self.k
        x = self._load(x)
        tr, ti = self.cfft(x[:, 0::2], x[:, 1::2])
        rows = x.shape[0]
        outr = np.zeros((rows, n + 1), tr.dtype)
        outi = np.zeros((rows, n + 1), tr.dtype)
        dr, di = a.div(tr[:, 0], 2), a.div(ti[:, 0], 2)
        outr[:, 0], outr[:, n] = s(dr + di), s(dr - di)
        pr, pi = a.div(tr[:, k], 2), a.div(ti[:, k], 2)
        qr, qi = a.div(tr[:, n - k], 2), a.div(s(-ti[:, n - k]), 2)
        f1r, f1i = s(pr + qr), s(pi + qi)
        f2r, f2i = s(pr - qr), s(pi - qi)
        wr, wi = a.cmul(f2r, f2i, self.sr, self.si)
        outr[:, k], outi[:, k] = a.half_sum(f1r + wr), a.half_sum(f1i + wi)
        outr[:, n - k], outi[:, n - k] = a.half_sum(f1r - wr), a.half_sum(wi - f1i)
        out = np.stack([outr, outi], axis=-1).reshape(rows, 2 * (n + 1))
        return out.astype(self.dtype)

    def inverse(self, x: np.ndarray) -> np.ndarray:
        """``(rows, fft_length + 2)`` interleaved bins to ``(rows, fft_length)`` real samples."""
        a, s, n, k = self.ar, self.ar.store, self.half, self.k
        x = self._load(x)
        fr, fi = x[:, 0::2], x[:, 1::2]
        rows = x.shape[0]
        tr = np.zeros((rows, n), fr.dtype)
        ti = np.zeros((rows, n), fr.dtype)
        tr[:, 0] = a.div(s(fr[:, 0] + fr[:, n]), 2)
        ti[:, 0] = a.div(s(fr[:, 0] - fr[:, n]), 2)
        pr, pi = a.div(fr[:, k], 2), a.div(fi[:, k], 2)
        qr, qi = a.div(fr[:, n - k], 2), a.div(s(-fi[:, n - k]), 2)
        er, ei = s(pr + qr), s(pi + qi)
        dr, di = s(pr - qr), s(pi - qi)
        wr, wi = a.cmul(dr, di, self.sr, self.si)
        tr[:, k], ti[:, k] = s(er + wr), s(ei + wi)
        tr[:, n - k], ti[:, n - k] = s(er - wr), s(-s(ei - wi))
        yr, yi = self.cfft(tr, ti)
        y = np.stack([yr, yi], axis=-1).reshape(rows, 2 * n)
        if not a.fixed:
            y = y / np.float32(self.fft_length)
        return y.astype(self.dtype)


# ---- what SignalRfft and SignalIrfft share: options and checks -------------------------------------------------

# The 'T' option holds a TFLite TensorType code; TFLM sets up its FFT state for that type in init, but picks the
# kernel by the output tensor's type, so the two must agree.
TYPE_CODES = {0: "float32", 2: "int32", 7: "int16"}
# TFLM takes any length its FFT factors; micronn stops at a million points (a 10 MB FFT state, beyond any
# microcontroller), which keeps prepare's table building to about a second.
MAX_FFT_LENGTH = 1 << 20


def fft_options(node: Node) -> tuple[str, int]:
    """The ``(T, fft_length)`` options, refusing maps TFLM would read differently from their names."""
    opts = read_options(node, {"T": int, "fft_length": int})
    names = sorted(str(k) for k in flexbuffers.Loads(bytes(node.op.custom_options)))
    if names != ["T", "fft_length"]:
        raise node.fail(f"custom options {names}: expected exactly ['T', 'fft_length'] (TFLM reads fft_length as "
                        "the map's second value, which another name would shift)")
    code, length = opts["T"], opts["fft_length"]
    if code not in TYPE_CODES:
        raise node.fail(f"custom option T = {code} is not float32 (0), int32 (2) or int16 (7)")
    if length > MAX_FFT_LENGTH:
        raise node.fail(f"fft_length {length} is beyond micronn's limit of {MAX_FFT_LENGTH} (no microcontroller "
                        "holds such an FFT)")
    if not real_fft_length_ok(length):
        raise node.fail(f"fft_length {length} is not supported: TFLM needs an even length of at least 4 whose half "
                        "has no prime factor but 2, 3 and 5 (other lengths crash its FFT)")
    return TYPE_CODES[code], length


def fft_operands(node: Node, kind: str) -> tuple[Tensor, Tensor, int]:
    """The input and output tensors, checked for count, type and rank; returns them and the number of frames."""
    if len(node.inputs) != 1 or node.inputs[0] is None or len(node.outputs) != 1:
        raise node.fail("expects 1 input and 1 output")
    inp, out = node.inputs[0], node.outputs[0]
    for what, t in (("input", inp), ("output", out)):
        if t.dtype.name != kind:
            raise node.fail(f"the {what} is {t.dtype.name} but the T option says {kind}")
        if len(t.shape) < 1:
            raise node.fail(f"the {what} must have at least one dimension")
    if len(inp.shape) != len(out.shape):
        raise node.fail(f"input {inp.shape} and output {out.shape} differ in rank")
    frames = int(np.prod(inp.shape[:-1], dtype=np.int64))
    if frames != int(np.prod(out.shape[:-1], dtype=np.int64)):
        raise node.fail(f"input {inp.shape} and output {out.shape} hold different numbers of frames")
    return inp, out, frames
