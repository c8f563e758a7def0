"""Element types of the tx8be dialect and their numpy emulation.

numpy has no bf16 or tf32, so those values live in ``float32`` arrays whose values are
rounded to the narrower format (round to nearest, ties to even), which is what the
hardware's conversion does. ``f16`` uses numpy's own ``float16``.

Examples:
    >>> round_to(np.array([1.0 + 2**-9], dtype=np.float32), "bf16")[0]
    np.float32(1.0)
    >>> bits_of("bf16"), bits_of("i1")
    (16, 1)
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from tx8lab.errors import Tx8labError

#: Element type name -> bits per element in memory (``i1`` is stored one per byte).
DTYPE_BITS: dict[str, int] = {
    "f32": 32,
    "f16": 16,
    "bf16": 16,
    "tf32": 32,
    "i8": 8,
    "i32": 32,
    "i64": 64,
    "i1": 1,
}

#: Element type name -> numpy dtype of the array that holds its values.
_NUMPY: dict[str, type[np.generic]] = {
    "f32": np.float32,
    "f16": np.float16,
    "bf16": np.float32,
    "tf32": np.float32,
    "i8": np.int8,
    "i32": np.int32,
    "i64": np.int64,
    "i1": np.bool_,
}

FLOAT_DTYPES = frozenset({"f32", "f16", "bf16", "tf32"})
INT_DTYPES = frozenset({"i8", "i32", "i64", "i1"})


def check_dtype(dtype: str) -> str:
    """Return ``dtype`` if it is a tx8be element type, else raise a clear error."""
    if dtype not in DTYPE_BITS:
        raise Tx8labError(f"unknown element type {dtype!r}: use one of {', '.join(DTYPE_BITS)}")
    return dtype


def bits_of(dtype: str) -> int:
    """Bits one element of ``dtype`` takes in memory."""
    return DTYPE_BITS[check_dtype(dtype)]


def numpy_dtype(dtype: str) -> np.dtype[Any]:
    """The numpy dtype that holds values of ``dtype`` (``float32`` for bf16/tf32)."""
    return np.dtype(_NUMPY[check_dtype(dtype)])


def from_numpy(dtype: np.dtype[Any]) -> str:
    """The tx8be element type for a numpy dtype (float64 maps to f32, int16 to i32)."""
    kind = np.dtype(dtype)
    table = {
        np.dtype(np.float32): "f32",
        np.dtype(np.float64): "f32",
        np.dtype(np.float16): "f16",
        np.dtype(np.int8): "i8",
        np.dtype(np.uint8): "i32",
        np.dtype(np.int16): "i32",
        np.dtype(np.int32): "i32",
        np.dtype(np.int64): "i64",
        np.dtype(np.bool_): "i1",
    }
    if kind not in table:
        raise Tx8labError(f"numpy dtype {kind} has no tx8be element type")
    return table[kind]


def _round_mantissa(values: npt.NDArray[np.float32], drop_bits: int) -> npt.NDArray[np.float32]:
    """Round float32 values to ``23 - drop_bits`` mantissa bits, ties to even."""
    bits = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32).astype(np.uint64)
    lsb = (bits >> np.uint64(drop_bits)) & np.uint64(1)
    rounding = np.uint64((1 << (drop_bits - 1)) - 1) + lsb
    rounded = ((bits + rounding) >> np.uint64(drop_bits)) << np.uint64(drop_bits)
    out = rounded.astype(np.uint32).view(np.float32)
    # NaN stays NaN (rounding could carry a NaN payload into infinity)
    # (ascontiguousarray turns a 0-d array into shape (1,): restore the caller's shape)
    out = out.reshape(np.shape(values))
    return np.where(np.isnan(values), np.float32(np.nan), out).astype(np.float32)


def round_to(values: npt.ArrayLike, dtype: str) -> npt.NDArray[Any]:
    """Convert ``values`` to the numpy array that holds them as ``dtype``.

    Floats are rounded to the target precision (bf16 keeps 7 mantissa bits, tf32 keeps
    10, both ties-to-even); integers wrap as the hardware's two's complement does;
    ``i1`` is ``value != 0``.
    """
    check_dtype(dtype)
    array = np.asarray(values)
    if dtype == "i1":
        return array.astype(np.bool_)
    if dtype in ("bf16", "tf32"):
        f32 = array.astype(np.float32)
        return _round_mantissa(f32, 16 if dtype == "bf16" else 13)
    if dtype in INT_DTYPES and array.dtype.kind == "f":
        # float -> int conversion truncates toward zero, as C does
        array = np.trunc(array).astype(np.int64)
    with np.errstate(over="ignore", invalid="ignore"):
        return array.astype(_NUMPY[dtype])


def to_bits_image(values: npt.NDArray[Any], dtype: str) -> bytes:
    """Little-endian memory image of ``values`` stored as ``dtype`` (i1: one byte each)."""
    array = round_to(values, dtype)
    if dtype == "bf16":
        return (array.astype(np.float32).view(np.uint32) >> np.uint32(16)).astype("<u2").tobytes()
    if dtype == "i1":
        return array.astype(np.uint8).tobytes()
    return array.astype(array.dtype.newbyteorder("<")).tobytes()


def from_bits_image(data: bytes, dtype: str, count: int) -> npt.NDArray[Any]:
    """Inverse of :func:`to_bits_image` for ``count`` elements."""
    check_dtype(dtype)
    if dtype == "bf16":
        half = np.frombuffer(data, dtype="<u2", count=count).astype(np.uint32)
        return (half << np.uint32(16)).view(np.float32)
    if dtype == "i1":
        return np.frombuffer(data, dtype=np.uint8, count=count).astype(np.bool_)
    return np.frombuffer(data, dtype=numpy_dtype(dtype).newbyteorder("<"), count=count).astype(
        numpy_dtype(dtype)
    )
