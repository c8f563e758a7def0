"""IR, text form, verifier and interpreter: unit tests and properties on random modules."""

from __future__ import annotations

import subprocess
import time

import numpy as np
import pytest
from hypothesis import given

from tests.strategies import modules
from tx8lab.core import Builder, interpret, parse_module, print_module, random_inputs, verify
from tx8lab.core.attrs import DevInfo, LayoutMode, MemScope, ParallelAttr, ParallelMode, RandomInit
from tx8lab.core.builder import make_op
from tx8lab.core.dtypes import round_to
from tx8lab.core.ir import Block, Function, Module, Op, TensorType, Value
from tx8lab.core.text import print_attr, print_dense, renumber
from tx8lab.core.verify import verify_problems
from tx8lab.errors import Tx8labError
from tx8lab.hw import get_preset


def small_module() -> Module:
    b = Builder(model="small")
    x = b.input((2, 3), "f32")
    y = b.op("Relu", x)
    b.output(b.op("Add", y, x))
    return b.finish()


def test_tensor_type_text_and_errors() -> None:
    assert str(TensorType((1, 56, 56, 64), "f16")) == "tensor<1x56x56x64xf16>"
    assert str(TensorType((), "i1")) == "tensor<i1>"
    with pytest.raises(Tx8labError, match="unknown element type 'f64'"):
        TensorType((1,), "f64")
    with pytest.raises(Tx8labError, match="tuple of ints"):
        TensorType((1, -2), "f32")


def test_builder_names_values_after_stable_ids() -> None:
    text = print_module(small_module())
    assert '%0 = "tx8be.Relu"(%arg0) : (tensor<2x3xf32>) -> tensor<2x3xf32>' in text
    assert '"func.return"(%1) : (tensor<2x3xf32>) -> ()' in text
    assert "tx8.next_id = 2 : i64" in text


def test_attributes_print_sorted_and_round_trip() -> None:
    b = Builder()
    x = b.input((1, 4), "f16")
    dev = DevInfo(
        imm_size=128,
        mem_layout=LayoutMode.NCx,
        multi_buf_en=True,
        multi_buf_num=2,
        temporal_mem_slice=(1, 2, 2, 64),
        mem_addr=(0, 4096),
    )
    par = ParallelAttr(ParallelMode.DP, dp_dim_x=4, shape_spatial_sharding=(4, 1, 1, 1))
    y = b.op(
        "Relu",
        x,
        dev_info=dev,
        tile_parallel=par,
        zz=1.5e-7,
        aa='q"\\\n',
        scope=MemScope.DDRAM3D,
        flags=(True, False),
        empty=(),
        nan=float("nan"),
        neg=-3,
        fl=(0.5, 2.0),
    )
    b.output(y)
    module = b.finish()
    text = print_module(module)
    line = next(s for s in text.splitlines() if "Relu" in s)
    names = [
        part.split(" = ")[0].strip(" {")
        for part in line.split("{", 1)[1].split(", ")
        if " = " in part and not part.startswith(" ")
    ]
    assert names.index("aa") < names.index("dev_info") < names.index("zz")
    again = parse_module(text)
    assert print_module(again) == text
    attrs = again.main.ops[0].attrs
    assert attrs["dev_info"] == dev
    assert attrs["tile_parallel"] == par
    assert attrs["aa"] == 'q"\\\n'
    assert attrs["scope"] is MemScope.DDRAM3D
    assert attrs["zz"] == 1.5e-7
    assert np.isnan(attrs["nan"])
    assert attrs["empty"] == ()
    assert attrs["flags"] == (True, False)
    assert attrs["fl"] == (0.5, 2.0)


@pytest.mark.parametrize("dtype", ["f32", "f16", "bf16", "tf32", "i8", "i32", "i64", "i1"])
def test_constant_data_round_trips_exactly(dtype: str) -> None:
    rng = np.random.default_rng(1)
    data = round_to(rng.standard_normal((3, 5)) * 50, dtype)
    b = Builder()
    c = b.constant(data, dtype)
    b.output(c)
    module = b.finish()
    text = print_module(module)
    again = parse_module(text)
    got = again.main.ops[0].attrs["value"]
    assert got.dtype == data.dtype
    np.testing.assert_array_equal(got, data)
    assert print_module(again) == text


