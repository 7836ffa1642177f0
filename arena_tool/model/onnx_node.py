"""The vocabulary of a loaded ONNX graph (a node, a static tensor type), apart from the loader,
so constant folding (onnx_fold) can speak of nodes without importing the loader that runs it."""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Mapping

Shape = tuple[int, ...]


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
