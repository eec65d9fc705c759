"""A BERT encoder (all-MiniLM-L6-v2) in plain numpy, straight over the int8 weights of its ONNX file.

The ONNX model keeps every large weight as an int8 initializer that the graph turns into float32 with
Cast -> Mul(scale) right before use. onnxruntime folds those into a float32 copy of the model (~90 MB);
here the int8 arrays stay memory-mapped. The first forward pass dequantises each matrix only while its
product is computed (one float32 matrix, <= 2.4 MB, at a time), so a process that embeds once (a one-shot
turn) never holds more; from the second pass on, the 36 encoder matrices are kept as float32 (+40 MiB),
because converting them again cost ~9 ms of every later embedding in a long-lived process (the gateway).

``MiniLM.load`` finds the weights by tracing the graph from its inputs (which Gather reads ``input_ids``,
which MatMul's output reaches the attention scores as the query, ...) rather than by initializer names,
and takes the constants of the computation (LayerNorm epsilon, attention scale, mask value, GELU's
constants) from the graph too. A model laid out differently raises ``ModelLayoutError``.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from picoora.store.onnx_reader import Graph, Node, read_graph

if TYPE_CHECKING:
    import numpy as np

# Abramowitz & Stegun 7.1.26: erf(x) = 1 - t(a1 + t(a2 + ...)) exp(-x^2), t = 1 / (1 + p|x|); |error| <= 1.5e-7,
# below float32's resolution for GELU's purposes (numpy has no erf of its own).
_ERF_P = 0.3275911
_ERF_A = (1.061405429, -1.453152027, 1.421413741, -0.284496736, 0.254829592)  # a5 .. a1, for Horner's rule

# Uses of a matrix after which its float32 form is kept (see the module's docstring).
KEEP_AFTER_USES = 2

# Ops that only move data between a projection and the product that consumes it (head split / merge).
_RESHAPES = {"Reshape", "Transpose"}


class ModelLayoutError(Exception):
    """The ONNX graph is not the BERT layout this module knows how to run."""


@dataclass
class Quantized:
    """An int8 matrix the graph dequantises as float(values) * scale (scale per row, per column or single)."""

    values: np.ndarray
    scale: np.ndarray
    _resident: np.ndarray | None = field(default=None, init=False, repr=False, compare=False)
    _uses: int = field(default=0, init=False, repr=False, compare=False)

    def dense(self) -> np.ndarray:
        """The float32 matrix: made for this product on first use, kept from the second use on."""
        resident = self._resident
        if resident is not None:
            return resident
        import numpy as np

        matrix = np.multiply(self.values, self.scale, dtype=np.float32)
        self._uses += 1  # two threads racing here at worst both keep an identical matrix
        if self._uses >= KEEP_AFTER_USES:
            matrix.flags.writeable = False  # shared by every later product: nothing may write into it
            self._resident = matrix
        return matrix

    @property
    def resident(self) -> bool:
        return self._resident is not None

    def rows(self, index: np.ndarray) -> np.ndarray:
        import numpy as np

        scale = np.broadcast_to(self.scale, self.values.shape)  # a view: indexing copies only the chosen rows
        return self.values[index].astype(np.float32) * scale[index]


def _dense(weight) -> np.ndarray:
    return weight.dense() if isinstance(weight, Quantized) else weight


def _rows(weight, index: np.ndarray) -> np.ndarray:
    return weight.rows(index) if isinstance(weight, Quantized) else weight[index]


@dataclass
class Linear:
    weight: Quantized | np.ndarray  # (in, out): the graph computes x @ weight + bias
    bias: np.ndarray

    def __call__(self, x: np.ndarray) -> np.ndarray:
        out = x @ _dense(self.weight)  # on a first use, the float32 matrix is dropped once the product exists
        out += self.bias
        return out


@dataclass
class LayerNorm:
    gamma: np.ndarray
    beta: np.ndarray
    eps: float

    def __call__(self, x: np.ndarray) -> np.ndarray:
        import numpy as np

        centred = x - x.mean(axis=-1, keepdims=True)
        var = np.mean(centred * centred, axis=-1, keepdims=True)
        centred /= np.sqrt(var + np.float32(self.eps))
        centred *= self.gamma
        centred += self.beta
        return centred


@dataclass
class Gelu:
    """x * c2 * (erf(x / c0) + c1): exact GELU with the graph's constants (sqrt 2, 1, 0.5)."""

    c0: float
    c1: float
    c2: float

    def __call__(self, x: np.ndarray) -> np.ndarray:
        import numpy as np

        inner = erf(x / np.float32(self.c0))
        inner += np.float32(self.c1)
        inner *= np.float32(self.c2)
        inner *= x
        return inner


