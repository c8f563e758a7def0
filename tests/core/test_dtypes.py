"""Element types: bf16/tf32 rounding, integer conversion, memory images."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from tx8lab.core.dtypes import (
    DTYPE_BITS,
    bits_of,
    from_bits_image,
    from_numpy,
    numpy_dtype,
    round_to,
    to_bits_image,
)
from tx8lab.errors import Tx8labError


def test_bf16_rounds_to_nearest_even() -> None:
    one = np.float32(1.0)
    ulp = np.float32(2.0**-7)  # bf16 keeps 7 mantissa bits
    halfway_down = one + ulp / 2  # tie between 1.0 (even) and 1 + ulp (odd): goes to 1.0
    halfway_up = one + ulp + ulp / 2  # tie between 1 + ulp (odd) and 1 + 2 ulp (even): up
    above = one + ulp / 2 + np.float32(2.0**-20)
    got = round_to(np.array([halfway_down, halfway_up, above], np.float32), "bf16")
    np.testing.assert_array_equal(got, [one, one + 2 * ulp, one + ulp])


def test_tf32_keeps_ten_mantissa_bits() -> None:
    x = np.array([1.0 + 2.0**-10, 1.0 + 2.0**-12], np.float32)
    np.testing.assert_array_equal(round_to(x, "tf32"), [1.0 + 2.0**-10, 1.0])


def test_special_values_survive_rounding() -> None:
    x = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0], np.float32)
    for dtype in ("bf16", "tf32", "f16"):
        got = round_to(x, dtype)
        assert np.isposinf(got[0])
        assert np.isneginf(got[1])
        assert np.isnan(got[2])
        assert np.signbit(got[4])
        assert not np.signbit(got[3])


def test_float_to_int_truncates_and_wraps() -> None:
    np.testing.assert_array_equal(round_to(np.array([1.7, -1.7]), "i32"), [1, -1])
    np.testing.assert_array_equal(round_to(np.array([200, -200]), "i8"), [-56, 56])
    np.testing.assert_array_equal(round_to(np.array([0.0, 0.5, -2.0]), "i1"), [False, True, True])


def test_unknown_dtype_is_a_clear_error() -> None:
    with pytest.raises(Tx8labError, match="unknown element type 'f8'"):
        bits_of("f8")
    with pytest.raises(Tx8labError, match="has no tx8be element type"):
        from_numpy(np.dtype(np.complex64))
    assert numpy_dtype("bf16") == np.float32


@pytest.mark.parametrize("dtype", sorted(DTYPE_BITS))
@given(data=st.data())
def test_bits_image_round_trips(dtype: str, data: st.DataObject) -> None:
    values = data.draw(
        hnp.arrays(np.float64, st.integers(0, 20), elements=st.floats(-1e4, 1e4, allow_nan=False))
    )
    array = round_to(values, dtype)
    image = to_bits_image(array, dtype)
    assert len(image) == array.size * max(1, bits_of(dtype) // 8)
    back = from_bits_image(image, dtype, array.size)
    np.testing.assert_array_equal(back, array)
    assert back.dtype == numpy_dtype(dtype)


@pytest.mark.parametrize("dtype", ["bf16", "tf32", "f16", "i8"])
def test_round_to_keeps_zero_rank_shape(dtype: str) -> None:
    assert round_to(np.float32(1.5), dtype).shape == ()
