"""A minimal reader for ONNX model files: the graph's nodes and initializers, nothing else.

Only the protobuf fields the MiniLM forward pass needs are decoded (ModelProto.graph; GraphProto nodes,
initializers, inputs and outputs; NodeProto inputs, outputs, op type and float/int attributes; TensorProto
dims, data type, name and raw_data). Initializers stored as ``raw_data`` become read-only numpy views of the
memory-mapped file, so loading copies nothing and only the pages that are read count towards RSS.
"""

from __future__ import annotations

import mmap
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

# TensorProto.DataType values -> numpy dtype names (the ones an exported transformer uses)
_DTYPES = {1: "float32", 2: "uint8", 3: "int8", 5: "int16", 6: "int32", 7: "int64", 9: "bool", 10: "float16",
           11: "float64"}

_VARINT, _FIXED64, _LENGTH, _FIXED32 = 0, 1, 2, 5


class OnnxFormatError(Exception):
    """The file is not an ONNX model this reader understands."""


@dataclass
class Node:
    op_type: str
    inputs: list[str]
    outputs: list[str]
    attributes: dict[str, float | int] = field(default_factory=dict)


@dataclass
class Graph:
    nodes: list[Node]
    initializers: dict[str, np.ndarray]
    inputs: list[str]
    outputs: list[str]


def read_graph(path: Path) -> Graph:
    """Parse the model at ``path``. The returned arrays keep the file mapped for as long as they live."""
    with open(path, "rb") as fh:
        buffer = memoryview(mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ))
    graph = None
    for number, value in _fields(buffer):
        if number == 7:  # ModelProto.graph
            graph = _graph(value)
    if graph is None:
        raise OnnxFormatError(f"{path} holds no ONNX graph")
    return graph


def _graph(buffer: memoryview) -> Graph:
    graph = Graph(nodes=[], initializers={}, inputs=[], outputs=[])
    for number, value in _fields(buffer):
        if number == 1:
            graph.nodes.append(_node(value))
        elif number == 5:
            name, array = _tensor(value)
            graph.initializers[name] = array
        elif number in (11, 12):  # ValueInfoProto: only its name (field 1) matters here
            name = next((bytes(v).decode() for n, v in _fields(value) if n == 1), "")
            (graph.inputs if number == 11 else graph.outputs).append(name)
    return graph


def _node(buffer: memoryview) -> Node:
    node = Node(op_type="", inputs=[], outputs=[])
    for number, value in _fields(buffer):
        if number == 1:
            node.inputs.append(bytes(value).decode())
        elif number == 2:
            node.outputs.append(bytes(value).decode())
        elif number == 4:
            node.op_type = bytes(value).decode()
        elif number == 5:
            _attribute(value, node.attributes)
    return node


def _attribute(buffer: memoryview, into: dict[str, float | int]) -> None:
    name, value = "", None
    for number, raw in _fields(buffer):
        if number == 1:
            name = bytes(raw).decode()
        elif number == 2:  # f: float, stored as fixed32
            value = struct.unpack("<f", struct.pack("<I", raw))[0]
        elif number == 3:  # i: int64 varint (two's complement)
            value = raw - (1 << 64) if raw >= 1 << 63 else raw
    if value is not None:  # strings, tensors and lists are not needed by anything that reads this graph
        into[name] = value


def _tensor(buffer: memoryview) -> tuple[str, np.ndarray]:
    import numpy as np

    dims: list[int] = []
    data_type, name, data = 0, "", None
    for number, value in _fields(buffer):
        if number == 1:  # dims: packed or one varint per field
            dims.extend(_packed_varints(value) if isinstance(value, memoryview) else [value])
        elif number == 2:
            data_type = value
        elif number == 8:
            name = bytes(value).decode()
        elif number == 9:
            data = value
    if data_type not in _DTYPES:
        raise OnnxFormatError(f"initializer {name} has unsupported data type {data_type}")
    if data is None:  # exporters write raw_data; typed lists (float_data, ...) and external files are not read
        raise OnnxFormatError(f"initializer {name} does not keep its data in raw_data, which this reader needs")
    array = np.frombuffer(data, dtype=np.dtype(_DTYPES[data_type]).newbyteorder("<"))
    return name, array.reshape(dims)


def _fields(buffer: memoryview):
    """(field number, value) pairs of one message: ints for varint/fixed fields, memoryviews for the rest."""
    pos, end = 0, len(buffer)
    while pos < end:
        key, pos = _varint(buffer, pos)
        number, wire = key >> 3, key & 7
        value: int | memoryview
        if wire == _VARINT:
            value, pos = _varint(buffer, pos)
        elif wire == _LENGTH:
            size, pos = _varint(buffer, pos)
            value, pos = buffer[pos:pos + size], pos + size
        elif wire == _FIXED32:
            value, pos = int.from_bytes(buffer[pos:pos + 4], "little"), pos + 4
        elif wire == _FIXED64:
            value, pos = int.from_bytes(buffer[pos:pos + 8], "little"), pos + 8
        else:
            raise OnnxFormatError(f"unexpected protobuf wire type {wire}: the file is damaged or not ONNX")
        if pos > end:
            raise OnnxFormatError("a protobuf field runs past its message: the file is truncated or damaged")
        yield number, value


def _varint(buffer: memoryview, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(buffer):
            raise OnnxFormatError("a protobuf varint runs past the end: the file is truncated or damaged")
        byte = buffer[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7


def _packed_varints(buffer: memoryview) -> list[int]:
    out, pos = [], 0
    while pos < len(buffer):
        value, pos = _varint(buffer, pos)
        out.append(value)
    return out