@dataclass
class EncoderLayer:
    query: Linear
    key: Linear
    value: Linear
    output: Linear
    attention_norm: LayerNorm
    intermediate: Linear
    gelu: Gelu
    ffn_output: Linear
    output_norm: LayerNorm
    heads: int
    score_scale: float  # applied to q @ k^T (the graph scales q and k by its square root each)

    def __call__(self, x: np.ndarray, mask_bias: np.ndarray) -> np.ndarray:
        import numpy as np

        batch, width, hidden = x.shape

        def split(t: np.ndarray) -> np.ndarray:  # (B, T, H*D) -> (B, H, T, D)
            return t.reshape(batch, width, self.heads, hidden // self.heads).transpose(0, 2, 1, 3)

        q, k, v = split(self.query(x)), split(self.key(x)), split(self.value(x))
        scores = q @ k.transpose(0, 1, 3, 2)
        scores *= np.float32(self.score_scale)
        scores += mask_bias
        scores -= scores.max(axis=-1, keepdims=True)
        np.exp(scores, out=scores)
        scores /= scores.sum(axis=-1, keepdims=True)
        context = (scores @ v).transpose(0, 2, 1, 3).reshape(batch, width, hidden)
        x = self.attention_norm(self.output(context) + x)
        return self.output_norm(self.ffn_output(self.gelu(self.intermediate(x))) + x)


def erf(x: np.ndarray) -> np.ndarray:
    """erf of a float32 array, in place where it can be: the FFN activations are the largest arrays."""
    import numpy as np

    ax = np.abs(x)
    t = ax * np.float32(_ERF_P)
    t += 1.0
    np.reciprocal(t, out=t)
    poly = t * np.float32(_ERF_A[0])
    for a in _ERF_A[1:]:
        poly += np.float32(a)
        poly *= t
    np.square(ax, out=ax)
    np.negative(ax, out=ax)
    np.exp(ax, out=ax)
    poly *= ax
    np.subtract(np.float32(1.0), poly, out=poly)
    return np.copysign(poly, x, out=poly)


@dataclass
class MiniLM:
    word: Quantized | np.ndarray
    position: Quantized | np.ndarray
    position_ids: np.ndarray  # 1-D; a sequence of width T uses the first T
    token_type: Quantized | np.ndarray
    embedding_norm: LayerNorm
    layers: list[EncoderLayer]
    masked_logit: float  # added to the attention score of a padding token

    @classmethod
    def load(cls, path: Path) -> MiniLM:
        return _Tracer(read_graph(path)).model()

    def hidden_states(self, input_ids: np.ndarray, attention_mask: np.ndarray) -> np.ndarray:
        """(B, T) token ids and 0/1 mask -> (B, T, hidden) float32: the graph's ``last_hidden_state``."""
        import numpy as np

        width = input_ids.shape[1]
        if width > len(self.position_ids):
            raise ValueError(f"{width} tokens exceed the model's {len(self.position_ids)} positions")
        x = _rows(self.word, input_ids)
        x += _rows(self.token_type, np.zeros_like(input_ids))  # single-segment input: token type 0
        x += _rows(self.position, self.position_ids[:width])
        x = self.embedding_norm(x)
        mask_bias = np.where(attention_mask[:, None, None, :] > 0, 0.0, self.masked_logit).astype(np.float32)
        for layer in self.layers:
            x = layer(x, mask_bias)
        return x


class _Tracer:
    """Finds the encoder's weights and constants by following the graph's data flow."""

    def __init__(self, graph: Graph):
        self.graph = graph
        self.producer: dict[str, Node] = {}
        self.consumers: dict[str, list[Node]] = defaultdict(list)
        for node in graph.nodes:
            for name in node.outputs:
                self.producer[name] = node
            for name in node.inputs:
                self.consumers[name].append(node)

    def model(self) -> MiniLM:
        for name in ("input_ids", "attention_mask", "token_type_ids"):
            if name not in self.graph.inputs:
                raise ModelLayoutError(f"the graph has no {name!r} input (inputs: {', '.join(self.graph.inputs)})")
        word = self.only("input_ids", "Gather")
        token_type = self.only("token_type_ids", "Gather")
        first_sum = self.only(word.outputs[0], "Add")
        if self.other_input(first_sum, word.outputs[0]) != token_type.outputs[0]:
            raise ModelLayoutError("word and token type embeddings are not added first")
        second_sum = self.only(first_sum.outputs[0], "Add")
        position = self.producer[self.other_input(second_sum, first_sum.outputs[0])]
        position_slice = self.producer.get(position.inputs[1])
        if position.op_type != "Gather" or position_slice is None or position_slice.op_type != "Slice":
            raise ModelLayoutError("position embeddings are not gathered from a slice of position ids")
        start = int(self.constant(position_slice.inputs[1]).reshape(-1)[0])
        norm_node = self.only(second_sum.outputs[0], "LayerNormalization")

        layers, hidden = [], norm_node.outputs[0]
        while hidden not in self.graph.outputs:
            layer, hidden, masked_logit = self.layer(hidden)
            layers.append(layer)
        if not layers:
            raise ModelLayoutError("no encoder layer between the embeddings and the output")
        return MiniLM(
            word=self.weight(word.inputs[0]),
            position=self.weight(position.inputs[0]),
            position_ids=self.constant(position_slice.inputs[0]).reshape(-1)[start:],
            token_type=self.weight(token_type.inputs[0]),
            embedding_norm=self.layer_norm(norm_node),
            layers=layers,
            masked_logit=masked_logit,
        )

    def layer(self, hidden: str) -> tuple[EncoderLayer, str, float]:
        projections = [n for n in self.consumers[hidden] if n.op_type == "MatMul"]
        if len(projections) != 3:
            raise ModelLayoutError(f"expected query, key and value projections of {hidden}, found {len(projections)}")
        ends = []  # (attention product reached, operand slot, linear, scale picked up on the way, projected name)
        for matmul in projections:
            linear, projected = self.linear(matmul)
            ends.append((*self.descend(projected), linear, projected))
        lefts = [e for e in ends if e[1] == 0]  # only the query is a left operand: scores = q @ k^T
        if len(lefts) != 1:
            raise ModelLayoutError(f"cannot tell query, key and value apart after {hidden}")
        query_key, _, q_scale, query, q_name = lefts[0]
        keys = [e for e in ends if e[0] is query_key and e[1] == 1]
        values = [e for e in ends if e[0] is not query_key and e[1] == 1]
        if len(keys) != 1 or len(values) != 1:
            raise ModelLayoutError(f"cannot tell query, key and value apart after {hidden}")
        _, _, k_scale, key, _ = keys[0]
        context, _, _, value, _ = values[0]

        score_sum = self.only(query_key.outputs[0], "Add")
        mask = self.producer.get(self.other_input(score_sum, query_key.outputs[0]))
        if mask is None or mask.op_type != "Where" or float(self.constant(mask.inputs[1])) != 0.0:
            raise ModelLayoutError("the attention mask is not a Where(mask, 0, large negative) added to the scores")
        softmax = self.only(score_sum.outputs[0], "Softmax")
        if softmax.attributes.get("axis", -1) not in (-1, 3) or not self.reaches(context.inputs[0], softmax):
            raise ModelLayoutError("the attention weights are not a softmax over the keys")

        out_matmul, _, _ = self.descend(context.outputs[0])
        output, attended = self.linear(out_matmul)
        attention_norm = self.residual_norm(attended, hidden)
        normed = attention_norm.outputs[0]

        intermediate, pre_gelu = self.linear(self.only(normed, "MatMul"))
        gelu, activated = self.gelu(pre_gelu)
        ffn_output, ffn_out = self.linear(self.only(activated, "MatMul"))
        output_norm = self.residual_norm(ffn_out, normed)

        head_dim = self.head_dim(q_name)
        width = query.bias.shape[-1]
        layer = EncoderLayer(
            query=query, key=key, value=value, output=output, attention_norm=self.layer_norm(attention_norm),
            intermediate=intermediate, gelu=gelu, ffn_output=ffn_output, output_norm=self.layer_norm(output_norm),
            heads=width // head_dim, score_scale=q_scale * k_scale,
        )
        return layer, output_norm.outputs[0], float(self.constant(mask.inputs[2]))

    # ------------------------------------------------------------------ patterns

    def linear(self, matmul: Node) -> tuple[Linear, str]:
        """x @ W followed by + bias: the Linear and the name of its output."""
        add = self.only(matmul.outputs[0], "Add")
        bias = self.constant(self.other_input(add, matmul.outputs[0]))
        return Linear(self.weight(matmul.inputs[1]), bias), add.outputs[0]

    def descend(self, name: str) -> tuple[Node, int, float]:
        """Follow a value through reshapes, transposes and scalar multiplications to the product it feeds."""
        scale = 1.0
        for _ in range(16):
            users = [n for n in self.consumers[name] if n.op_type != "Shape"]
            if len(users) != 1:
                break
            (node,) = users
            if node.op_type == "MatMul":
                return node, node.inputs.index(name), scale
            if node.op_type == "Mul":
                factor = self.constant(self.other_input(node, name))
                if factor.size != 1:
                    break
                scale *= float(factor)
            elif node.op_type not in _RESHAPES:
                break
            name = node.outputs[0]
        raise ModelLayoutError(f"{name} does not lead to a matrix product through reshapes and scalings")

    def residual_norm(self, name: str, residual: str) -> Node:
        add = self.only(name, "Add")
        if self.other_input(add, name) != residual:
            raise ModelLayoutError(f"{name} is not added back to {residual} before its LayerNorm")
        return self.only(add.outputs[0], "LayerNormalization")

    def gelu(self, x: str) -> tuple[Gelu, str]:
        div = self.only(x, "Div")
        erf_node = self.only(div.outputs[0], "Erf")
        plus = self.only(erf_node.outputs[0], "Add")
        half = self.only(plus.outputs[0], "Mul")
        times_x = self.only(half.outputs[0], "Mul")
        if self.other_input(times_x, half.outputs[0]) != x:
            raise ModelLayoutError(f"the activation after {x} is not GELU (x * (erf(x / c) + 1) / 2)")
        constants = (self.constant(div.inputs[1]), self.constant(self.other_input(plus, erf_node.outputs[0])),
                     self.constant(self.other_input(half, plus.outputs[0])))
        return Gelu(*(float(c) for c in constants)), times_x.outputs[0]

    def head_dim(self, projected: str) -> int:
        """The head size: the last entry of the shape the query is reshaped to, (B, T, -1, head_dim)."""
        reshape = self.only(projected, "Reshape")
        shape = self.producer.get(reshape.inputs[1])
        last = shape.inputs[-1] if shape is not None and shape.op_type == "Concat" else reshape.inputs[1]
        value = int(self.constant(last).reshape(-1)[-1])
        if value <= 0:
            raise ModelLayoutError(f"cannot read the attention head size from the reshape of {projected}")
        return value

    def layer_norm(self, node: Node) -> LayerNorm:
        if node.attributes.get("axis", -1) != -1:
            raise ModelLayoutError("a LayerNormalization does not normalise the last axis")
        return LayerNorm(self.constant(node.inputs[1]), self.constant(node.inputs[2]),
                         float(node.attributes.get("epsilon", 1e-5)))

    # ------------------------------------------------------------------ graph access

    def weight(self, name: str) -> Quantized | np.ndarray:
        """An initializer, or the int8 initializer and scale of a Cast -> Mul(scale) dequantisation."""
        if name in self.graph.initializers:
            return self.graph.initializers[name]
        mul = self.producer.get(name)
        if mul is not None and mul.op_type == "Mul":
            cast = self.producer.get(mul.inputs[0])
            if cast is not None and cast.op_type == "Cast" and cast.inputs[0] in self.graph.initializers:
                return Quantized(self.graph.initializers[cast.inputs[0]], self.constant(mul.inputs[1]))
        raise ModelLayoutError(f"weight {name} is neither an initializer nor Cast(int8) * scale")

    def constant(self, name: str) -> np.ndarray:
        try:
            return self.graph.initializers[name]
        except KeyError:
            raise ModelLayoutError(f"{name} was expected to be a constant of the graph") from None

    def only(self, name: str, op_type: str) -> Node:
        found = [n for n in self.consumers[name] if n.op_type == op_type]
        if len(found) != 1:
            raise ModelLayoutError(f"expected one {op_type} reading {name}, found {len(found)}")
        return found[0]

    @staticmethod
    def other_input(node: Node, name: str) -> str:
        others = [i for i in node.inputs if i != name]
        if len(others) != 1:
            raise ModelLayoutError(f"{node.op_type} node reading {name} does not have exactly one other input")
        return others[0]

    def reaches(self, name: str, target: Node, depth: int = 4) -> bool:
        """Whether ``name`` is computed from ``target``'s output within ``depth`` nodes."""
        node = self.producer.get(name)
        if node is None or depth == 0:
            return False
        return node is target or any(self.reaches(i, target, depth - 1) for i in node.inputs)
