"""The pass contract and the runner: knobs, run_pipeline, instruments, Explorer caching."""

from __future__ import annotations

import functools
import io
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar, Literal

import pytest

from tx8lab.core.builder import Builder
from tx8lab.core.instruments import (
    Cache,
    Instrument,
    PrintAfterAll,
    Progress,
    Run,
    Timing,
    Verify,
    default_instruments,
    is_interactive,
)
from tx8lab.core.ir import Block, Function, Module, Op
from tx8lab.core.passes import DEFAULT_PIPELINE, PASSES, build_pipeline
from tx8lab.core.passes.base import Decision, Pass, PassContext, PassResult, Step, knob
from tx8lab.core.runner import Explorer, run_pipeline
from tx8lab.core.text import print_module
from tx8lab.core.zoo import build
from tx8lab.errors import Tx8labError
from tx8lab.hw import ChipConfig, get_preset

HW = get_preset("tx81")


def _module() -> Module:
    """Module: x -> Neg -> Relu (output), a dead Abs, and a foldable Neg of a constant."""
    b = Builder()
    x = b.input((2, 3), "f32")
    c = b.constant([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], "f32")
    y = b.op("Relu", b.op("Neg", x))
    b.op("Abs", x)
    b.output(b.op("Add", y, b.op("Neg", c)))
    return b.finish()


@dataclass(frozen=True)
class _Tag(Pass):
    """Test pass: sets attribute ``tag_<name>`` on every top-level op (a new module)."""

    label: str = knob("x", "value written")
    mode: Literal["all", "first"] = knob("all", "which ops")

    def run(self, module: Module, hw: ChipConfig) -> PassResult:
        del hw
        key = "tag_" + self.name.replace("-", "_")
        ops = list(module.main.ops)
        stop = len(ops) - 1 if self.mode == "all" else 1
        for i in range(stop):
            ops[i] = ops[i].with_attrs(**{key: self.label})
        out = module.with_function(module.main.with_ops(ops))
        return PassResult(
            out, (self.decide(None, "tagged", f"label {self.label}"),), {"tagged": stop}
        )


@dataclass(frozen=True)
class TagA(_Tag):
    name: ClassVar[str] = "tag-a"


@dataclass(frozen=True)
class TagB(_Tag):
    name: ClassVar[str] = "tag-b"


@dataclass(frozen=True)
class TagC(_Tag):
    name: ClassVar[str] = "tag-c"


@dataclass(frozen=True)
class _Breaker(Pass):
    """Test pass: swaps ops 1 and 2, so a value is used before it is defined."""

    name: ClassVar[str] = "breaker"

    def run(self, module: Module, hw: ChipConfig) -> PassResult:
        del hw
        ops = list(module.main.ops)
        ops[1], ops[2] = ops[2], ops[1]
        return PassResult(module.with_function(module.main.with_ops(ops)))


# --------------------------------------------------------------------------- knobs


def test_knobs_come_from_the_dataclass_fields() -> None:
    knobs = {k.name: k for k in TagA.knobs()}
    assert knobs["label"].type is str
    assert knobs["label"].default == "x"
    assert knobs["mode"].choices == ("all", "first")
    assert TagA().knob_values() == {"label": "x", "mode": "all"}
    assert TagA().with_knobs(mode="first").mode == "first"
    with pytest.raises(Tx8labError, match=r"tag-a.mode must be one of all, first, got last"):
        TagA(mode="last")  # type: ignore[arg-type]
    with pytest.raises(Tx8labError, match="has no knob 'colour'; its knobs: label, mode"):
        TagA().with_knobs(colour="red")


def test_registered_passes_have_kebab_names_and_typed_knobs() -> None:
    assert set(DEFAULT_PIPELINE) <= set(PASSES)
    for name, cls in PASSES.items():
        assert name == cls.name
        assert name == name.lower()
        assert "_" not in name
        instance = cls()
        for spec in cls.knobs():
            assert spec.help, f"{name}.{spec.name} has no help text"
            assert isinstance(getattr(instance, spec.name), spec.type)


