"""The model zoo: every model builds, verifies, round-trips and has the right shapes."""

from __future__ import annotations

import math
import subprocess
import time
from collections import Counter
from typing import Any

import numpy as np
import pytest

from tx8lab.core.attrs import AlignMode, RandomInit
from tx8lab.core.interpret import interpret, random_inputs
from tx8lab.core.ir import Module, Op
from tx8lab.core.ops import OPS
from tx8lab.core.ops.memory import constant_data
from tx8lab.core.text import parse_module, print_module, renumber
from tx8lab.core.verify import verify_problems
from tx8lab.core.zoo import MODELS, ZooModel, build
from tx8lab.errors import Tx8labError

SMALL = ("tiny_cnn", "tiny_transformer_block", "batchnorm_demo", "layout_align_demo")

#: Tiny LLaMA sizes for structural tests that need no 7B-sized shapes.
LLAMA_SMALL: dict[str, Any] = {"hidden": 64, "heads": 4, "ffn": 128, "vocab": 100, "seq": 8}


@pytest.fixture(scope="module")
def zoo() -> dict[str, Module]:
    """Every zoo model with its default parameters, built once."""
    return {name: build(name) for name in MODELS}


def kinds(module: Module) -> Counter[str]:
    return Counter(op.name for op in module.walk() if op.id >= 0)


def ops_of(module: Module, name: str) -> list[Op]:
    return [op for op in module.main.ops if op.name == name]


def out_shapes(module: Module) -> list[tuple[int, ...]]:
    return [v.type.shape for v in module.main.outputs]


# ----------------------------------------------------------------------------- all models


def test_registry_entries() -> None:
    assert set(MODELS) >= {
        "resnet50",
        "mobilenet_v2",
        "bert_base",
        "llama_decoder",
        "vit_tiny",
        "layout_align_demo",
        "batchnorm_demo",
        "tiny_cnn",
        "tiny_transformer_block",
    }
    for name, model in MODELS.items():
        assert isinstance(model, ZooModel)
        assert model.name == name
        assert model.summary
        assert "\n" not in model.summary
        for default, kind, help_text in model.params.values():
            assert isinstance(default, kind)
            assert help_text


@pytest.mark.parametrize("name", list(MODELS))
def test_builds_verified_and_round_trips(zoo: dict[str, Module], name: str) -> None:
    module = zoo[name]
    assert verify_problems(module) == []
    assert module.attrs["tx8.model"] == name
    text = print_module(module)
    assert print_module(parse_module(text, source=name)) == text
    # deterministic: fixed seeds give the same text again
    assert print_module(build(name)) == text


@pytest.mark.parametrize("name", list(MODELS))
def test_weights_are_seeds_not_bytes(zoo: dict[str, Module], name: str) -> None:
    """Big constants are RandomInit; dense data stays small (scalars, positions, rotary)."""
    for op in ops_of(zoo[name], "Constant"):
        value = op.attrs["value"]
        if not isinstance(value, RandomInit):
            assert value.size <= 128 * 64, (name, op.label, value.shape)


@pytest.mark.parametrize("name", SMALL)
def test_small_models_interpret_to_finite_outputs(zoo: dict[str, Module], name: str) -> None:
    module = zoo[name]
    outputs = interpret(module, random_inputs(module, seed=1))
    assert [o.shape for o in outputs] == out_shapes(module)
    for out in outputs:
        assert np.isfinite(out.astype(np.float32)).all()
        assert np.abs(out.astype(np.float32)).max() > 0


# ----------------------------------------------------------------------------- CNNs


