"""The vocabulary of a loaded ONNX graph (a node, a static tensor type, a constant, a weight, the
Graph itself), apart from the loader, so constant folding (onnx_fold) can speak of nodes and the
op table (optable) of graphs without importing the loader that builds them."""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Mapping

import numpy as np
import onnx
from onnx import TensorProto, numpy_helper

Shape = tuple[int, ...]
EVAL_LIMIT = 1 << 16  # elements; bigger constants are folded by shape only


@dataclasses.dataclass(frozen=True)
class TensorType:
    """A static tensor type: dtype name (see dtypes) and dims (() = scalar)."""

    dtype: str
    shape: Shape

    @property
    def elements(self) -> int:
        return math.prod(self.shape)


@dataclasses.dataclass(frozen=True)
class Node:
    """One graph node. name is stable and unique (see onnx_graph._stable_names); attrs holds
    the non-graph attributes as Python values (onnx.helper.get_attribute_value)."""

    index: int
    name: str
    op_type: str
    domain: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    attrs: Mapping[str, Any]


@dataclasses.dataclass
class Const:
    """A constant: elem type code, shape if known, value (if small and known) or its source."""

    elem: int
    shape: Shape | None
    value: np.ndarray | None = None
    proto: TensorProto | None = None  # evaluated lazily from here (inline data only)

    def array(self) -> np.ndarray | None:
        if self.value is None and self.proto is not None and self.shape is not None \
                and math.prod(self.shape) <= EVAL_LIMIT and self.proto.data_location != TensorProto.EXTERNAL:
            self.value = numpy_helper.to_array(self.proto)
        return self.value


@dataclasses.dataclass(frozen=True)
class Weight:
    """A constant a running node reads (or a graph output): flash, not arena.
    dtype is '' for strings and unknown types; shape is None when neither the
    model nor inference gives it. Such weights have no known size."""

    name: str
    dtype: str
    shape: Shape | None


@dataclasses.dataclass(frozen=True)
class Graph:
    """What planning needs from a model.

    nodes: every graph.node, by index. schedule: indices of the nodes that run,
    topologically ordered (stable: graph order where it already is one).
    folded: indices of folded constant nodes, ascending. inputs: activation graph
    inputs (initializer-backed inputs are weights). outputs: graph output names.
    types: static type of every activation (graph inputs, outputs of scheduled
    nodes). weights: constants read by scheduled nodes or graph outputs, in
    first-use order. constant_shapes: known shapes of every constant.
    """

    path: str
    sha256: str
    nodes: tuple[Node, ...]
    schedule: tuple[int, ...]
    folded: tuple[int, ...]
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    types: Mapping[str, TensorType]
    weights: tuple[Weight, ...]
    constant_shapes: Mapping[str, Shape]
    # For lowering: every constant (initializers, Constant and folded outputs) and the
    # parsed model, so constant values can be evaluated on demand without re-reading it.
    consts: Mapping[str, Const] = dataclasses.field(default_factory=dict, compare=False, repr=False)
    model: onnx.ModelProto | None = dataclasses.field(default=None, compare=False, repr=False)