def test_bool_constants_print_nested_like_their_shape() -> None:
    # mlir-opt rejects a flat list for a rank-2 i1 tensor ("expected 2 dims")
    data = np.array([[True, False, True], [False, False, True]])
    text = print_dense(data, "i1")
    assert text == "dense<[[true, false, true], [false, false, true]]> : tensor<2x3xi1>"
    assert print_dense(np.array(True), "i1") == "dense<true> : tensor<i1>"


@pytest.mark.mlir
@pytest.mark.parametrize("dtype", ["f32", "f16", "bf16", "tf32", "i8", "i32", "i64", "i1"])
@pytest.mark.parametrize("shape", [(), (3,), (2, 3), (2, 1, 3), (1, 2, 2, 3), (3, 70)])
def test_mlir_opt_accepts_constants(mlir_opt: str, dtype: str, shape: tuple[int, ...]) -> None:
    # (3, 70): more than 100 elements, which mlir-opt prints back as hex data
    rng = np.random.default_rng(5)
    data = round_to(rng.standard_normal(shape) * 50, dtype)
    b = Builder()
    c = b.constant(data, dtype)
    b.output(c)
    text = print_module(b.finish())
    done = subprocess.run(
        [mlir_opt, "--allow-unregistered-dialect", "--mlir-print-op-generic"],
        input=text,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    theirs = parse_module(done.stdout, source="mlir-opt output")
    np.testing.assert_array_equal(theirs.main.ops[0].attrs["value"], data)


def test_random_init_is_reproducible_and_cheap_to_print() -> None:
    b = Builder()
    w = b.weight((4096, 11008), "bf16")
    b.output(w)
    module = b.finish()
    text = print_module(module)
    assert len(text) < 1000
    init = module.main.ops[0].attrs["value"]
    assert isinstance(init, RandomInit)
    small = RandomInit(7, "normal", 0.5)
    again = small.materialize((3, 4), "f16")
    np.testing.assert_array_equal(small.materialize((3, 4), "f16"), again)


def test_elided_constants_say_why_they_do_not_parse() -> None:
    b = Builder()
    b.output(b.constant(np.zeros((64, 64), np.float32)))
    text = print_module(b.finish(), elide_bytes=1024)
    assert "dense_resource<__elided__>" in text
    with pytest.raises(Tx8labError, match="elided"):
        parse_module(text)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("garbage", 'expected "builtin.module"'),
        (
            '"builtin.module"() ({\n  "func.func"() ({\n  ^bb0(%arg0: tensor<2xf32>):\n'
            '    %0 = "tx8be.Relu"(%9) : (tensor<2xf32>) -> tensor<2xf32>\n',
            "undefined value %9",
        ),
        ('"builtin.module"() ({\n  "func.func"() ({\n  ^bb0(%arg0: tensor<2xf64>):\n', "f64"),
        (
            '"builtin.module"() ({\n  "func.func"() ({\n  ^bb0(%arg0: tensor<2xf32>):\n'
            '    %0 = "tx8be.Relu"(%arg0) : (tensor<3xf32>) -> tensor<2xf32>\n',
            "used as",
        ),
    ],
)
def test_parse_errors_name_line_and_problem(text: str, message: str) -> None:
    with pytest.raises(Tx8labError, match=message) as info:
        parse_module(text, source="bad.mlir")
    assert str(info.value).startswith("bad.mlir:")


def _func_with(ops: list[Op], args: tuple[Value, ...], next_id: int = 10) -> Module:
    return Module((Function("main", Block(args, tuple(ops))),), {}, next_id)


