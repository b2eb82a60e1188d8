"""What the ADD and MUL templates share: ``mn_elementwise.h``'s walk, specialised to one layer's geometry.

The task's last ``4 * WALK_DIMS`` words are the walk: sizes, then the byte strides of the output and of the two
inputs per dimension (0 where an input is broadcast). The generated code turns it into nested loops with the
sizes and strides compiled in (dimensions of size 1 dropped), visiting rows in the walk's row-major order, so an
output placed exactly over a same-shaped input still reads each element before writing it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from micronn.micro.templates._knobs import Writer as _Writer

DIMS = 6  # MN_WALK_DIMS


@dataclass(frozen=True)
class Walk:
    """Sizes and the three operands' byte strides of the dimensions left (size > 1), outermost first; the last is
    the row (size 1 with strides 0 for a single element)."""

    sizes: tuple[int, ...]
    strides: tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]

    @property
    def key(self) -> str:
        return "walk=" + "x".join(f"{n}:{a}/{b}/{c}" for n, a, b, c in zip(self.sizes, *self.strides))

    @property
    def elements(self) -> int:
        n = 1
        for s in self.sizes:
            n *= s
        return n

    @property
    def row(self) -> tuple[int, int, int, int]:
        """(length, output stride, input 1 stride, input 2 stride) of the innermost row."""
        return (self.sizes[-1], self.strides[0][-1], self.strides[1][-1], self.strides[2][-1])


def walk_of(words: list[Any]) -> Walk | None:
    """The walk of a task's last ``4 * DIMS`` words, or None when it is not plain integers, has an empty dimension,
    or a row that does not step the output by one byte."""
    if len(words) != 4 * DIMS or not all(isinstance(x, int) and not isinstance(x, bool) for x in words):
        return None
    sizes, s0, s1, s2 = (words[k * DIMS:(k + 1) * DIMS] for k in range(4))
    if min(sizes) < 1:
        return None
    keep = [d for d in range(DIMS) if sizes[d] > 1] or [DIMS - 1]
    w = Walk(tuple(sizes[d] for d in keep), tuple(tuple(s[d] if sizes[d] > 1 else 0 for d in keep)
                                                  for s in (s0, s1, s2)))  # type: ignore[arg-type]
    if w.row[0] > 1 and w.row[1] != 1:
        return None
    return w


def loops(w: _Writer, walk: Walk, args: tuple[int, int, int], row: Callable[[], None]) -> None:
    """The walk's outer loops over ``int8_t *r0`` (output) and ``const int8_t *r1, *r2`` (inputs, from argument
    words ``args``), calling ``row()`` to write the innermost row's code (``r0``, ``r1``, ``r2`` at its start)."""
    w(f"int8_t *r0 = (int8_t *)args[{args[0]}];")
    w(f"const int8_t *r1 = (const int8_t *)args[{args[1]}], *r2 = (const int8_t *)args[{args[2]}];")
    outer = len(walk.sizes) - 1
    for d in range(outer):
        w("MN_NO_UNROLL")
        w.open(f"for (int i{d} = 0; i{d} < {walk.sizes[d]}; i{d}++)")
        w(f"int8_t *const q0_{d} = r0; const int8_t *const q1_{d} = r1, *const q2_{d} = r2;")
        w.open("")
    row()
    for d in reversed(range(outer)):
        s = [walk.strides[k][d] for k in range(3)]
        w.close()
        w(f"r0 = q0_{d} + {s[0]}, r1 = q1_{d} + {s[1]}, r2 = q2_{d} + {s[2]};")
        w.close()


def row(w: _Writer, walk: Walk, unroll: int, element: Callable[[str], None]) -> None:
    """The innermost row, ``unroll`` elements per trip (in order) then the rest: ``element(i)`` writes the code of
    element ``i`` (a C expression) of the row at ``r0``, ``r1``, ``r2``."""
    n = walk.row[0]
    whole = n - n % unroll
    if whole > unroll:
        w("MN_NO_UNROLL")
        w.open(f"for (int i = 0; i < {whole}; i += {unroll})")
        for j in range(unroll):
            element(f"i + {j}" if j else "i")
        w.close()
    elif whole:
        for j in range(unroll):
            element(str(j))
    for j in range(whole, n):
        element(str(j))


def kernel(w: _Writer, walk: Walk, args: tuple[int, int, int], name: str, unroll: int, load1: Callable[[str], str],
           load2: Callable[[str], str], combine: Callable[[str, str], str]) -> None:
    """The function ``name``: ``r0[i] = combine(x1, x2)`` over the walk, ``x1 = load1(element)`` of input 1 and
    ``x2 = load2(element)`` of input 2; an input the row broadcasts (stride 0) loaded once per row as ``a`` or
    ``b``. ``args``: the argument words of the output and the two inputs."""
    _, _, s1, s2 = walk.row
    w.open(f"void {name}(const mn_word *args)")

    def body() -> None:
        w.open("")
        if s1 == 0:
            w(f"const int32_t a = {load1('r1[0]')};")
        if s2 == 0:
            w(f"const int32_t b = {load2('r2[0]')};")

        def element(i: str) -> None:
            x1 = "a" if s1 == 0 else load1(f"r1[({i}) * {s1}]")
            x2 = "b" if s2 == 0 else load2(f"r2[({i}) * {s2}]")
            w(f"r0[{i}] = {combine(x1, x2)};")

        row(w, walk, unroll, element)
        w.close()

    loops(w, walk, args, body)
    w.close()
    w("")
