"""The encoder's six layers as an ONNX Runtime graph with int8 matrix products (``[fast]``).

The shipped weights are already int8 with one scale per output row; numpy has no int8 GEMM, so
:mod:`pegboard.search.encoder` multiplies their float32 copies. ONNX Runtime's
``DynamicQuantizeMatMul`` multiplies those very int8 weights by activations quantised per batch
(VNNI / AVX2 integer kernels): about 2.6x the numpy path's tokens per second on one core, with
vectors at cosine 0.99+ to it (bench/RESULTS.md). The weights go in as uint8 with a zero point
of 128 (the same values, exactly): with int8 weights, ONNX Runtime's AVX2 kernel on a CPU without
VNNI sums pairs of u8 x s8 products in saturating 16-bit lanes, which took vectors down to cosine
0.9898 on such a machine; its u8 x u8 kernel widens first and cost no more there. The graph is
built here from the weights, not shipped: the embedding lookup and its layer norm stay in numpy,
the graph takes their output.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Matrix = npt.NDArray[np.float32]


def onnx_available() -> bool:
    """Whether onnxruntime and onnx (the ``fast`` extra) are installed (nothing imported)."""
    from importlib.util import find_spec

    return find_spec("onnxruntime") is not None and find_spec("onnx") is not None


class OnnxLayers:
    """The transformer layers and mean pooling: (embedded tokens, mask) -> pooled vectors."""

    def __init__(self, model: bytes) -> None:
        """``model``: the serialised graph of :func:`layers_graph`."""
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = 1  # as numpy under OPENBLAS_NUM_THREADS=1: one core
        options.inter_op_num_threads = 1
        self._session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])

    def __call__(self, x: Matrix, mask: Matrix) -> Matrix:
        out: Matrix = self._session.run(["pooled"], {"x": x, "mask": mask})[0]
        return out


def layers_graph(
    quantised: Mapping[str, tuple[npt.NDArray[np.int8], Matrix]],
    floats: Mapping[str, Matrix],
    *,
    layers: int,
    heads: int,
    dims: int,
    eps: float,
) -> bytes:
    """The layers as an ONNX model: the int8 ``quantised`` matrices ((out, in), a scale per
    row) and the ``floats`` (biases, layer norms) of ``encoder.layer.N.*``."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    initializers: list[Any] = []
    nodes: list[Any] = []

    def const(name: str, value: object) -> str:
        initializers.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def node(op: str, inputs: list[str], name: str, domain: str = "", **attrs: Any) -> str:
        nodes.append(helper.make_node(op, inputs, [name], domain=domain, **attrs))
        return name

    def dense(v: str, base: str) -> str:
        q, scale = quantised[base + ".weight"]  # (out, in), one scale per output row
        return node(
            "DynamicQuantizeMatMul",
            [
                v,
                const(base + ".wq", (q.T.astype(np.int16) + 128).astype(np.uint8)),
                const(base + ".scale", scale.astype(np.float32)),
                const(base + ".zero", np.full(len(scale), 128, dtype=np.uint8)),
                const(base + ".bias", floats[base + ".bias"]),
            ],
            base + ".out",
            domain="com.microsoft",
        )

    def norm(v: str, base: str) -> str:
        gamma = const(base + ".g", floats[base + ".weight"])
        beta = const(base + ".b", floats[base + ".bias"])
        return node("LayerNormalization", [v, gamma, beta], base + ".out", axis=-1, epsilon=eps)

    head = dims // heads
    split = const("split", np.array([0, 0, heads, head], dtype=np.int64))
    merge = const("merge", np.array([0, 0, dims], dtype=np.int64))
    scale = const("scale", np.array(1.0 / float(head) ** 0.5, dtype=np.float32))
    shifted = node("Sub", ["mask", const("one", np.array(1.0, dtype=np.float32))], "shifted")
    pad = node("Mul", [shifted, const("big", np.array(1e4, dtype=np.float32))], "pad")
    pad = node("Unsqueeze", [pad, const("axes12", np.array([1, 2], dtype=np.int64))], "pad4")
    x = "x"
    for layer in range(layers):
        p = f"encoder.layer.{layer}."

        def heads_of(v: str, perm: list[int], name: str) -> str:
            return node("Transpose", [node("Reshape", [v, split], name + ".r")], name, perm=perm)

        q = heads_of(dense(x, p + "attention.self.query"), [0, 2, 1, 3], p + "q")
        k = heads_of(dense(x, p + "attention.self.key"), [0, 2, 3, 1], p + "k")
        v = heads_of(dense(x, p + "attention.self.value"), [0, 2, 1, 3], p + "v")
        logits = node("Mul", [node("MatMul", [q, k], p + "qk"), scale], p + "scaled")
        att = node("Softmax", [node("Add", [logits, pad], p + "masked")], p + "att", axis=-1)
        ctx = node("MatMul", [att, v], p + "ctx4")
        ctx = node("Transpose", [ctx], p + "ctxt", perm=[0, 2, 1, 3])
        ctx = node("Reshape", [ctx, merge], p + "ctx")
        x = node("Add", [x, dense(ctx, p + "attention.output.dense")], p + "res1")
        x = norm(x, p + "attention.output.LayerNorm")
        inner = node("FastGelu", [dense(x, p + "intermediate.dense")], p + "gelu", "com.microsoft")
        x = node("Add", [x, dense(inner, p + "output.dense")], p + "res2")
        x = norm(x, p + "output.LayerNorm")
    weights = node("Unsqueeze", ["mask", const("axis2", np.array([2], dtype=np.int64))], "m3")
    axis1 = const("axis1", np.array([1], dtype=np.int64))
    summed = node("ReduceSum", [node("Mul", [x, weights], "masked_x"), axis1], "sum", keepdims=0)
    count = node("ReduceSum", ["mask", axis1], "count", keepdims=1)
    node("Div", [summed, count], "pooled")
    graph = helper.make_graph(
        nodes,
        "minilm_l6_layers",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", "length", dims]),
            helper.make_tensor_value_info("mask", TensorProto.FLOAT, ["n", "length"]),
        ],
        [helper.make_tensor_value_info("pooled", TensorProto.FLOAT, ["n", dims])],
        initializers,
    )
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
    model = helper.make_model(graph, opset_imports=opsets)
    data: bytes = model.SerializeToString()
    return data