def test_verifier_names_the_op() -> None:
    x = Value(-1, 0, TensorType((2,), "f32"), True)
    relu = make_op("Relu", [x], op_id=3)
    late = make_op("Relu", [relu.result], op_id=4)
    ret = Op(-1, "func.return", (late.result,), ())
    problems = verify_problems(_func_with([late, relu, ret], (x,)))
    assert any(p.startswith("%4 tx8be.Relu: operand 0 is used before") for p in problems)

    wrong = relu.replace(results=(Value(3, 0, TensorType((3,), "f32")),))
    ret2 = Op(-1, "func.return", (wrong.result,), ())
    with pytest.raises(Tx8labError, match=r"%3 tx8be.Relu: result types"):
        verify(_func_with([wrong, ret2], (x,)))

    dup = make_op("Relu", [relu.result], op_id=3)
    ret3 = Op(-1, "func.return", (dup.result,), ())
    assert any("id 3 used twice" in p for p in verify_problems(_func_with([relu, dup, ret3], (x,))))

    unknown = Op(5, "tx8be.Frobnicate", (x,), (Value(5, 0, x.type),))
    ret4 = Op(-1, "func.return", (unknown.result,), ())
    assert any(
        "%5 tx8be.Frobnicate: unknown op kind" in p
        for p in verify_problems(_func_with([unknown, ret4], (x,)))
    )
    assert any("must end with func.return" in p for p in verify_problems(_func_with([relu], (x,))))


def test_group_region_is_checked() -> None:
    x = Value(-1, 0, TensorType((2,), "f32"), True)
    arg = Value(7, 0, x.type, True)
    inner = make_op("Relu", [arg], op_id=8)
    leak = make_op("Relu", [x], op_id=9)  # uses a value from outside the group
    body = Block((arg,), (inner, leak, Op(-1, "tx8be.Return", (inner.result,), ())))
    group = Op(7, "tx8be.Group", (x,), (Value(7, 0, x.type),), {}, (body,))
    ret = Op(-1, "func.return", (group.result,), ())
    problems = verify_problems(_func_with([group, ret], (x,)))
    assert any(p.startswith("%9 tx8be.Relu: operand 0 is used before") for p in problems)


def test_result_less_group_round_trips_with_its_id() -> None:
    # the id of an op without results comes after its region (``tx8.id``); the region's
    # block arguments must end up owned by it, not by the function (owner -1)
    t = TensorType((4,), "f32")
    arg = Value(-1, 0, t, is_arg=True)
    inner_arg = Value(5, 0, t, is_arg=True)
    store = Op(1, "tx8be.StoreVar", (inner_arg,), (Value(1, 0, t),))
    body = Block((inner_arg,), (store, Op(-1, "tx8be.Return", (), ())))
    group = Op(5, "tx8be.Group", (arg,), (), {}, (body,))
    func = Function("main", Block((arg,), (group, Op(-1, "func.return", (), ()))))
    text = print_module(Module((func,), {}, 6))
    parsed = parse_module(text)
    verify(parsed)
    (region,) = parsed.main.ops[0].regions
    assert region.args[0].owner == 5
    assert region.ops[0].operands[0] == region.args[0]
    assert print_module(parsed) == text
    # without ids (as mlir-opt prints it) the group gets a fresh id that owns its arguments
    stripped = parse_module(text.replace("{tx8.id = 5 : i64} ", ""))
    verify(stripped)


def test_interpreter_checks_inputs_and_rounds_to_types() -> None:
    module = small_module()
    out = interpret(module, [np.array([[-1.0, 2.0, 3.0], [0.5, -0.5, 1.0]])])[0]
    np.testing.assert_array_equal(out, [[-1.0, 4.0, 6.0], [1.0, -0.5, 2.0]])
    with pytest.raises(Tx8labError, match=r"input 0 has shape \(3,\)"):
        interpret(module, [np.zeros(3)])
    with pytest.raises(Tx8labError, match="takes 1 inputs"):
        interpret(module, [])