def test_resnet50_structure(zoo: dict[str, Module]) -> None:
    module = zoo["resnet50"]
    count = kinds(module)
    assert count["Conv2d"] == 53
    assert count["BatchNorm_Inference"] == 53
    assert count["Relu"] == 49  # stem + 2 per bottleneck + 1 after each of the 16 adds
    assert count["Add"] == 16
    assert count["MaxPool2d"] == 1
    assert count["GlobalAvgPool"] == 1
    assert module.main.args[0].type.shape == (1, 224, 224, 3)
    assert module.main.outputs[0].type.shape == (1, 1000)
    assert module.main.outputs[0].type.dtype == "f16"
    convs = ops_of(module, "Conv2d")
    assert convs[0].operands[1].type.shape == (64, 7, 7, 3)  # OHWI
    assert convs[0].results[0].type.shape == (1, 112, 112, 64)
    assert ops_of(module, "GlobalAvgPool")[0].operands[0].type.shape == (1, 7, 7, 2048)
    for bn in ops_of(module, "BatchNorm_Inference"):
        c = bn.operands[0].type.shape[-1]
        assert all(v.type.shape == (1, 1, 1, c) and v.type.dtype == "f32" for v in bn.operands[1:])


def test_resnet50_parameters() -> None:
    folded = build("resnet50", batch="2", dtype="bf16", batchnorm="false")
    count = kinds(folded)
    assert count["BatchNorm_Inference"] == 0
    assert count["Conv2d"] == 53
    assert all(len(op.operands) == 3 for op in ops_of(folded, "Conv2d"))  # folded bias
    assert folded.main.outputs[0].type.shape == (2, 1000)
    assert folded.main.outputs[0].type.dtype == "bf16"


def test_mobilenet_v2_structure(zoo: dict[str, Module]) -> None:
    module = zoo["mobilenet_v2"]
    count = kinds(module)
    assert count["Conv2d"] == 52
    depthwise = [op for op in ops_of(module, "Conv2d") if op.attrs.get("group", 1) > 1]
    assert len(depthwise) == 17
    for op in depthwise:
        assert op.attrs["group"] == op.operands[0].type.shape[-1]
        assert op.operands[1].type.shape[1:] == (3, 3, 1)
    clips = ops_of(module, "Clip")
    assert len(clips) == 35
    assert all((op.attrs["min"], op.attrs["max"]) == (0.0, 6.0) for op in clips)
    assert count["Add"] == 10  # residual connections
    assert ops_of(module, "GlobalAvgPool")[0].operands[0].type.shape == (1, 7, 7, 1280)
    assert out_shapes(module) == [(1, 1000)]


def test_tiny_cnn_shapes(zoo: dict[str, Module]) -> None:
    module = zoo["tiny_cnn"]
    assert module.main.args[0].type.shape == (1, 8, 8, 3)
    assert ops_of(module, "MaxPool2d")[0].results[0].type.shape == (1, 4, 4, 8)
    assert out_shapes(module) == [(1, 10)]
    assert module.num_ops < 25
    probs = interpret(module, random_inputs(module))[0].astype(np.float64)
    assert probs.sum() == pytest.approx(1.0, abs=1e-2)


# ----------------------------------------------------------------------------- transformers


def test_bert_base_structure(zoo: dict[str, Module]) -> None:
    module = zoo["bert_base"]
    count = kinds(module)
    # input_ids and attention_mask
    assert [(a.type.shape, a.type.dtype) for a in module.main.args] == [((1, 128), "i32")] * 2
    assert count["Gather"] == 1
    assert count["Softmax"] == 12
    assert count["Gelu"] == 12
    assert count["LayerNorm"] == 2 * 12 + 1
    assert count["MatMul"] == 12 * 8  # q, k, v, scores, context, out, ffn1, ffn2
    assert out_shapes(module) == [(1, 128, 768), (1, 768)]
    scores = ops_of(module, "Softmax")[0].operands[0].type
    assert scores.shape == (1, 12, 128, 128)
    assert scores.dtype == "f16"


def test_bert_layers_scale_linearly() -> None:
    sizes = {"hidden": 64, "heads": 4, "ffn": 128, "vocab": 100, "seq": 8}
    n = [build("bert_base", layers=k, **sizes).num_ops for k in (1, 2, 3)]
    assert n[2] - n[1] == n[1] - n[0] > 0


