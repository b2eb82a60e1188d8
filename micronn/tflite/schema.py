"""Typed builtin options and op names, generated at import time from the PyPI ``tflite`` schema package.

Every ``XxxOptions`` table of the schema becomes a frozen dataclass with snake_case fields and the
schema's defaults (``Conv2DOptions(stride_w=2, stride_h=2)``); vectors become tuples. The same
introspection encodes them back, so reader and writer share one source of truth and no schema
is vendored.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import re
from typing import Any

import flatbuffers

_BuiltinOperator = importlib.import_module("tflite.BuiltinOperator").BuiltinOperator
_BuiltinOptions = importlib.import_module("tflite.BuiltinOptions").BuiltinOptions

BUILTIN_NAMES: dict[int, str] = {
    v: k for k, v in vars(_BuiltinOperator).items() if not k.startswith("_")
}
BUILTIN_CODES: dict[str, int] = {v: k for k, v in BUILTIN_NAMES.items()}
UNION_TYPES: dict[str, int] = {
    k: v for k, v in vars(_BuiltinOptions).items() if not k.startswith("_") and k != "NONE"
}
UNION_NAMES: dict[int, str] = {v: k for k, v in UNION_TYPES.items()}

_SKIP = re.compile(r"^(GetRootAs.*|Init|.*BufferHasIdentifier|.*AsNumpy|.*Length|.*IsNone)$")
_FLAGS = re.compile(r"Get\(flatbuffers\.number_types\.(\w+)Flags")


def snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])([A-Z])|(?<=[A-Z])([A-Z])(?=[a-z])", r"_\1\2", name).lower()


@dataclasses.dataclass(frozen=True)
class _Field:
    accessor: str  # CamelCase accessor of the generated class
    name: str  # snake_case field name
    vector: bool
    flags: str  # flatbuffers number type, e.g. "Int32", or "String" for a string field


class _Spec:
    """How one options table maps to its dataclass and back."""

    def __init__(self, table: str):
        self.table = table
        self.module = importlib.import_module(f"tflite.{table}")
        gen = getattr(self.module, table)
        fields = []
        for acc, fn in vars(gen).items():
            if not callable(fn) or acc.startswith("_") or _SKIP.match(acc) or isinstance(fn, classmethod):
                continue
            src = inspect.getsource(fn)
            m = _FLAGS.search(src)
            params = list(inspect.signature(fn).parameters)
            if m is None:
                if "self._tab.String(" in src:  # VarHandleOptions' container and shared_name
                    fields.append(_Field(acc, snake(acc), False, "String"))
                continue  # nested tables/structs: not used by any micro kernel, kept out of the IR
            fields.append(_Field(acc, snake(acc), len(params) == 2, m.group(1)))
        self.fields = fields
        defaults = self._decode_empty(gen)
        self.cls = dataclasses.make_dataclass(
            table,
            [(f.name, tuple if f.vector else str | None if f.flags == "String" else type(defaults[f.name]),
              dataclasses.field(default=defaults[f.name])) for f in fields],
            frozen=True,
            namespace={"__doc__": f"Typed ``{table}`` of the TFLite schema."},
        )

    def _decode_empty(self, gen: type) -> dict[str, Any]:
        b = flatbuffers.Builder(16)
        getattr(self.module, f"{self.table}Start")(b)
        b.Finish(getattr(self.module, f"{self.table}End")(b))
        obj = gen.GetRootAs(b.Output(), 0)
        return self.decode_fields(obj)

    def decode_fields(self, obj: Any) -> dict[str, Any]:
        out = {}
        for f in self.fields:
            if f.vector:
                n = getattr(obj, f.accessor + "Length")()
                out[f.name] = tuple(getattr(obj, f.accessor)(j) for j in range(n))
            elif f.flags == "String":  # absent stays None: TFLM tells a missing string from an empty one
                v = getattr(obj, f.accessor)()
                out[f.name] = None if v is None else v.decode("utf-8", errors="replace")
            else:
                v = getattr(obj, f.accessor)()
                out[f.name] = bool(v) if f.flags == "Bool" else v
        return out

    def decode(self, table: flatbuffers.table.Table, limit: int) -> Any:
        obj = getattr(self.module, self.table)()
        obj.Init(table.Bytes, table.Pos)
        for f in self.fields:  # bound every vector before reading it, so a hostile length cannot hang us
            if f.vector and getattr(obj, f.accessor + "Length")() * 4 > limit:
                raise ValueError(f"{self.table}.{f.name} vector is longer than the file")
        return self.cls(**self.decode_fields(obj))

    def encode(self, b: flatbuffers.Builder, opts: Any) -> int:
        vectors = {}
        for f in self.fields:
            if f.vector:
                vals = getattr(opts, f.name)
                getattr(self.module, f"{self.table}Start{f.accessor}Vector")(b, len(vals))
                for v in reversed(vals):
                    getattr(b, f"Prepend{f.flags}")(v)
                vectors[f.name] = b.EndVector()
            elif f.flags == "String" and getattr(opts, f.name) is not None:
                vectors[f.name] = b.CreateString(getattr(opts, f.name))
        getattr(self.module, f"{self.table}Start")(b)
        for f in self.fields:
            if f.flags == "String" and f.name not in vectors:
                continue
            v = vectors[f.name] if f.name in vectors else getattr(opts, f.name)
            getattr(self.module, f"{self.table}Add{f.accessor}")(b, v)
        return getattr(self.module, f"{self.table}End")(b)


_SPECS: dict[str, _Spec] = {}


def spec(table: str) -> _Spec:
    if table not in _SPECS:
        _SPECS[table] = _Spec(table)
    return _SPECS[table]


def options_class(table: str) -> type:
    """The dataclass for the schema table ``table`` (e.g. ``"Conv2DOptions"``)."""
    return spec(table).cls


# Ops whose options table is not named after the op.
_OP_TABLE_OVERRIDES = {
    "AVERAGE_POOL_2D": "Pool2DOptions", "MAX_POOL_2D": "Pool2DOptions", "L2_POOL_2D": "Pool2DOptions",
    "MAXIMUM": "MaximumMinimumOptions", "MINIMUM": "MaximumMinimumOptions",
    "MEAN": "ReducerOptions", "SUM": "ReducerOptions", "REDUCE_MAX": "ReducerOptions",
    "REDUCE_MIN": "ReducerOptions", "REDUCE_PROD": "ReducerOptions", "REDUCE_ANY": "ReducerOptions",
    "REDUCE_ALL": "ReducerOptions", "L2_NORMALIZATION": "L2NormOptions", "LSTM": "LSTMOptions",
    "RNN": "RNNOptions", "UNIDIRECTIONAL_SEQUENCE_RNN": "SequenceRNNOptions",
    "LOCAL_RESPONSE_NORMALIZATION": "LocalResponseNormalizationOptions", "SELECT": "SelectOptions",
    "CONCAT_EMBEDDINGS": "ConcatEmbeddingsOptions", "RESIZE_NEAREST_NEIGHBOR": "ResizeNearestNeighborOptions",
}
_BY_KEY = {t.removesuffix("Options").lower(): t for t in UNION_TYPES}


def options_table_for(op: str) -> str | None:
    """The options table a builtin op uses, or None for ops without options."""
    if op in _OP_TABLE_OVERRIDES:
        return _OP_TABLE_OVERRIDES[op]
    return _BY_KEY.get(op.replace("_", "").lower())


def options(op: str, **fields: Any) -> Any:
    """Build typed options for ``op``: ``options("CONV_2D", stride_w=2, stride_h=2)``."""
    table = options_table_for(op)
    if table is None:
        if fields:
            raise ValueError(f"{op} has no options table")
        return None
    return options_class(table)(**fields)