@given(modules())
def test_random_modules_round_trip_and_interpret(module: Module) -> None:
    text = print_module(module)
    again = parse_module(text)
    assert print_module(again) == text
    verify(again)
    inputs = random_inputs(module, seed=3)
    for a, b in zip(interpret(module, inputs), interpret(again, inputs), strict=True):
        np.testing.assert_array_equal(a, b)


@given(modules())
def test_renumber_keeps_meaning(module: Module) -> None:
    fresh = renumber(module)
    verify(fresh)
    inputs = random_inputs(module, seed=1)
    for a, b in zip(interpret(module, inputs), interpret(fresh, inputs), strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.mlir
@given(modules(max_ops=12))
def test_mlir_opt_accepts_and_agrees(mlir_opt: str, module: Module) -> None:
    text = print_module(module)
    done = subprocess.run(
        [mlir_opt, "--allow-unregistered-dialect", "--mlir-print-op-generic"],
        input=text,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    theirs = parse_module(done.stdout, source="mlir-opt output")
    assert print_module(renumber(theirs)) == print_module(renumber(module))


def test_copy_of_a_10k_op_module_is_cheap() -> None:
    b = Builder()
    x = b.input((4,), "f32")
    for _ in range(10_000):
        x = b.op("Relu", x)
    b.output(x)
    module = b.finish()
    start = time.perf_counter()
    copy = module.with_function(module.main.with_ops(list(module.main.ops)))
    elapsed = time.perf_counter() - start
    assert copy.main.ops[5] is module.main.ops[5]
    assert elapsed < 0.5  # generous: the benchmark reports the real figure (a few ms)
    assert print_attr(3) == "3 : i64"


def test_op_attributes_are_read_only() -> None:
    op = small_module().main.ops[0].with_attrs(tag="x")
    with pytest.raises(TypeError, match="read-only"):
        op.attrs["tag"] = "y"  # type: ignore[index]
    with pytest.raises(TypeError, match="read-only"):
        del op.attrs["tag"]  # type: ignore[attr-defined]
    with pytest.raises(TypeError, match="read-only"):
        op.attrs.update(tag="y")  # type: ignore[attr-defined]
    with pytest.raises(TypeError, match="read-only"):
        op.attrs.pop("tag")  # type: ignore[attr-defined]
    # any mapping handed to the constructor is frozen (a copy: the caller's dict stays free)
    mine = {"axis": 1}
    built = Op(7, "tx8be.Relu", (), (), mine)
    mine["axis"] = 2
    assert built.attrs == {"axis": 1}
    with pytest.raises(TypeError, match="read-only"):
        built.attrs["axis"] = 3  # type: ignore[index]
    # new attributes come from with_attrs, and the old op keeps its own
    assert op.with_attrs(tag="y").attrs["tag"] == "y"
    assert op.attrs["tag"] == "x"
    assert dict(op.attrs) == {"tag": "x"}


def _constant_arrays(module: Module) -> list[np.ndarray]:
    return [
        value
        for op in module.walk()
        for value in op.attrs.values()
        if isinstance(value, np.ndarray)
    ]


def test_constant_payloads_are_read_only_wherever_they_enter() -> None:
    from tx8lab.core.passes import FoldConstants

    b = Builder()
    x = b.input((2, 3), "f32")
    c = b.constant([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], "f32")
    b.output(b.op("Add", x, b.op("Neg", c)))
    built = b.finish()
    parsed = parse_module(print_module(built))
    folded = FoldConstants().run(built, get_preset("tx81")).module
    assert any(op.kind == "tx8be.Constant" and op.created_by for op in folded.walk())
    for module in (built, parsed, folded):
        arrays = _constant_arrays(module)
        assert arrays
        for array in arrays:
            assert not array.flags.writeable
            with pytest.raises(ValueError, match="read-only"):
                array[...] = 0


def test_onnx_initializers_are_read_only() -> None:
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    from tx8lab.core.frontends.onnx import load

    weight = numpy_helper.from_array(np.ones((3, 4), np.float32), "w")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])],
        [weight],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    del onnx
    arrays = _constant_arrays(load(model))
    assert arrays
    assert all(not array.flags.writeable for array in arrays)
