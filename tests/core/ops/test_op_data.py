"""Data, layout, memory and group ops: shapes, numerics, inverses (hypothesis), errors."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.core.ops.ophelpers import (
    build,
    close,
    infer,
    nchw_to_nhwc,
    nhwc_to_nchw,
    ort_node,
    randn,
    run,
)
from tx8lab.core import Builder, interpret, verify
from tx8lab.core.attrs import AlignMode, RandomInit
from tx8lab.core.ir import Block, Module, Op, TensorType, Value, remap_operands
from tx8lab.core.ops import OPS
from tx8lab.errors import Tx8labError

F = "f32"
small_shapes = st.lists(st.integers(1, 4), min_size=1, max_size=4).map(tuple)


# --------------------------------------------------------------------- reshape / transpose
def test_reshape() -> None:
    x = randn(2, 3, 4)
    assert infer("Reshape", TensorType((2, 3, 4), F), shape=(4, -1)) == (TensorType((4, 6), F),)
    np.testing.assert_array_equal(run("Reshape", x, shape=(-1, 4)), x.reshape(-1, 4))
    with pytest.raises(Tx8labError, match=r"tx8be.Reshape: shape \(5, 5\) has 25 elements"):
        infer("Reshape", TensorType((2, 3, 4), F), shape=(5, 5))
    with pytest.raises(Tx8labError, match=r"tx8be.Reshape: .* more than one -1"):
        infer("Reshape", TensorType((2, 3, 4), F), shape=(-1, -1))
    with pytest.raises(Tx8labError, match=r"tx8be.Reshape: cannot infer the -1"):
        infer("Reshape", TensorType((2, 3, 4), F), shape=(5, -1))


def test_transpose() -> None:
    x = randn(2, 3, 4)
    np.testing.assert_array_equal(run("Transpose", x, perm=(2, 0, 1)), x.transpose(2, 0, 1))
    with pytest.raises(Tx8labError, match=r"tx8be.Transpose: perm \(0, 0, 1\) is not a perm"):
        infer("Transpose", TensorType((2, 3, 4), F), perm=(0, 0, 1))


@given(shape=small_shapes, data=st.data())
def test_reshape_and_transpose_round_trip(shape: tuple[int, ...], data: Any) -> None:
    x = randn(*shape)
    flat = run("Reshape", x, shape=(-1,))
    np.testing.assert_array_equal(run("Reshape", flat, shape=shape), x)
    perm = tuple(data.draw(st.permutations(range(len(shape)))))
    inverse = tuple(int(i) for i in np.argsort(perm))
    y = run("Transpose", x, perm=perm)
    np.testing.assert_array_equal(run("Transpose", y, perm=inverse), x)


# --------------------------------------------------------------------- concat / split / slice
def test_concatenate() -> None:
    a, b = randn(2, 3), randn(2, 5)
    assert infer("Concatenate", TensorType((2, 3), F), TensorType((2, 5), F), axis=-1) == (
        TensorType((2, 8), F),
    )
    np.testing.assert_array_equal(run("Concatenate", a, b, axis=1), np.concatenate([a, b], 1))
    with pytest.raises(Tx8labError, match=r"tx8be.Concatenate: operand 1 .* does not match"):
        infer("Concatenate", TensorType((2, 3), F), TensorType((3, 5), F), axis=1)
    with pytest.raises(Tx8labError, match=r"tx8be.Concatenate: axis 2 is out of range"):
        infer("Concatenate", TensorType((2, 3), F), axis=2)
    with pytest.raises(Tx8labError, match=r"tx8be.Concatenate: missing required attribute"):
        infer("Concatenate", TensorType((2, 3), F))


def test_split() -> None:
    x = randn(2, 7)
    outs = run("Split", x, axis=1, sizes=(3, 4))
    np.testing.assert_array_equal(outs[0], x[:, :3])
    np.testing.assert_array_equal(outs[1], x[:, 3:])
    with pytest.raises(Tx8labError, match=r"tx8be.Split: sizes \(3, 3\) sum to 6"):
        infer("Split", TensorType((2, 7), F), axis=1, sizes=(3, 3))


@given(shape=small_shapes, data=st.data())
def test_split_then_concatenate_is_identity(shape: tuple[int, ...], data: Any) -> None:
    x = randn(*shape)
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    dim = shape[axis]
    cuts = sorted(data.draw(st.lists(st.integers(0, dim), max_size=3)))
    sizes = tuple(b - a for a, b in zip([0, *cuts], [*cuts, dim], strict=True))
    pieces = run("Split", x, axis=axis, sizes=sizes)
    pieces = pieces if isinstance(pieces, tuple) else (pieces,)
    np.testing.assert_array_equal(run("Concatenate", *pieces, axis=axis), x)


def test_slice_against_onnxruntime() -> None:
    x = randn(4, 6, 5)
    starts, ends, steps = (1, -4, 0), (100, 6, 5), (2, 1, 3)
    got = run("Slice", x, starts=starts, ends=ends, steps=steps)
    want = ort_node(
        "Slice",
        [
            x,
            np.array(starts, np.int64),
            np.array(ends, np.int64),
            np.array([0, 1, 2], np.int64),
            np.array(steps, np.int64),
        ],
    )[0]
    np.testing.assert_array_equal(got, want)
    (out,) = infer("Slice", TensorType((4, 6, 5), F), starts=starts, ends=ends, steps=steps)
    assert out.shape == want.shape


def test_slice_errors() -> None:
    with pytest.raises(Tx8labError, match=r"tx8be.Slice: attribute 'starts' needs 2 entries"):
        infer("Slice", TensorType((4, 6), F), starts=(0,), ends=(1, 1))
    with pytest.raises(Tx8labError, match=r"tx8be.Slice: steps .* must not contain 0"):
        infer("Slice", TensorType((4, 6), F), starts=(0, 0), ends=(1, 1), steps=(1, 0))


@given(shape=small_shapes, data=st.data())
def test_slices_reassemble_the_input(shape: tuple[int, ...], data: Any) -> None:
    x = randn(*shape)
    axis = data.draw(st.integers(0, len(shape) - 1))
    cut = data.draw(st.integers(0, shape[axis]))
    lows, highs = [0] * len(shape), list(shape)
    head = run("Slice", x, starts=tuple(lows), ends=tuple([*highs[:axis], cut, *highs[axis + 1 :]]))
    tail = run("Slice", x, starts=tuple([*lows[:axis], cut, *lows[axis + 1 :]]), ends=tuple(highs))
    np.testing.assert_array_equal(run("Concatenate", head, tail, axis=axis), x)


# --------------------------------------------------------------------- pad / broadcast
def test_pad_against_onnxruntime() -> None:
    x = randn(2, 3, 4)
    pads = (0, 1, 2, 1, 0, 3)
    got = run("Pad", x, pads=pads, value=1.5)
    want = ort_node("Pad", [x, np.array(pads, np.int64), np.array(1.5, np.float32)])[0]
    np.testing.assert_array_equal(got, want)
    with pytest.raises(Tx8labError, match=r"tx8be.Pad: attribute 'pads' needs 6 entries"):
        infer("Pad", TensorType((2, 3, 4), F), pads=(1, 1))
    with pytest.raises(Tx8labError, match=r"tx8be.Pad: pads .* must be >= 0"):
        infer("Pad", TensorType((2,), F), pads=(-1, 0))


@given(shape=small_shapes, data=st.data())
def test_pad_then_slice_is_identity(shape: tuple[int, ...], data: Any) -> None:
    x = randn(*shape)
    rank = len(shape)
    pads = tuple(data.draw(st.lists(st.integers(0, 3), min_size=2 * rank, max_size=2 * rank)))
    y = run("Pad", x, pads=pads)
    starts = pads[:rank]
    ends = tuple(s + d for s, d in zip(starts, shape, strict=True))
    np.testing.assert_array_equal(run("Slice", y, starts=starts, ends=ends), x)


def test_broadcast() -> None:
    x = randn(3, 1)
    np.testing.assert_array_equal(
        run("Broadcast", x, shape=(2, 3, 4)), np.broadcast_to(x, (2, 3, 4))
    )
    with pytest.raises(Tx8labError, match=r"tx8be.Broadcast: x .* does not broadcast to"):
        infer("Broadcast", TensorType((3, 2), F), shape=(3, 4))
    with pytest.raises(Tx8labError, match=r"tx8be.Broadcast: x .* does not broadcast to"):
        infer("Broadcast", TensorType((3, 1), F), shape=(3,))


# --------------------------------------------------------------------- indexing
def test_gather_against_onnxruntime() -> None:
    data = randn(4, 5, 3)
    idx = np.array([[0, -1], [3, 2]], np.int64)
    for axis in (0, 1, -1):
        dim = data.shape[axis]
        ids = np.where(idx >= dim, dim - 1, idx)
        got = run("Gather", data, ids, axis=axis)
        np.testing.assert_array_equal(got, ort_node("Gather", [data, ids], axis=axis)[0])
    with pytest.raises(Tx8labError, match=r"tx8be.Gather: indices must be i32 or i64"):
        infer("Gather", TensorType((4, 5), F), TensorType((2,), F))
    with pytest.raises(Tx8labError, match=r"tx8be.Gather: index out of range"):
        run("Gather", data, np.array([4], np.int32))


def test_embedding() -> None:
    table = randn(10, 4)
    idx = np.array([[1, 9, 0]], np.int32)
    (out,) = infer("Embedding", TensorType((10, 4), F), TensorType((1, 3), "i32"))
    assert out == TensorType((1, 3, 4), F)
    np.testing.assert_array_equal(run("Embedding", table, idx), table[idx])
    with pytest.raises(Tx8labError, match=r"tx8be.Embedding: table must be \[V, D\]"):
        infer("Embedding", TensorType((10,), F), TensorType((3,), "i32"))
    with pytest.raises(Tx8labError, match=r"tx8be.Embedding: indices must be i32 or i64"):
        infer("Embedding", TensorType((10, 4), F), TensorType((3,), "i8"))


@pytest.mark.parametrize("axis", [0, 1])
def test_scatter_against_onnxruntime(axis: int) -> None:
    data = randn(4, 5)
    idx = (
        np.array([[1, 0, 3], [3, 2, -1]], np.int64)
        if axis == 0
        else np.array([[4, 0, 2], [1, -2, 3]], np.int64)
    )
    updates = randn(2, 3)
    got = run("Scatter", data, idx, updates, axis=axis)
    want = ort_node("ScatterElements", [data, idx, updates], opset=13, axis=axis)[0]
    np.testing.assert_array_equal(got, want)


def test_scatter_errors() -> None:
    d = TensorType((4, 5), F)
    with pytest.raises(Tx8labError, match=r"tx8be.Scatter: updates .* must have the shape"):
        infer("Scatter", d, TensorType((2, 3), "i64"), TensorType((2, 2), F))
    with pytest.raises(Tx8labError, match=r"tx8be.Scatter: indices .* must have the rank"):
        infer("Scatter", d, TensorType((2,), "i64"), TensorType((2,), F))


# --------------------------------------------------------------------- convert / resize / unpack
def test_convert() -> None:
    x = np.array([-1.7, 0.0, 2.5, 300.0], np.float32)
    assert infer("Convert", TensorType((4,), F), dtype="i8") == (TensorType((4,), "i8"),)
    np.testing.assert_array_equal(run("Convert", x, dtype="i32"), [-1, 0, 2, 300])
    np.testing.assert_array_equal(run("Convert", x, dtype="i1"), [True, False, True, True])
    assert run("Convert", x, dtype="f16").dtype == np.float16
    with pytest.raises(Tx8labError, match=r"tx8be.Convert: unknown element type 'f8'"):
        infer("Convert", TensorType((4,), F), dtype="f8")


def test_resize_against_onnxruntime() -> None:
    x = randn(1, 3, 4, 2)
    got = run("Resize", x, scale_h=2, scale_w=3)
    scales = np.array([1, 1, 2, 3], np.float32)
    want = ort_node(
        "Resize",
        [nhwc_to_nchw(x), None, scales],
        mode="nearest",
        coordinate_transformation_mode="asymmetric",
        nearest_mode="floor",
    )[0]
    np.testing.assert_array_equal(got, nchw_to_nhwc(want))
    with pytest.raises(Tx8labError, match=r"tx8be.Resize: mode 'linear' is not supported"):
        infer("Resize", TensorType((1, 3, 4, 2), F), scale_h=2, scale_w=2, mode="linear")
    with pytest.raises(Tx8labError, match=r"tx8be.Resize: x must be NHWC"):
        infer("Resize", TensorType((3, 4, 2), F), scale_h=2, scale_w=2)


def test_unpack_nibble_order_and_sign() -> None:
    # 0x7F: low 0xF = -1, high 0x7 = 7;  0x81: low 1, high 0x8 = -8;  0x00; 0xA5: 5, -6
    packed = np.array([[0x7F, 0x81 - 256, 0x00, 0xA5 - 256]], np.int8)
    (out,) = infer("Unpack", TensorType((1, 4), "i8"))
    assert out == TensorType((1, 8), "i8")
    got = run("Unpack", packed)
    assert got.dtype == np.int8
    np.testing.assert_array_equal(got, [[-1, 7, 1, -8, 0, 0, 5, -6]])
    # every byte value: repacking the nibbles gives the byte back
    every = np.arange(-128, 128, dtype=np.int8).reshape(2, 128)
    nib = run("Unpack", every).astype(np.int16).reshape(2, 128, 2)
    repacked = ((nib[..., 0] & 0xF) | ((nib[..., 1] & 0xF) << 4)).astype(np.uint8).view(np.int8)
    np.testing.assert_array_equal(repacked, every)
    with pytest.raises(Tx8labError, match=r"tx8be.Unpack: packed operand must be i8"):
        infer("Unpack", TensorType((4,), "i32"))


def test_tuple() -> None:
    a, b = randn(2), np.array([1, 2], np.int32)
    assert infer("Tuple", TensorType((2,), F), TensorType((2,), "i32")) == (
        TensorType((2,), F),
        TensorType((2,), "i32"),
    )
    outs = run("Tuple", a, b)
    np.testing.assert_array_equal(outs[0], a)
    np.testing.assert_array_equal(outs[1], b)


# --------------------------------------------------------------------- layout / memory / group
def test_channel_norm_keeps_values() -> None:
    x = randn(1, 4, 4, 3)
    assert infer("ChannelNorm", TensorType(x.shape, F), direction=False) == (
        TensorType(x.shape, F),
    )
    np.testing.assert_array_equal(run("ChannelNorm", x, direction=True), x)
    with pytest.raises(Tx8labError, match=r"tx8be.ChannelNorm: missing required attribute"):
        infer("ChannelNorm", TensorType(x.shape, F))


def test_load_and_store_keep_values() -> None:
    x = randn(3, 2)
    for kind in ("LoadVar", "StoreVar"):
        assert infer(kind, TensorType((3, 2), F)) == (TensorType((3, 2), F),)
        np.testing.assert_array_equal(run(kind, x), x)


def test_load_const_materialises_like_constant() -> None:
    init = RandomInit(7, "normal", 0.5, 0.0)
    load = build("LoadConst", value=init, shape=(3, 4), dtype="f16", const_id=2)
    const = build("Constant", value=init, shape=(3, 4), dtype="f16")
    assert load.results[0].type == TensorType((3, 4), "f16")
    np.testing.assert_array_equal(
        OPS[load.kind].compute(load)[0], OPS[const.kind].compute(const)[0]
    )
    with pytest.raises(Tx8labError, match=r"tx8be.LoadConst: a RandomInit value needs"):
        infer("LoadConst", value=init)


def test_group_runs_through_its_body_in_the_interpreter() -> None:
    b = Builder()
    x = b.input((2, 3))
    z = b.op("Relu", b.op("Add", x, x))
    b.output(z)
    flat = b.finish()
    gid = flat.next_id
    arg = Value(gid, 0, x.type, is_arg=True)
    body = remap_operands(flat.main.ops[:-1], {x.key: arg})
    ret = Op(-1, "tx8be.Return", (body[-1].results[0],), ())
    group = Op(
        gid, "tx8be.Group", (x,), (Value(gid, 0, z.type),), {}, (Block((arg,), (*body, ret)),)
    )
    func = flat.main.with_ops([group, Op(-1, "func.return", (group.results[0],), ())])
    module = Module((func,), {}, gid + 1)
    verify(module)
    data = randn(2, 3)
    close(interpret(module, [data])[0], np.maximum(2 * data, 0))
    assert OPS[group.kind].op_attr(group).align_mode is AlignMode.BOTH
    with pytest.raises(Tx8labError, match=r"tx8be.Group: .*not compute"):
        OPS["tx8be.Group"].compute(group, data)