def test_build_pipeline_parses_knob_strings() -> None:
    fold, dce, *_ = build_pipeline(
        overrides=["fold-constants.max_bytes=2Ki", "dce.recurse_groups=no"]
    )
    assert fold.max_bytes == 2048  # type: ignore[attr-defined]
    assert dce.recurse_groups is False  # type: ignore[attr-defined]
    (only,) = build_pipeline(["dce"], {"dce.recurse_groups": False})
    assert only.name == "dce"


@pytest.mark.parametrize(
    ("names", "overrides", "message"),
    [
        (["nope"], {}, r"unknown pass 'nope'; known passes: fold-constants, dce"),
        (None, {"nope.x": "1"}, r"unknown pass 'nope'; known passes: fold-constants, dce"),
        (
            ["dce"],
            {"fold-constants.max_bytes": "1"},
            r"pass 'fold-constants' is not in the pipeline \(dce\)",
        ),
        (None, {"dce.depth": "1"}, r"pass 'dce' has no knob 'depth'; its knobs: recurse_groups"),
        (
            None,
            {"fold-constants.max_bytes": "lots"},
            r"knob fold-constants.max_bytes: 'lots' is not a valid int",
        ),
        (
            None,
            {"fold-constants.max_bytes": "1.5"},
            r"knob fold-constants.max_bytes: '1.5' is not a valid int",
        ),
        (None, {"fold-constants.max_bytes": "-1"}, r"fold-constants.max_bytes must be >= 0"),
        (
            None,
            {"dce.recurse_groups": "maybe"},
            r"knob dce.recurse_groups: 'maybe' is not a valid bool \(true/false\)",
        ),
        (None, {"max_bytes": "1"}, r"is not <pass>.<knob>"),
        (None, ["fold-constants.max_bytes"], r"is not pass.knob=value"),
    ],
)
def test_build_pipeline_errors_name_what_is_valid(
    names: list[str] | None, overrides: object, message: str
) -> None:
    with pytest.raises(Tx8labError, match=message):
        build_pipeline(names, overrides)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- running


def test_run_pipeline_yields_one_step_per_pass_lazily() -> None:
    module = _module()
    steps = run_pipeline(module, ["fold-constants", "dce"], HW)
    first = next(steps)
    assert isinstance(first, Step)
    assert (first.index, first.name, first.before) == (0, "fold-constants", module)
    assert first.changed
    assert first.knobs == {"max_bytes": 1 << 20}
    assert first.elapsed_s >= 0
    assert first.stats["folded"] == 1
    second = next(steps)
    assert second.before is first.after
    assert second.num_ops_after < second.num_ops_before
    assert [d.op_id for d in second.decisions if d.choice == "removed"]
    with pytest.raises(StopIteration):
        next(steps)


def test_run_pipeline_until_stops_after_the_named_pass() -> None:
    steps = list(run_pipeline(_module(), [TagA(), TagB(), TagC()], HW, until="tag-b"))
    assert [s.name for s in steps] == ["tag-a", "tag-b"]
    with pytest.raises(
        Tx8labError,
        match=r"--until nope: no such pass in the pipeline "
        r"\(tag-a, tag-b, tag-c\)",
    ):
        run_pipeline(_module(), [TagA(), TagB(), TagC()], HW, until="nope")


def test_run_pipeline_applies_knob_settings() -> None:
    (step,) = run_pipeline(_module(), [TagA()], HW, knobs=["tag-a.label=hello"])
    assert step.after.main.ops[0].attrs["tag_tag_a"] == "hello"
    assert step.decisions == (Decision(None, "tagged", "label hello", "tag-a"),)