def test_llama_decoder_defaults_are_llama_7b(zoo: dict[str, Module]) -> None:
    module = zoo["llama_decoder"]
    weights = {
        op.results[0].type.shape
        for op in ops_of(module, "Constant")
        if isinstance(op.attrs["value"], RandomInit)
    }
    assert {(32000, 4096), (4096, 4096), (4096, 11008), (11008, 4096), (4096, 32000)} <= weights
    count = kinds(module)
    assert count["RMSNorm"] == 3
    assert count["Silu"] == 1
    assert count["Embedding"] == 1
    assert count["Neg"] == 2  # rotate_half on q and k
    assert out_shapes(module) == [(1, 128, 32000)]
    assert module.main.outputs[0].type.dtype == "f32"
    assert all(op.results[0].type.dtype == "bf16" for op in ops_of(module, "MatMul"))
    softmax = ops_of(module, "Softmax")[0]
    assert softmax.results[0].type == softmax.operands[0].type
    assert softmax.results[0].type.shape == (1, 32, 128, 128)
    assert softmax.results[0].type.dtype == "f32"


def test_llama_ops_scale_linearly_and_32_layers_build_fast() -> None:
    n = [build("llama_decoder", layers=k).num_ops for k in (1, 2, 3)]
    per_layer = n[1] - n[0]
    assert n[2] - n[1] == per_layer > 0
    start = time.perf_counter()
    module = build("llama_decoder", layers=32)
    elapsed = time.perf_counter() - start
    assert module.num_ops == n[0] + 31 * per_layer
    assert kinds(module)["RMSNorm"] == 2 * 32 + 1
    assert elapsed < 2.0, f"llama_decoder layers=32 took {elapsed:.2f} s"


def test_llama_without_lm_head() -> None:
    module = build("llama_decoder", lm_head=False, **LLAMA_SMALL)
    assert out_shapes(module) == [(1, 8, 64)]
    assert module.main.outputs[0].type.dtype == "bf16"
    assert kinds(module)["RMSNorm"] == 2


def test_llama_small_is_causal() -> None:
    """Changing the last token must not change earlier positions' logits."""
    module = build("llama_decoder", layers=2, dtype="f32", **LLAMA_SMALL)
    ids = random_inputs(module, seed=3)[0]
    changed = ids.copy()
    changed[0, -1] = (changed[0, -1] + 1) % 8
    before, after = interpret(module, [ids])[0], interpret(module, [changed])[0]
    assert np.isfinite(before).all()
    np.testing.assert_allclose(before[:, :-1], after[:, :-1], rtol=1e-5, atol=1e-5)
    assert not np.allclose(before[:, -1], after[:, -1])


def test_vit_tiny_structure(zoo: dict[str, Module]) -> None:
    module = zoo["vit_tiny"]
    count = kinds(module)
    patch = ops_of(module, "Conv2d")
    assert len(patch) == 1
    assert patch[0].operands[1].type.shape == (192, 16, 16, 3)
    assert patch[0].attrs["strides"] == (16, 16)
    assert patch[0].results[0].type.shape == (1, 14, 14, 192)
    assert count["Softmax"] == 12
    assert count["LayerNorm"] == 25
    assert count["Split"] == 12
    assert ops_of(module, "Softmax")[0].results[0].type.shape == (1, 3, 197, 197)
    assert out_shapes(module) == [(1, 1000)]


