"""Pass spec text: ``Pass.spec``, ``Pass.from_spec`` and ``parse_pipeline_spec``."""

from __future__ import annotations

import enum
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from tx8lab.core.passes import (
    DCE,
    PASSES,
    FoldConstants,
    GroupPattern,
    parse_pipeline_spec,
    pipeline_spec,
)
from tx8lab.core.passes.base import Knob, Pass
from tx8lab.errors import Tx8labError


def _values(spec: Knob) -> st.SearchStrategy[Any]:
    if spec.choices:
        return st.sampled_from(spec.choices)
    if spec.type is bool:
        return st.booleans()
    if spec.type is int:
        low = None if spec.min is None else int(spec.min)
        high = None if spec.max is None else int(spec.max)
        return st.integers(min_value=low, max_value=high)
    if spec.type is float:
        return st.floats(
            min_value=spec.min, max_value=spec.max, allow_nan=False, allow_infinity=False
        )
    if isinstance(spec.type, type) and issubclass(spec.type, enum.Enum):
        return st.sampled_from(list(spec.type))
    return st.text(max_size=12)


@st.composite
def _passes(draw: st.DrawFn) -> Pass:
    cls = draw(st.sampled_from(sorted(PASSES.values(), key=lambda c: c.name)))
    values = {k.name: draw(st.one_of(st.just(k.default), _values(k))) for k in cls.knobs()}
    try:
        return cls(**values)
    except Tx8labError:
        assume(False)
        raise


@settings(max_examples=300, deadline=None)
@given(_passes())
def test_spec_round_trips_for_every_pass_and_knob_value(p: Pass) -> None:
    text = p.spec()
    assert type(p).from_spec(text) == p
    assert parse_pipeline_spec(text) == [p]


@settings(max_examples=50, deadline=None)
@given(st.lists(_passes(), min_size=1, max_size=4))
def test_pipeline_spec_round_trips(passes: list[Pass]) -> None:
    assert parse_pipeline_spec(pipeline_spec(passes)) == passes


def test_spec_prints_changed_knobs_in_field_order() -> None:
    assert DCE().spec() == "dce"
    assert FoldConstants(max_bytes=4096).spec() == "fold-constants{max_bytes=4096}"
    p = GroupPattern(single_user=True, opt_group="cnn", ddr_kinds="Gemm, Conv2d")
    assert p.spec() == 'group-pattern{opt_group=cnn single_user=true ddr_kinds="Gemm, Conv2d"}'
    assert GroupPattern(patterns_file='a "b"\\c').spec() == (
        r'group-pattern{patterns_file="a \"b\"\\c"}'
    )
    assert GroupPattern(patterns_file="=").spec() == 'group-pattern{patterns_file="="}'


def test_parse_pipeline_spec_reads_mlir_pipeline_text() -> None:
    assert parse_pipeline_spec(" fold-constants{max_bytes=4Ki}, dce{ recurse_groups=no } ") == [
        FoldConstants(max_bytes=4096),
        DCE(recurse_groups=False),
    ]
    assert parse_pipeline_spec("group-pattern{patterns_file='x'}") == [
        GroupPattern(patterns_file="'x'")
    ]
    assert parse_pipeline_spec('group-pattern{patterns_file="a,b}"},dce') == [
        GroupPattern(patterns_file="a,b}"),
        DCE(),
    ]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("nope", r"unknown pass 'nope'; known passes: fold-constants, dce"),
        ("dce{depth=1}", r"pass 'dce' has no knob 'depth'; its knobs: recurse_groups"),
        ("dce{recurse_groups=maybe}", r"knob dce.recurse_groups: 'maybe' is not a valid bool"),
        ("fold-constants{max_bytes=-1}", r"fold-constants.max_bytes must be >= 0"),
        ("dce{recurse_groups=false", r"unbalanced '\{'; write name\{knob=value"),
        ("dce}", r"unbalanced '\}'"),
        ("dce{recurse_groups=false}x", r"unbalanced braces"),
        ("dce{recurse_groups}", r"expected knob=value at 'recurse_groups'"),
        ("dce{recurse_groups=}", r"knob dce.recurse_groups has no value; write recurse_groups="),
        ('group-pattern{ddr_kinds="a}', r"unterminated '\"'"),
        ("dce,,dce", r"an empty pass name"),
        ("dce{recurse_groups=0 recurse_groups=1}", r"knob dce.recurse_groups is set twice"),
        ("Dce", r"'Dce' is not a pass name"),
        ("", r"empty pass pipeline: write e.g."),
    ],
)
def test_bad_spec_text_says_what_to_write(text: str, message: str) -> None:
    with pytest.raises(Tx8labError, match=message):
        parse_pipeline_spec(text)


def test_from_spec_checks_the_pass_name() -> None:
    with pytest.raises(Tx8labError, match="names pass 'dce', not 'fold-constants'"):
        FoldConstants.from_spec("dce")
    with pytest.raises(Tx8labError, match="holds 2 passes, not one"):
        DCE.from_spec("dce,dce")