def test_unchanged_step_reports_changed_false() -> None:
    b = Builder()
    b.output(b.op("Relu", b.input((2,))))
    module = b.finish()
    steps = list(run_pipeline(module, ["fold-constants", "dce"], HW))
    assert all(not s.changed and s.after is module for s in steps)
    # a rebuilt but equal module is not "changed" either
    rebuilt = Module(
        (Function("main", Block(module.main.args, tuple(op.replace() for op in module.main.ops))),),
        module.attrs,
        module.next_id,
    )
    assert not Step(0, TagA(), module, PassResult(rebuilt), 0.0).changed


def test_passes_never_mutate_their_input() -> None:
    module = build("tiny_transformer_block")
    text = print_module(module)
    for _ in run_pipeline(module, [*DEFAULT_PIPELINE, TagA(), TagB()], HW):
        pass
    assert print_module(module) == text


@functools.cache
def _pipeline_inputs() -> dict[str, Module]:
    """Each default-pipeline pass's input module on a zoo model, by pass name."""
    module = build("tiny_transformer_block")
    return {step.pass_.name: step.before for step in run_pipeline(module, DEFAULT_PIPELINE, HW)}


@pytest.mark.parametrize("name", list(PASSES))
def test_every_registered_pass_leaves_its_input_unchanged(name: str) -> None:
    inputs = _pipeline_inputs()
    # the grouping strategies run where the ``group`` pass runs
    module = inputs.get(name, inputs["group"])
    text = print_module(module)
    result = PASSES[name]().run(module, HW)
    assert print_module(module) == text
    assert result.module is not None


def test_a_verifier_failure_names_the_pass_and_the_op() -> None:
    module = _module()
    relu = module.main.ops[2]
    assert relu.kind == "tx8be.Relu"
    with pytest.raises(Tx8labError) as info:
        list(run_pipeline(module, [TagA(), _Breaker()], HW))
    assert str(info.value) == (
        "pass breaker (step 1) produced a module that does not verify: "
        f"%{relu.id} tx8be.Relu: operand 0 is used before it is defined (ops out of "
        "topological order, a cycle, or a value from another scope)"
    )
    # without the verifier the broken module passes through
    steps = list(run_pipeline(module, [_Breaker()], HW, instruments=[]))
    assert steps[0].after.main.ops[1] is relu


def test_a_pass_error_is_prefixed_with_the_pass_name() -> None:
    @dataclass(frozen=True)
    class Fails(Pass):
        name: ClassVar[str] = "fails"

        def run(self, module: Module, hw: ChipConfig) -> PassResult:
            raise Tx8labError("%3 tx8be.Gemm: cannot split")

    with pytest.raises(Tx8labError, match=r"^pass fails \(step 0\): %3 tx8be.Gemm: cannot"):
        list(run_pipeline(_module(), [Fails()], HW))


def test_pass_apply_changes_knobs_for_one_call() -> None:
    result = TagA().apply(_module(), HW, label="once")
    assert result.module.main.ops[0].attrs["tag_tag_a"] == "once"


def test_decision_json_and_ids() -> None:
    d = Decision(3, "folded", "all operands constant", "fold-constants", (9,), {"bytes": 8})
    assert d.op_ids == (3, 9)
    assert d.to_json() == {
        "pass": "fold-constants",
        "op_id": 3,
        "choice": "folded",
        "reason": "all operands constant",
        "related_ids": [9],
        "data": {"bytes": 8},
    }
    hash(d)  # decisions can go in sets although data is a dict


# --------------------------------------------------------------------------- Explorer


