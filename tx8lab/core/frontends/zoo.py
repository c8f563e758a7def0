"""The built-in model zoo: real network shapes as verified tx8be modules, built in milliseconds.

Spec: DESIGN.md §4 ("built-in model zoo, parameterised by shape") and §7 (``tx8lab models``,
``--model-arg name=value``). ``build("llama_decoder", layers=32)`` returns a verified
:class:`~tx8lab.core.ir.Module`; :data:`MODELS` lists every model with its parameters.

Every weight is a ``Constant`` whose value is a :class:`~tx8lab.core.attrs.RandomInit`
(``Builder.weight``: a seed, not bytes), so LLaMA-7B's 6.7 G parameters cost nothing until
the interpreter materialises them. Only small exact tables (rotary cos/sin, positions,
scalars) are dense.

Readings chosen:

- Feature maps are NHWC and conv weights OHWI ``[Cout, KH, KW, Cin/group]`` (docs/ops.md);
  linear weights are ``[K, N]`` for ``MatMul`` and ``[N, K]`` with ``trans_b`` for the
  classifier ``Gemm`` (ONNX/PyTorch ``Linear``), initialised with std ``1/sqrt(K)``.
- CNNs keep ``BatchNorm_Inference`` after each conv (``batchnorm=true``, parameters
  1x1x1xC f32 as in seed 001); ``batchnorm=false`` gives the folded form, conv + bias.
- Compute dtype is a parameter (f16 for CNNs/BERT/ViT, bf16 for LLaMA). Norm and softmax
  ops keep the compute dtype: the op library accumulates them in f32 internally. LLaMA
  follows HuggingFace where it leaves bf16: softmax in f32 (``Convert`` around it) and f32
  logits.
- The op library has no Sin/Cos, so LLaMA's rotary tables are dense constants (half
  width, ``[seq, head_dim/2]``, concatenated in-graph as HuggingFace does); the causal mask
  is built in-graph from two position vectors with ``Compare`` + ``Where`` so the text stays
  O(seq). Attention is prefill (no KV cache).
- ``layout_align_demo``: seed 000's demo IR is an image, so the graph is rebuilt to exercise
  each of its rules once (see :func:`layout_align_demo`); ``batchnorm_demo`` is seed 001's
  BatchNorm_Inference example with its shapes ``4x112x2xC``, C = 129 (> 32) by default.
- **Bounds.** A parameter value is refused before building when it exceeds
  :data:`MAX_PARAM` (:data:`MAX_LAYERS` for ``layers``: every layer is built as ops), and
  the built module when one of its tensors (weights included) would take more than
  :data:`MAX_TENSOR_BYTES`: ``size=100000`` names the tensor and its bytes at once
  instead of scheduling for hours. The limits are far above the real networks' sizes.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from tx8lab.core.builder import Builder
from tx8lab.core.dtypes import FLOAT_DTYPES
from tx8lab.core.ir import Module, TensorType, Value
from tx8lab.errors import Tx8labError

#: The largest value of an integer parameter (dims, batch, vocabulary: 131072 covers the
#: real networks, e.g. a 128k vocabulary).
MAX_PARAM = 1 << 17

#: The largest ``layers`` (each layer is tens of ops; LLaMA-7B has 32, BERT-base 12).
MAX_LAYERS = 256

#: The largest tensor a zoo model may have, in bytes (4 GiB; LLaMA-7B's largest is 262 MB).
MAX_TENSOR_BYTES = 1 << 32

#: One parameter: (default, type, help).
ParamSpec = tuple[Any, type, str]

_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})


def _convert(model: str, name: str, value: Any, kind: type) -> Any:
    """``value`` (a CLI string or a Python value) as ``kind``, or a clear error."""
    if kind is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
            return value.strip().lower() in _TRUE
        if isinstance(value, int | np.integer) and int(value) in (0, 1):
            return bool(value)
    elif kind is int:
        if isinstance(value, int | np.integer) and not isinstance(value, bool | np.bool_):
            return int(value)
        if isinstance(value, str):
            try:
                return int(value.strip())
            except ValueError:
                pass
    elif kind is float:
        if isinstance(value, int | float | np.integer | np.floating) and not isinstance(
            value, bool | np.bool_
        ):
            return float(value)
        if isinstance(value, str):
            try:
                return float(value.strip())
            except ValueError:
                pass
    elif kind is str and isinstance(value, str):
        return value
    raise Tx8labError(
        f"model {model!r}: parameter {name!r} expects {kind.__name__}, got {value!r}"
        + (" (true/false)" if kind is bool else "")
    )


@dataclass(frozen=True)
class ZooModel:
    """One zoo entry: a name, a one-line summary, its builder and its parameters."""

    name: str
    """Name used by ``build`` and ``tx8lab run NAME``."""
    summary: str
    """One line for ``tx8lab models``."""
    builder: Callable[..., Module]
    """Called with every parameter as a keyword, already converted and checked."""
    params: Mapping[str, ParamSpec]
    """Parameter name -> (default, type, help)."""

    @property
    def signature(self) -> str:
        """The parameters with their defaults, as ``--model-arg`` would take them.

        Examples:
            >>> MODELS["tiny_cnn"].signature
            'batch=1 size=8 channels=8 classes=10 dtype=f16'
        """

        def show(value: Any) -> str:
            return str(value).lower() if isinstance(value, bool) else str(value)

        return " ".join(f"{k}={show(d)}" for k, (d, _, _) in self.params.items())

    def resolve(self, **kwargs: Any) -> dict[str, Any]:
        """Every parameter's value: defaults overridden by ``kwargs``, converted and checked."""
        unknown = [k for k in kwargs if k not in self.params]
        if unknown:
            valid = ", ".join(self.params) or "none"
            raise Tx8labError(
                f"model {self.name!r} has no parameter {unknown[0]!r}; valid parameters: {valid}"
            )
        values: dict[str, Any] = {}
        for key, (default, kind, _) in self.params.items():
            value = _convert(self.name, key, kwargs[key], kind) if key in kwargs else default
            if kind is int and value < 1:
                raise Tx8labError(
                    f"model {self.name!r}: parameter {key!r} must be >= 1, got {value}"
                )
            cap = MAX_LAYERS if key == "layers" else MAX_PARAM
            if kind is int and value > cap:
                raise Tx8labError(
                    f"model {self.name!r}: parameter {key!r}={value} is above the zoo's "
                    f"limit {cap:,}; give a smaller value"
                )
            if key == "dtype" and value not in FLOAT_DTYPES:
                raise Tx8labError(
                    f"model {self.name!r}: parameter 'dtype' must be one of "
                    f"{', '.join(sorted(FLOAT_DTYPES))}, got {value!r}"
                )
            values[key] = value
        return values

    def build(self, **kwargs: Any) -> Module:
        """The verified module for these parameters (strings are converted).

        Raises:
            Tx8labError: a bad or out-of-bounds parameter, or a tensor above
                :data:`MAX_TENSOR_BYTES` (module docstring, **Bounds**).
        """
        values = self.resolve(**kwargs)
        module = self.builder(**values)
        _check_tensor_bytes(self.name, module)
        return module