def _tiny_block_reference(module: Module, x: np.ndarray) -> np.ndarray:
    """Reference pre-norm transformer block using the module's constants in creation order."""
    consts = [constant_data(op).astype(np.float64) for op in ops_of(module, "Constant")]
    ln1_g, ln1_b, wq, bq, wk, bk, wv, bv, scale, wo, bo, ln2_g, ln2_b, w1, b1, w2, b2 = consts
    heads = 2

    def ln(t: np.ndarray, g: np.ndarray, b: np.ndarray) -> np.ndarray:
        mu = t.mean(-1, keepdims=True)
        out: np.ndarray = (t - mu) / np.sqrt(((t - mu) ** 2).mean(-1, keepdims=True) + 1e-5)
        return np.asarray(out * g + b, dtype=np.float64)

    def split(t: np.ndarray) -> np.ndarray:
        b, s, d = t.shape
        return t.reshape(b, s, heads, d // heads).transpose(0, 2, 1, 3)

    h = ln(x, ln1_g, ln1_b)
    q, k, v = split(h @ wq + bq), split(h @ wk + bk), split(h @ wv + bv)
    assert float(scale) == pytest.approx(1 / math.sqrt(q.shape[-1]))
    s = q @ k.transpose(0, 1, 3, 2) * scale
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    ctx = (p @ v).transpose(0, 2, 1, 3).reshape(x.shape)
    y = x + ctx @ wo + bo
    h = ln(y, ln2_g, ln2_b)
    a = h @ w1 + b1
    gelu = 0.5 * a * (1 + np.vectorize(math.erf)(a / math.sqrt(2)))
    out: np.ndarray = y + gelu @ w2 + b2
    return out


def test_tiny_transformer_block_matches_numpy() -> None:
    module = build("tiny_transformer_block", dtype="f32")
    assert out_shapes(module) == [(1, 8, 32)]
    x = random_inputs(module, seed=2)[0]
    got = interpret(module, [x])[0]
    np.testing.assert_allclose(
        got, _tiny_block_reference(module, x.astype(np.float64)), rtol=1e-4, atol=1e-4
    )


# ----------------------------------------------------------------------------- seed demos


def test_batchnorm_demo_is_seed_001_example(zoo: dict[str, Module]) -> None:
    module = zoo["batchnorm_demo"]
    (bn,) = ops_of(module, "BatchNorm_Inference")
    assert bn.operands[0].type.shape == (4, 112, 2, 129)
    assert [v.type.shape for v in bn.operands[1:]] == [(1, 1, 1, 129)] * 4
    assert OPS[bn.kind].align_mode(bn) == AlignMode.ALIGN
    x = random_inputs(module)[0].astype(np.float64)
    scale, offset, mean, var = (
        constant_data(op).astype(np.float64) for op in ops_of(module, "Constant")
    )
    assert (var > 0).all()
    want = (x - mean) / np.sqrt(var + 1e-6) * scale + offset
    got = interpret(module, [x])[0].astype(np.float64)
    np.testing.assert_allclose(got, want, rtol=2e-3, atol=2e-3)
    small = build("batchnorm_demo", channels=30)
    assert small.main.args[0].type.shape == (4, 112, 2, 30)


def test_layout_align_demo_exercises_seed_000_rules(zoo: dict[str, Module]) -> None:
    module = zoo["layout_align_demo"]
    modes = {op.id: OPS[op.kind].align_mode(op) for op in module.main.ops if op.id >= 0}
    slices = ops_of(module, "Slice")
    assert [modes[op.id] for op in slices] == [AlignMode.NALIGN, AlignMode.ALIGN]
    # the multi-input BOTH op has parents of both colours
    (add,) = ops_of(module, "Add")
    assert modes[add.id] == AlignMode.BOTH
    assert {v.owner for v in add.operands} == {op.id for op in slices}
    # ALIGN-only kinds present, outputs of rank 2 and 3, inputs with C <= 32 and C > 32
    align_only = {op.name for op in module.main.ops if modes.get(op.id) == AlignMode.ALIGN}
    assert {"Conv2d", "Gemm", "MaxPool2d", "Concatenate", "Transpose"} <= align_only
    ranks = {v.type.rank for op in module.main.ops for v in op.results}
    assert {1, 2, 3, 4} <= ranks
    assert out_shapes(module) == [(256, 48), (1, 94, 64)]
    assert module.main.args[0].type.shape == (1, 16, 16, 30)
    assert ops_of(module, "Concatenate")[0].results[0].type.shape[-1] == 94


# ----------------------------------------------------------------------------- build()


def test_string_and_typed_arguments_agree() -> None:
    typed = build("llama_decoder", layers=2, lm_head=False, **LLAMA_SMALL)
    text = build(
        "llama_decoder", layers="2", lm_head="false", **{k: str(v) for k, v in LLAMA_SMALL.items()}
    )
    assert print_module(typed) == print_module(text)
    assert MODELS["tiny_cnn"].signature == "batch=1 size=8 channels=8 classes=10 dtype=f16"
    assert MODELS["tiny_cnn"].resolve(batch="3")["batch"] == 3


@pytest.mark.parametrize(
    ("name", "kwargs", "pattern"),
    [
        ("resnet51", {}, r"unknown zoo model 'resnet51'; known models: resnet50, .*tiny_cnn"),
        (
            "llama_decoder",
            {"layer": 2},
            r"no parameter 'layer'; valid parameters: layers, hidden, heads, .*lm_head",
        ),
        ("llama_decoder", {"layers": "many"}, r"parameter 'layers' expects int, got 'many'"),
        ("llama_decoder", {"layers": 2.5}, r"parameter 'layers' expects int"),
        ("llama_decoder", {"layers": True}, r"parameter 'layers' expects int"),
        ("llama_decoder", {"lm_head": "maybe"}, r"parameter 'lm_head' expects bool"),
        ("llama_decoder", {"layers": 0}, r"parameter 'layers' must be >= 1"),
        ("resnet50", {"dtype": "f64"}, r"parameter 'dtype' must be one of .*f16"),
        ("resnet50", {"dtype": 16}, r"parameter 'dtype' expects str"),
        ("llama_decoder", {"heads": 5}, r"hidden 4096 is not divisible by heads 5"),
        ("bert_base", {"seq": 1024}, r"seq 1024 exceeds the 512 position embeddings"),
    ],
)
def test_build_errors_are_clear(name: str, kwargs: dict[str, Any], pattern: str) -> None:
    with pytest.raises(Tx8labError, match=pattern):
        build(name, **kwargs)


# ----------------------------------------------------------------------------- mlir-opt


@pytest.mark.mlir
def test_mlir_opt_accepts_every_model(mlir_opt: str, zoo: dict[str, Module]) -> None:
    for name, module in zoo.items():
        done = subprocess.run(
            [mlir_opt, "--allow-unregistered-dialect", "--mlir-print-op-generic"],
            input=print_module(module),
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
        )
        assert done.returncode == 0, f"{name}: {done.stderr[:2000]}"
        theirs = parse_module(done.stdout, source=f"mlir-opt output for {name}")
        assert print_module(renumber(theirs)) == print_module(renumber(module)), name


@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "kwargs"),
    [
        ("resnet50", {"size": 32, "classes": 10}),
        ("mobilenet_v2", {"size": 32, "classes": 10}),
        ("vit_tiny", {"size": 32, "layers": 2, "classes": 10}),
        ("bert_base", {"layers": 2, "seq": 16}),
        ("llama_decoder", {"layers": 2, **LLAMA_SMALL}),
    ],
)
def test_large_models_interpret_at_small_shapes(name: str, kwargs: dict[str, Any]) -> None:
    module = build(name, **kwargs)
    for out in interpret(module, random_inputs(module)):
        assert np.isfinite(out.astype(np.float32)).all()


def test_every_model_is_a_function_of_the_zoo_module() -> None:
    from tx8lab.core import zoo as public

    for name, model in MODELS.items():
        make = getattr(public, name)
        assert make.__name__ == name
        assert model.signature in (make.__doc__ or "")
    assert public.tiny_cnn(channels=16).num_ops == public.build("tiny_cnn", channels=16).num_ops