def test_explorer_reruns_only_from_the_changed_pass() -> None:
    ex = Explorer(_module(), [TagA(), TagB(), TagC()], HW)
    first = ex.steps
    assert dict(ex.run_count) == {"tag-a": 1, "tag-b": 1, "tag-c": 1}
    assert ex.steps is first  # nothing changed: no work at all

    ex.set_knob("tag-b.label", "y")
    steps = ex.steps
    assert dict(ex.run_count) == {"tag-a": 1, "tag-b": 2, "tag-c": 2}
    assert steps[0].cached
    assert not steps[1].cached
    assert not steps[2].cached
    assert steps[0].after is first[0].after
    assert ex.final.main.ops[0].attrs["tag_tag_b"] == "y"

    ex.set_knob("tag-c.mode", "first")
    _ = ex.steps
    assert dict(ex.run_count) == {"tag-a": 1, "tag-b": 2, "tag-c": 3}

    # back to the first settings: every result comes from the cache
    ex.set_knob("tag-b.label", "x")
    ex.set_knob("tag-c.mode", "all")
    steps = ex.steps
    assert dict(ex.run_count) == {"tag-a": 1, "tag-b": 2, "tag-c": 3}
    assert all(s.cached for s in steps)
    assert ex.final is first[2].after

    ex.set_knob("tag-a.label", "z")
    _ = ex.steps
    assert dict(ex.run_count) == {"tag-a": 2, "tag-b": 3, "tag-c": 4}