def _check_tensor_bytes(model: str, module: Module) -> None:
    """Refuse ``module`` when a tensor of its main function exceeds MAX_TENSOR_BYTES."""
    for op in module.walk():
        for value in op.results:
            t = value.type
            if not isinstance(t, TensorType):
                continue
            size = t.dense_bytes
            if size > MAX_TENSOR_BYTES:
                raise Tx8labError(
                    f"model {model!r}: {op.label} makes {t} ({size:,} B), above the zoo's "
                    f"limit of {MAX_TENSOR_BYTES:,} B per tensor; give smaller --model-arg "
                    "values (size, seq, batch, hidden...)"
                )


# ----------------------------------------------------------------------------- helpers


def _check(model: str, ok: bool, message: str) -> None:
    if not ok:
        raise Tx8labError(f"model {model!r}: {message}")


class _Net:
    """A Builder plus the compute dtype and the layer helpers the zoo models share."""

    def __init__(self, model: str, dtype: str) -> None:
        # module attributes need a dialect prefix for mlir-opt (like tx8.next_id)
        self.b = Builder(**{"tx8.model": model})
        self.dtype = dtype
        self._scalars: dict[tuple[float, str], Value] = {}

    # -- constants
    def scalar(self, value: float, dtype: str | None = None) -> Value:
        """A rank-0 dense constant, one per (value, dtype)."""
        dtype = dtype or self.dtype
        key = (float(value), dtype)
        if key not in self._scalars:
            self._scalars[key] = self.b.constant(np.array(value, dtype=np.float32), dtype)
        return self._scalars[key]

    def gamma(self, shape: tuple[int, ...], dtype: str | None = None) -> Value:
        """Norm scale: around 1."""
        return self.b.weight(shape, dtype or self.dtype, scale=0.1, offset=1.0)

    def beta(self, shape: tuple[int, ...], dtype: str | None = None) -> Value:
        """Norm shift or bias: small around 0."""
        return self.b.weight(shape, dtype or self.dtype, scale=0.02)

    # -- CNN layers
    def conv(
        self,
        x: Value,
        cout: int,
        kernel: int,
        stride: int = 1,
        group: int = 1,
        bias: bool = True,
        pad: int | None = None,
    ) -> Value:
        """Conv2d with an OHWI weight, symmetric ``kernel // 2`` padding by default."""
        cin = x.type.shape[3]
        p = kernel // 2 if pad is None else pad
        w = self.b.weight((cout, kernel, kernel, cin // group), self.dtype)
        operands = [x, w] + ([self.beta((cout,))] if bias else [])
        attrs: dict[str, Any] = {}
        if stride != 1:
            attrs["strides"] = (stride, stride)
        if p:
            attrs["pads"] = (p, p, p, p)
        if group != 1:
            attrs["group"] = group
        out: Value = self.b.op("Conv2d", *operands, **attrs)
        return out

    def batchnorm(self, x: Value) -> Value:
        """BatchNorm_Inference with seed 001's 1x1x1xC f32 parameters."""
        shape = (1,) * (x.type.rank - 1) + (x.type.shape[-1],)
        scale = self.gamma(shape, "f32")
        offset = self.beta(shape, "f32")
        mean = self.b.weight(shape, "f32", scale=0.1)
        var = self.b.weight(shape, "f32", scale=0.5, offset=1.0, distribution="uniform")
        out: Value = self.b.op("BatchNorm_Inference", x, scale, offset, mean, var)
        return out

    def conv_bn(
        self,
        x: Value,
        cout: int,
        kernel: int,
        stride: int = 1,
        group: int = 1,
        bn: bool = True,
        act: str | None = "Relu",
    ) -> Value:
        """Conv + BatchNorm (or folded bias) + activation (Relu, Relu6 or none)."""
        y = self.conv(x, cout, kernel, stride, group, bias=not bn)
        if bn:
            y = self.batchnorm(y)
        if act == "Relu":
            y = self.b.op("Relu", y)
        elif act == "Relu6":
            y = self.b.op("Clip", y, min=0.0, max=6.0)
        return y

    def classifier(self, x: Value, classes: int) -> Value:
        """GlobalAvgPool -> Reshape [N, C] -> Gemm (``trans_b`` weight [classes, C]) + bias."""
        n, c = x.type.shape[0], x.type.shape[3]
        pooled = self.b.op("GlobalAvgPool", x)
        flat = self.b.op("Reshape", pooled, shape=(n, c))
        return self.fc(flat, classes)

    def fc(self, x: Value, n: int) -> Value:
        """A 2-D Linear layer as Gemm: weight [n, K] with ``trans_b``, bias [n]."""
        w = self.b.weight((n, x.type.shape[1]), self.dtype)
        out: Value = self.b.op("Gemm", x, w, self.beta((n,)), trans_b=True)
        return out

    # -- transformer layers
    def linear(self, x: Value, n: int, bias: bool = True) -> Value:
        """``x @ W (+ b)`` with W [K, n] (MatMul broadcasts over the leading dims)."""
        k = x.type.shape[-1]
        w = self.b.weight((k, n), self.dtype, scale=1.0 / math.sqrt(k))
        y: Value = self.b.op("MatMul", x, w)
        if bias:
            y = self.b.op("Add", y, self.beta((n,)))
        return y

    def layernorm(self, x: Value, epsilon: float) -> Value:
        """LayerNorm over the last dim with gamma/beta of the compute dtype."""
        d = x.type.shape[-1]
        out: Value = self.b.op("LayerNorm", x, self.gamma((d,)), self.beta((d,)), epsilon=epsilon)
        return out

    def heads(self, x: Value, heads: int, transpose_k: bool = False) -> Value:
        """[B, S, H*D] -> [B, H, S, D] (or [B, H, D, S] for keys)."""
        b, s, hidden = x.type.shape
        y = self.b.op("Reshape", x, shape=(b, s, heads, hidden // heads))
        out: Value = self.b.op("Transpose", y, perm=(0, 2, 3, 1) if transpose_k else (0, 2, 1, 3))
        return out

    def merge_heads(self, x: Value) -> Value:
        """[B, H, S, D] -> [B, S, H*D]."""
        b, h, s, d = x.type.shape
        y = self.b.op("Transpose", x, perm=(0, 2, 1, 3))
        out: Value = self.b.op("Reshape", y, shape=(b, s, h * d))
        return out

    def attention(self, q: Value, kt: Value, v: Value, mask: Value | None = None) -> Value:
        """softmax(q @ kT * 1/sqrt(D) + mask) @ v on [B, H, S, D] values; [B, H, S, D]."""
        d = q.type.shape[-1]
        scores = self.b.op("MatMul", q, kt)
        scores = self.b.op("Mul", scores, self.scalar(1.0 / math.sqrt(d)))
        if mask is not None:
            scores = self.b.op("Add", scores, mask)
        probs = self.b.op("Softmax", scores, axis=-1)
        out: Value = self.b.op("MatMul", probs, v)
        return out

    def finish(self, *outputs: Value) -> Module:
        self.b.output(*outputs)
        return self.b.finish()


# ----------------------------------------------------------------------------- CNNs


def resnet50(batch: int, size: int, classes: int, dtype: str, batchnorm: bool) -> Module:
    """ResNet-50 v1.5 (torchvision): stem, 3-4-6-3 bottlenecks, 53 convs, GAP, FC."""
    net = _Net("resnet50", dtype)
    x = net.b.input((batch, size, size, 3), dtype)
    y = net.conv_bn(x, 64, 7, stride=2, bn=batchnorm)
    y = net.b.op("MaxPool2d", y, kernel=(3, 3), strides=(2, 2), pads=(1, 1, 1, 1))
    cin = 64
    for stage, (blocks, width) in enumerate(zip((3, 4, 6, 3), (64, 128, 256, 512), strict=True)):
        for block in range(blocks):
            stride = 2 if stage > 0 and block == 0 else 1
            out = net.conv_bn(y, width, 1, bn=batchnorm)
            out = net.conv_bn(out, width, 3, stride=stride, bn=batchnorm)
            out = net.conv_bn(out, width * 4, 1, bn=batchnorm, act=None)
            shortcut = y
            if block == 0:
                shortcut = net.conv_bn(y, width * 4, 1, stride=stride, bn=batchnorm, act=None)
            y = net.b.op("Relu", net.b.op("Add", out, shortcut))
            cin = width * 4
    assert cin == 2048
    return net.finish(net.classifier(y, classes))


#: MobileNetV2 inverted-residual settings (expansion t, channels c, repeats n, stride s).
_MBV2 = (
    (1, 16, 1, 1),
    (6, 24, 2, 2),
    (6, 32, 3, 2),
    (6, 64, 4, 2),
    (6, 96, 3, 1),
    (6, 160, 3, 2),
    (6, 320, 1, 1),
)


def mobilenet_v2(batch: int, size: int, classes: int, dtype: str, batchnorm: bool) -> Module:
    """MobileNetV2 (torchvision, width 1.0): 17 inverted residuals, 52 convs, Relu6 = Clip."""
    net = _Net("mobilenet_v2", dtype)
    x = net.b.input((batch, size, size, 3), dtype)
    y = net.conv_bn(x, 32, 3, stride=2, bn=batchnorm, act="Relu6")
    cin = 32
    for t, c, n, s in _MBV2:
        for i in range(n):
            stride = s if i == 0 else 1
            hidden = cin * t
            out = y
            if t != 1:
                out = net.conv_bn(out, hidden, 1, bn=batchnorm, act="Relu6")
            # depthwise 3x3: one group per channel
            out = net.conv_bn(
                out, hidden, 3, stride=stride, group=hidden, bn=batchnorm, act="Relu6"
            )
            out = net.conv_bn(out, c, 1, bn=batchnorm, act=None)
            y = net.b.op("Add", y, out) if stride == 1 and cin == c else out
            cin = c
    y = net.conv_bn(y, 1280, 1, bn=batchnorm, act="Relu6")
    return net.finish(net.classifier(y, classes))


def tiny_cnn(batch: int, size: int, channels: int, classes: int, dtype: str) -> Module:
    """Conv-BN-Relu, MaxPool, Conv+bias-Relu, GAP, Gemm, Softmax on an 8x8x3 image."""
    _check("tiny_cnn", size >= 2, f"size must be >= 2 (a 2x2 max pool follows), got {size}")
    net = _Net("tiny_cnn", dtype)
    x = net.b.input((batch, size, size, 3), dtype)
    y = net.conv_bn(x, channels, 3, bn=True)
    y = net.b.op("MaxPool2d", y, kernel=(2, 2), strides=(2, 2))
    y = net.conv_bn(y, channels * 2, 3, bn=False)
    logits = net.classifier(y, classes)
    return net.finish(net.b.op("Softmax", logits, axis=-1))


# ----------------------------------------------------------------------------- transformers


def bert_base(
    batch: int, seq: int, layers: int, hidden: int, heads: int, ffn: int, vocab: int, dtype: str
) -> Module:
    """BERT-base encoder (HuggingFace BertModel): embeddings, post-norm layers, pooler.

    Inputs: ``input_ids`` i32 [B, S] and ``attention_mask`` i32 [B, S] (1 = attend); the
    additive mask ``(1 - m) * -10000`` is computed in-graph as the ONNX export does.
    Token types are all 0 (a row of the type table). Outputs: the sequence output
    [B, S, hidden] and the pooled output [B, hidden].
    """
    _check("bert_base", hidden % heads == 0, f"hidden {hidden} is not divisible by heads {heads}")
    _check("bert_base", seq <= 512, f"seq {seq} exceeds the 512 position embeddings")
    net = _Net("bert_base", dtype)
    b = net.b
    ids = b.input((batch, seq), "i32")
    mask_in = b.input((batch, seq), "i32")
    words = b.op("Gather", b.weight((vocab, hidden), dtype, scale=0.02), ids, axis=0)
    positions = b.op(
        "Slice", b.weight((512, hidden), dtype, scale=0.02), starts=(0, 0), ends=(seq, hidden)
    )
    types = b.op("Slice", b.weight((2, hidden), dtype, scale=0.02), starts=(0, 0), ends=(1, hidden))
    y = b.op("Add", b.op("Add", words, positions), types)
    y = net.layernorm(y, 1e-12)
    mask = b.op("Convert", b.op("Reshape", mask_in, shape=(batch, 1, 1, seq)), dtype=dtype)
    mask = b.op("Mul", b.op("Sub", net.scalar(1.0), mask), net.scalar(-10000.0))
    for _ in range(layers):
        q = net.heads(net.linear(y, hidden), heads)
        kt = net.heads(net.linear(y, hidden), heads, transpose_k=True)
        v = net.heads(net.linear(y, hidden), heads)
        ctx = net.merge_heads(net.attention(q, kt, v, mask))
        y = net.layernorm(b.op("Add", net.linear(ctx, hidden), y), 1e-12)
        inner = b.op("Gelu", net.linear(y, ffn))
        y = net.layernorm(b.op("Add", net.linear(inner, hidden), y), 1e-12)
    first = b.op("Slice", y, starts=(0, 0, 0), ends=(batch, 1, hidden))
    pooled = b.op("Tanh", net.fc(b.op("Reshape", first, shape=(batch, hidden)), hidden))
    return net.finish(y, pooled)


def _causal_mask(net: _Net, seq: int) -> Value:
    """[S, S] additive mask (0 on and below the diagonal, dtype minimum above), in-graph."""
    b = net.b
    pos = np.arange(seq, dtype=np.int32)
    rows = b.constant(pos.reshape(seq, 1), "i32")
    cols = b.constant(pos.reshape(1, seq), "i32")
    future = b.op("Compare", cols, rows, mode="gt")
    lowest = {"f16": float(np.finfo(np.float16).min), "bf16": -3.3895313892515355e38}.get(
        net.dtype, float(np.finfo(np.float32).min)
    )
    mask: Value = b.op("Where", future, net.scalar(lowest), net.scalar(0.0))
    return mask


def _rotary_tables(net: _Net, seq: int, head_dim: int, theta: float) -> tuple[Value, Value]:
    """cos/sin [S, D]: dense half tables [S, D/2] (no Sin/Cos op), doubled by Concatenate."""
    inv_freq = 1.0 / theta ** (np.arange(0, head_dim, 2, dtype=np.float64) / head_dim)
    freqs = np.outer(np.arange(seq, dtype=np.float64), inv_freq)
    out = []
    for fn in (np.cos, np.sin):
        half = net.b.constant(fn(freqs).astype(np.float32), net.dtype)
        out.append(net.b.op("Concatenate", half, half, axis=-1))
    return out[0], out[1]


def _rotate(net: _Net, x: Value, cos: Value, sin: Value) -> Value:
    """HuggingFace ``apply_rotary_pos_emb``: x * cos + rotate_half(x) * sin on [B, H, S, D]."""
    b = net.b
    shape = x.type.shape
    half = shape[-1] // 2
    zeros = (0,) * (len(shape) - 1)
    first = b.op("Slice", x, starts=(*zeros, 0), ends=(*shape[:-1], half))
    second = b.op("Slice", x, starts=(*zeros, half), ends=shape)
    rotated = b.op("Concatenate", b.op("Neg", second), first, axis=-1)
    out: Value = b.op("Add", b.op("Mul", x, cos), b.op("Mul", rotated, sin))
    return out


def llama_decoder(
    layers: int,
    hidden: int,
    heads: int,
    ffn: int,
    vocab: int,
    seq: int,
    batch: int,
    lm_head: bool,
    dtype: str,
) -> Module:
    """LLaMA decoder (HuggingFace LlamaForCausalLM, prefill): LLaMA-7B sizes by default.

    Input ``input_ids`` i32 [B, S] -> Embedding -> ``layers`` x (RMSNorm, attention with
    rotary embedding and a causal mask, softmax in f32, residual; RMSNorm, SiLU-gated MLP,
    residual). With ``lm_head``: final RMSNorm, [hidden, vocab] projection, f32 logits
    [B, S, vocab]; without: the last layer's hidden states [B, S, hidden].
    """
    _check(
        "llama_decoder", hidden % heads == 0, f"hidden {hidden} is not divisible by heads {heads}"
    )
    head_dim = hidden // heads
    _check("llama_decoder", head_dim % 2 == 0, f"head_dim {head_dim} must be even (rotary)")
    net = _Net("llama_decoder", dtype)
    b = net.b
    ids = b.input((batch, seq), "i32")
    y = b.op("Embedding", b.weight((vocab, hidden), dtype, scale=0.02), ids)
    cos, sin = _rotary_tables(net, seq, head_dim, 10000.0)
    mask = _causal_mask(net, seq)
    for _ in range(layers):
        h = b.op("RMSNorm", y, net.gamma((hidden,)), epsilon=1e-6)
        q = _rotate(net, net.heads(net.linear(h, hidden, bias=False), heads), cos, sin)
        k = _rotate(net, net.heads(net.linear(h, hidden, bias=False), heads), cos, sin)
        v = net.heads(net.linear(h, hidden, bias=False), heads)
        kt = b.op("Transpose", k, perm=(0, 1, 3, 2))
        scores = b.op("Mul", b.op("MatMul", q, kt), net.scalar(1.0 / math.sqrt(head_dim)))
        scores = b.op("Convert", b.op("Add", scores, mask), dtype="f32")
        probs = b.op("Convert", b.op("Softmax", scores, axis=-1), dtype=dtype)
        ctx = net.merge_heads(b.op("MatMul", probs, v))
        y = b.op("Add", y, net.linear(ctx, hidden, bias=False))
        h = b.op("RMSNorm", y, net.gamma((hidden,)), epsilon=1e-6)
        gate = b.op("Silu", net.linear(h, ffn, bias=False))
        up = net.linear(h, ffn, bias=False)
        y = b.op("Add", y, net.linear(b.op("Mul", gate, up), hidden, bias=False))
    if lm_head:
        h = b.op("RMSNorm", y, net.gamma((hidden,)), epsilon=1e-6)
        y = b.op("Convert", net.linear(h, vocab, bias=False), dtype="f32")
    return net.finish(y)


def vit_tiny(
    batch: int,
    size: int,
    patch: int,
    layers: int,
    hidden: int,
    heads: int,
    mlp: int,
    classes: int,
    dtype: str,
) -> Module:
    """ViT-Tiny/16 (timm vit_tiny_patch16_224): patch conv, CLS token, pre-norm blocks.

    The fused qkv projection is reshaped to [B, N, 3, H, D], transposed to [3, B, H, N, D]
    and split in three, as timm does.
    """
    _check("vit_tiny", size % patch == 0, f"size {size} is not a multiple of patch {patch}")
    _check("vit_tiny", hidden % heads == 0, f"hidden {hidden} is not divisible by heads {heads}")
    net = _Net("vit_tiny", dtype)
    b = net.b
    grid = size // patch
    tokens = grid * grid + 1
    head_dim = hidden // heads
    x = b.input((batch, size, size, 3), dtype)
    y = net.conv(x, hidden, patch, stride=patch, pad=0)
    y = b.op("Reshape", y, shape=(batch, grid * grid, hidden))
    cls = b.op("Broadcast", b.weight((1, 1, hidden), dtype, scale=0.02), shape=(batch, 1, hidden))
    y = b.op("Concatenate", cls, y, axis=1)
    y = b.op("Add", y, b.weight((1, tokens, hidden), dtype, scale=0.02))
    for _ in range(layers):
        h = net.layernorm(y, 1e-6)
        qkv = b.op("Reshape", net.linear(h, 3 * hidden), shape=(batch, tokens, 3, heads, head_dim))
        qkv = b.op("Transpose", qkv, perm=(2, 0, 3, 1, 4))
        q, k, v = (
            b.op("Reshape", part, shape=(batch, heads, tokens, head_dim))
            for part in b.op("Split", qkv, axis=0, sizes=(1, 1, 1))
        )
        kt = b.op("Transpose", k, perm=(0, 1, 3, 2))
        ctx = net.merge_heads(net.attention(q, kt, v))
        y = b.op("Add", y, net.linear(ctx, hidden))
        h = net.layernorm(y, 1e-6)
        y = b.op("Add", y, net.linear(b.op("Gelu", net.linear(h, mlp)), hidden))
    y = net.layernorm(y, 1e-6)
    first = b.op("Slice", y, starts=(0, 0, 0), ends=(batch, 1, hidden))
    return net.finish(net.fc(b.op("Reshape", first, shape=(batch, hidden)), classes))


def tiny_transformer_block(
    batch: int, seq: int, hidden: int, heads: int, ffn: int, dtype: str
) -> Module:
    """One pre-norm transformer block on [B, S, hidden]: LN, 2-head attention, LN, GELU FFN."""
    _check(
        "tiny_transformer_block",
        hidden % heads == 0,
        f"hidden {hidden} is not divisible by heads {heads}",
    )
    net = _Net("tiny_transformer_block", dtype)
    b = net.b
    x = b.input((batch, seq, hidden), dtype)
    h = net.layernorm(x, 1e-5)
    q = net.heads(net.linear(h, hidden), heads)
    kt = net.heads(net.linear(h, hidden), heads, transpose_k=True)
    v = net.heads(net.linear(h, hidden), heads)
    y = b.op("Add", x, net.linear(net.merge_heads(net.attention(q, kt, v)), hidden))
    h = net.layernorm(y, 1e-5)
    y = b.op("Add", y, net.linear(b.op("Gelu", net.linear(h, ffn)), hidden))
    return net.finish(y)


# ----------------------------------------------------------------------------- seed demos


def layout_align_demo(dtype: str) -> Module:
    """Seed 000's LayoutAlignToNPU cases in one small graph (f16, NHWC).

    Each op exercises one rule of seed 000 (colours per the seed: ALIGN / NALIGN / BOTH):

    - ``x`` [1,16,16,30]: function input, NALIGN; C = 30 <= 32 (seed 001 Cx table, first
      row) -> ``Conv2d`` (ALIGN only) needs a ChannelNorm(true) on its input.
    - ``Relu``: single-input BOTH, follows its parent (ALIGN).
    - ``Mul`` by a [64] constant: a V_VS (broadcast) op, follows its complete input; the
      rank-1 constant is what LayoutAlignOpt's ConstChannelNormErase removes.
    - ``Slice`` C 32:64: start > 0 and end % 64 == 0 -> NALIGN (ChannelNorm(false) before);
      ``Slice`` C 0:32 -> ALIGN.
    - ``Add`` of the two slices: multi-input BOTH with parents of different colours takes
      the topologically earliest parent (the NALIGN slice) -> ChannelNorm on the other edge.
    - ``Reshape`` to rank 3: odd-rank output -> NALIGN; ``Reshape`` to rank 2, then ``Gemm``
      (ALIGN) and ``Softmax`` (BOTH) -> output 0 (NALIGN) needs a ChannelNorm(false).
    - ``MaxPool2d``, a 1x1 ``Conv2d`` to 30 channels, ``Concatenate`` (64 + 30 = 94
      channels: C > 32 with a C0 = 30 remainder), ``Transpose`` — all ALIGN — then a rank-3
      ``Reshape`` (NALIGN) as output 1.
    """
    net = _Net("layout_align_demo", dtype)
    b = net.b
    x = b.input((1, 16, 16, 30), dtype)
    r1 = b.op("Relu", net.conv(x, 64, 3))
    m1 = b.op("Mul", r1, net.gamma((64,)))
    hi = b.op("Slice", m1, starts=(0, 0, 0, 32), ends=(1, 16, 16, 64))
    lo = b.op("Slice", m1, starts=(0, 0, 0, 0), ends=(1, 16, 16, 32))
    a1 = b.op("Add", hi, lo)
    t1 = b.op("Reshape", a1, shape=(1, 256, 32))
    g1 = b.op("Reshape", t1, shape=(256, 32))
    wg = b.weight((32, 48), dtype, scale=1.0 / math.sqrt(32))
    out0 = b.op("Softmax", b.op("Gemm", g1, wg), axis=-1)
    p1 = b.op("MaxPool2d", r1, kernel=(2, 2), strides=(2, 2))
    c2 = net.conv(p1, 30, 1, bias=False)
    cat = b.op("Concatenate", p1, c2, axis=3)
    tr = b.op("Transpose", cat, perm=(0, 3, 1, 2))
    out1 = b.op("Reshape", tr, shape=(1, 94, 64))
    return net.finish(out0, out1)


def batchnorm_demo(batch: int, height: int, width: int, channels: int, dtype: str) -> Module:
    """Seed 001's BatchNorm_Inference example: x [4,112,2,C] with 1x1x1xC f32 parameters.

    The seed draws C = 30 (<= 32: NHWC with C aligned to 4/8/16/32) and C = 129 (> 32:
    Cx*64 + C0 split); ``channels`` picks the case, 129 by default.
    """
    net = _Net("batchnorm_demo", dtype)
    x = net.b.input((batch, height, width, channels), dtype)
    return net.finish(net.batchnorm(x))


# ----------------------------------------------------------------------------- registry

_CNN_PARAMS: dict[str, ParamSpec] = {
    "batch": (1, int, "batch size N"),
    "size": (224, int, "input height = width (NHWC, 3 channels)"),
    "classes": (1000, int, "classifier outputs"),
    "dtype": ("f16", str, "compute element type (f16, bf16, f32, tf32)"),
    "batchnorm": (True, bool, "keep BatchNorm_Inference after convs; false folds it into bias"),
}

MODELS: dict[str, ZooModel] = {
    m.name: m
    for m in (
        ZooModel(
            "resnet50",
            "ResNet-50 v1.5: 53 convs in 3-4-6-3 bottlenecks, 224x224 NHWC",
            resnet50,
            dict(_CNN_PARAMS),
        ),
        ZooModel(
            "mobilenet_v2",
            "MobileNetV2: inverted residuals, depthwise convs, Relu6",
            mobilenet_v2,
            dict(_CNN_PARAMS),
        ),
        ZooModel(
            "bert_base",
            "BERT-base encoder: embeddings, 12 post-norm layers, pooler",
            bert_base,
            {
                "batch": (1, int, "batch size"),
                "seq": (128, int, "sequence length (<= 512)"),
                "layers": (12, int, "encoder layers"),
                "hidden": (768, int, "hidden size"),
                "heads": (12, int, "attention heads"),
                "ffn": (3072, int, "feed-forward size"),
                "vocab": (30522, int, "vocabulary size"),
                "dtype": ("f16", str, "compute element type"),
            },
        ),
        ZooModel(
            "llama_decoder",
            "LLaMA decoder (7B sizes): RMSNorm, rotary attention, SiLU-gated MLP, bf16",
            llama_decoder,
            {
                "layers": (1, int, "decoder layers (LLaMA-7B has 32)"),
                "hidden": (4096, int, "hidden size"),
                "heads": (32, int, "attention heads"),
                "ffn": (11008, int, "MLP intermediate size"),
                "vocab": (32000, int, "vocabulary size"),
                "seq": (128, int, "sequence length (prefill)"),
                "batch": (1, int, "batch size"),
                "lm_head": (True, bool, "final RMSNorm + vocabulary projection (f32 logits)"),
                "dtype": ("bf16", str, "compute element type"),
            },
        ),
        ZooModel(
            "vit_tiny",
            "ViT-Tiny/16: 16x16 patch conv, 12 layers, hidden 192, 3 heads",
            vit_tiny,
            {
                "batch": (1, int, "batch size"),
                "size": (224, int, "image height = width"),
                "patch": (16, int, "patch size"),
                "layers": (12, int, "encoder layers"),
                "hidden": (192, int, "hidden size"),
                "heads": (3, int, "attention heads"),
                "mlp": (768, int, "MLP size"),
                "classes": (1000, int, "classifier outputs"),
                "dtype": ("f16", str, "compute element type"),
            },
        ),
        ZooModel(
            "layout_align_demo",
            "seed 000 LayoutAlignToNPU demo: mixed ranks/channels needing ChannelNorms",
            layout_align_demo,
            {"dtype": ("f16", str, "element type")},
        ),
        ZooModel(
            "batchnorm_demo",
            "seed 001 BatchNorm_Inference example: 4x112x2x129 NHWC",
            batchnorm_demo,
            {
                "batch": (4, int, "N"),
                "height": (112, int, "H"),
                "width": (2, int, "W"),
                "channels": (129, int, "C (seed: 30 for C <= 32, 129 for C > 32)"),
                "dtype": ("f16", str, "input element type (parameters stay f32)"),
            },
        ),
        ZooModel(
            "tiny_cnn",
            "tiny CNN: 8x8x3 -> conv/BN/relu/pool/conv -> 10 classes",
            tiny_cnn,
            {
                "batch": (1, int, "batch size"),
                "size": (8, int, "input height = width"),
                "channels": (8, int, "first conv channels (the second has twice)"),
                "classes": (10, int, "classifier outputs"),
                "dtype": ("f16", str, "compute element type"),
            },
        ),
        ZooModel(
            "tiny_transformer_block",
            "one pre-norm transformer block: [1, 8, 32], 2 heads, FFN 64",
            tiny_transformer_block,
            {
                "batch": (1, int, "batch size"),
                "seq": (8, int, "sequence length"),
                "hidden": (32, int, "hidden size"),
                "heads": (2, int, "attention heads"),
                "ffn": (64, int, "feed-forward size"),
                "dtype": ("f16", str, "compute element type"),
            },
        ),
    )
}


def build(name: str, /, **kwargs: Any) -> Module:
    """Build zoo model ``name``; ``kwargs`` may be strings (``--model-arg layers=32``).

    Examples:
        >>> build("tiny_cnn").main.outputs[0].type
        TensorType(shape=(1, 10), dtype='f16')
        >>> build("llama_decoder", layers="2", hidden="64", heads="4", ffn="128",
        ...       vocab="100", seq="8").main.outputs[0].type.shape
        (1, 8, 100)
    """
    model = MODELS.get(name)
    if model is None:
        raise Tx8labError(f"unknown zoo model {name!r}; known models: {', '.join(MODELS)}")
    return model.build(**kwargs)


__all__ = ["MAX_LAYERS", "MAX_PARAM", "MAX_TENSOR_BYTES", "MODELS", "ZooModel", "build"]