def test_explorer_compares_modules_once_per_cached_result(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import tx8lab.core.passes.base as pipeline

    calls: list[int] = []
    real = pipeline.same_module

    def counting(a: Module, b: Module) -> bool:
        calls.append(1)
        return real(a, b)

    monkeypatch.setattr(pipeline, "same_module", counting)
    ex = Explorer(_module(), [TagA(), TagB()], HW)
    assert [s.changed for s in ex.steps] == [True, True]
    assert len(calls) == 2
    ex.set_knob("tag-b.label", "y")
    assert [s.changed for s in ex.steps] == [True, True]
    assert len(calls) == 3  # tag-a's answer came with its cached result
    ex.set_knob("tag-b.label", "x")
    assert [s.changed for s in ex.steps] == [True, True]
    assert len(calls) == 3  # both results cached, both answers too


def test_explorer_reruns_everything_for_new_hw_or_module() -> None:
    ex = Explorer(_module(), [TagA(), TagB()], HW)
    _ = ex.steps
    ex.hw = HW.with_overrides({"tile.spm_bytes": "2Mi"})
    _ = ex.steps
    assert dict(ex.run_count) == {"tag-a": 2, "tag-b": 2}
    ex.module = _module()
    _ = ex.final
    assert dict(ex.run_count) == {"tag-a": 3, "tag-b": 3}


def test_explorer_with_real_passes_and_until() -> None:
    module = _module()
    ex = Explorer(module, ["fold-constants", "dce"], HW)
    assert [s.name for s in ex.steps] == ["fold-constants", "dce"]
    # fold made a new module; a new fold knob re-runs fold, which folds the same way but
    # builds a new module object, so dce re-runs too
    ex.set_knob("fold-constants.max_bytes", "4Ki")
    _ = ex.steps
    assert dict(ex.run_count) == {"fold-constants": 2, "dce": 2}
    ex.set_knob("dce.recurse_groups", False)
    _ = ex.steps
    assert dict(ex.run_count) == {"fold-constants": 2, "dce": 3}
    assert ex.knobs() == {"fold-constants.max_bytes": 4096, "dce.recurse_groups": False}
    ex.until = "fold-constants"
    assert [s.name for s in ex.steps] == ["fold-constants"]
    assert ex.step("fold-constants").stats["folded"] == 1
    assert dict(ex.run_count) == {"fold-constants": 2, "dce": 3}
    with pytest.raises(Tx8labError, match="no executed step named 'dce'"):
        ex.step("dce")
    with pytest.raises(Tx8labError, match="no such pass"):
        ex.until = "codegen"
    with pytest.raises(Tx8labError, match="has no knob"):
        ex.set_knob("dce.nope", 1)


def test_explorer_final_without_passes_is_the_input() -> None:
    module = _module()
    assert Explorer(module, [], HW).final is module


def test_ops_are_shared_between_snapshots() -> None:
    """Copy-on-write: DCE keeps the ops it does not remove as the same objects."""
    module = _module()
    (step,) = run_pipeline(module, ["dce"], HW)
    kept: list[Op] = [op for op in step.after.main.ops if op.id >= 0]
    by_id = module.op_by_id()
    assert all(op is by_id[op.id] for op in kept)


# --------------------------------------------------------------------------- instruments


class _Log(Instrument):
    """Records every hook call."""

    def __init__(self, answer: dict[str, PassResult] | None = None) -> None:
        self.calls: list[tuple[object, ...]] = []
        self.answer = answer or {}

    def start(self, run: Run) -> None:
        self.calls.append(("start", run.hw.name, tuple(p.name for p in run.passes)))

    def before(self, index: int, pass_: Pass, module: Module) -> PassResult | None:
        self.calls.append(("before", index, pass_.name))
        return self.answer.get(pass_.name)

    def after(self, step: Step) -> None:
        self.calls.append(("after", step.index, step.name, step.cached))

    def finish(self) -> None:
        self.calls.append(("finish",))


def test_instrument_hooks_run_in_order_and_a_before_result_skips_the_pass() -> None:
    module = _module()
    canned = PassResult(module)
    first, second = _Log({"tag-b": canned}), _Log({"tag-b": PassResult(_module())})
    steps = list(run_pipeline(module, [TagA(), TagB()], HW, instruments=[first, second]))
    assert first.calls == [
        ("start", HW.name, ("tag-a", "tag-b")),
        ("before", 0, "tag-a"),
        ("after", 0, "tag-a", False),
        ("before", 1, "tag-b"),
        ("after", 1, "tag-b", True),
        ("finish",),
    ]
    # the first answer wins: the second instrument is not asked
    assert ("before", 1, "tag-b") not in second.calls
    assert ("after", 1, "tag-b", True) in second.calls
    assert steps[1].result is canned
    assert steps[1].cached
    assert steps[1].elapsed_s == 0.0


def test_finish_runs_when_a_pass_fails() -> None:
    log = _Log()
    with pytest.raises(Tx8labError, match="does not verify"):
        list(run_pipeline(_module(), [TagA(), _Breaker()], HW, instruments=[Verify(), log]))
    assert log.calls[-1] == ("finish",)
    assert ("after", 1, "breaker", False) not in log.calls  # Verify stopped the run first


def test_timing_collects_the_steps_wall_time() -> None:
    timing = Timing()
    steps = list(run_pipeline(_module(), [TagA(), TagB()], HW, instruments=[timing]))
    assert timing.seconds == {s.index: s.elapsed_s for s in steps}
    assert timing.total_s == pytest.approx(sum(s.elapsed_s for s in steps))
    assert timing.run_s >= timing.total_s
    text = timing.render()
    assert "tag-a" in text
    assert "total" in text


def test_print_after_all_writes_each_module_after_a_header() -> None:
    stream = io.StringIO()
    dump = PrintAfterAll(stream, title="the IR")
    steps = list(run_pipeline(_module(), [TagA(), TagB()], HW, instruments=[dump]))
    assert stream.getvalue() == "// the IR\n" + "".join(
        f"// -----// IR Dump After {s.name} (step {s.index}) //----- //\n"
        + print_module(s.after)
        + "\n"
        for s in steps
    )


def test_default_instruments_verify_and_an_empty_list_does_not() -> None:
    assert [type(i) for i in default_instruments()] == [Verify, Progress]
    with pytest.raises(Tx8labError, match=r"pass breaker \(step 0\) produced a module"):
        list(run_pipeline(_module(), [_Breaker()], HW))
    (step,) = run_pipeline(_module(), [_Breaker()], HW, instruments=[])
    assert step.name == "breaker"


@dataclass(frozen=True)
class _Counting(Pass):
    """Test pass: reports progress over ``units`` units of work, changes nothing."""

    name: ClassVar[str] = "counting"
    units: int = knob(3, "units of work", min=0)

    def run(self, module: Module, hw: ChipConfig) -> PassResult:
        return self.run_with(module, hw, PassContext())

    def run_with(self, module: Module, hw: ChipConfig, context: PassContext) -> PassResult:
        del hw
        for done in range(1, self.units + 1):
            context.progress(done, self.units, unit="unit", hits=done - 1)
        return PassResult(module, stats={"units": self.units})


class _ProgressLog(Instrument):
    def __init__(self) -> None:
        self.reports: list[tuple[int, str, int, int, dict[str, object]]] = []

    def progress(
        self, index: int, pass_: Pass, done: int, total: int, postfix: Mapping[str, object]
    ) -> None:
        self.reports.append((index, pass_.name, done, total, dict(postfix)))


def test_a_pass_reports_progress_through_its_context() -> None:
    log = _ProgressLog()
    list(run_pipeline(_module(), [TagA(), _Counting()], HW, instruments=[log]))
    assert log.reports == [
        (1, "counting", d, 3, {"unit": "unit", "hits": d - 1}) for d in (1, 2, 3)
    ]
    # run() without a runner reports to nobody
    assert _Counting().run(_module(), HW).stats == {"units": 3}


def test_progress_draws_a_tqdm_bar_when_enabled() -> None:
    stream = io.StringIO()
    bar = Progress(enabled=True, file=stream, mininterval=0)
    list(run_pipeline(_module(), [_Counting(units=4)], HW, instruments=[bar]))
    text = stream.getvalue()
    assert "counting" in text
    assert "4/4" in text
    assert "hits=3" in text
    assert "unit" in text
    assert not bar._bars  # closed after the step
    quiet = io.StringIO()
    list(run_pipeline(_module(), [_Counting()], HW, instruments=[Progress(False, file=quiet)]))
    assert quiet.getvalue() == ""


def test_progress_auto_is_off_without_a_terminal_or_when_asked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TX8LAB_NO_PROGRESS", "1")
    assert not is_interactive()
    monkeypatch.delenv("TX8LAB_NO_PROGRESS")
    monkeypatch.setattr(sys, "stderr", io.StringIO())  # not a terminal
    monkeypatch.delitem(sys.modules, "ipykernel", raising=False)
    assert not is_interactive()
    auto = Progress(file=io.StringIO())
    list(run_pipeline(_module(), [_Counting()], HW, instruments=[auto]))
    assert auto.enabled is False


def test_cache_instrument_answers_the_same_pass_on_the_same_module() -> None:
    module = _module()
    cache = Cache(size=2)
    first = list(run_pipeline(module, [TagA(), TagB()], HW, instruments=[cache]))
    again = list(run_pipeline(module, [TagA(), TagB()], HW, instruments=[cache]))
    assert [s.cached for s in again] == [True, True]
    assert again[1].after is first[1].after
    assert again[0].elapsed_s == first[0].elapsed_s
    assert dict(cache.run_count) == {"tag-a": 1, "tag-b": 1}
    assert cache.hits == 2
    # another hw is another key; the LRU keeps two results
    other = HW.with_overrides({"tile.spm_bytes": "2Mi"})
    list(run_pipeline(module, [TagA(), TagB()], other, instruments=[cache]))
    assert dict(cache.run_count) == {"tag-a": 2, "tag-b": 2}
    assert len(cache) == 2
    cache.clear()
    assert len(cache) == 0


def test_explorer_takes_instruments_and_keeps_its_cache_last() -> None:
    timing = Timing()
    ex = Explorer(_module(), [TagA(), TagB()], HW, instruments=[timing], cache_size=8)
    assert ex.instruments == (timing, ex.cache)
    _ = ex.steps
    assert set(timing.seconds) == {0, 1}
    ex.set_knob("tag-b.label", "y")
    _ = ex.steps
    assert ex.cache.hits == 1
    assert dict(ex.run_count) == {"tag-a": 1, "tag-b": 2}
    ex.clear_cache()
    _ = ex.steps
    assert dict(ex.run_count) == {"tag-a": 2, "tag-b": 3}
