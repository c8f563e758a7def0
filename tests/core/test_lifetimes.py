"""buffer-life and buffer-merge (tx8lab.core.schedule.lifetimes)."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.core.test_sw_pipeline import (
    batchnorm_loop,
    in_place_loop,
    load_compute_store,
    nested_psum,
    schedule_inputs,
)
from tx8lab.core.schedule.lifetimes import (
    buffer_life,
    buffer_merge,
    live_bytes_per_step,
    merge_overlap,
    spm_lifetimes,
)
from tx8lab.core.schedule.sw_pipeline import expand, sw_pipeline
from tx8lab.core.schedule.tasks import Lifetime, ScheduleInput
from tx8lab.errors import Tx8labError


def _rows(lifetimes: list[Lifetime]) -> list[tuple[str, int, int, int, str]]:
    return [(lt.id, lt.lower, lt.upper, lt.size, lt.buffer) for lt in lifetimes]


def test_chain_producer_to_last_consumer() -> None:
    inp = load_compute_store()
    got = spm_lifetimes(sw_pipeline(inp), inp)
    assert _rows(got) == [
        ("%0", 0, 3, 4096, "%0"),  # ld step 0 .. ne step 2
        ("%1", 1, 3, 2048, "%1"),
        ("%2", 2, 4, 1024, "%2"),  # ne step 2 .. st step 3
    ]


def test_in_place_chain_traced_to_first_producer() -> None:
    inp = in_place_loop()
    t = sw_pipeline(inp, multi_buffer=2)
    raw = buffer_life(t, inp)
    # the Relu result r lives in x's memory: no label of its own
    assert {lt.buffer for lt in raw} == {"x"}
    assert {lt.id for lt in raw} == {"x@0", "x@1"}
    # from ld:x (steps 0, 1) to st:r (steps 2, 3); the Relu's read/write intervals are
    # contained and dropped
    assert _rows(buffer_merge(raw)) == [("x@0", 0, 3, 512, "x"), ("x@1", 1, 4, 512, "x")]
    one = spm_lifetimes(sw_pipeline(inp, multi_buffer=1), inp)
    assert _rows(one) == [("x@0", 0, 3, 512, "x"), ("x@1", 3, 6, 512, "x")]


def test_psum_one_interval_per_accumulation() -> None:
    inp = nested_psum()
    got = {lt.id: (lt.lower, lt.upper) for lt in spm_lifetimes(sw_pipeline(inp), inp)}
    # ne:mm[0,0] at step 2 initialises, st:acc[0] at step 7 is the last read
    assert got["acc@0"] == (2, 8)
    assert got["acc@1"] == (8, 14)
    one = {
        lt.id: (lt.lower, lt.upper) for lt in spm_lifetimes(sw_pipeline(inp, multi_buffer=1), inp)
    }
    assert one["acc@0"] == (2, 10)
    assert one["acc@1"] == (11, 19)
    # the raw intervals of one accumulation all start at its first update
    raw = [lt for lt in buffer_life(sw_pipeline(inp), inp) if lt.id == "acc@0"]
    assert {lt.lower for lt in raw} == {2}
    assert sorted(lt.upper for lt in raw) == [3, 5, 5, 7, 7, 8]  # update writes + reads, the store


def test_imm_lives_in_its_steps() -> None:
    inp = batchnorm_loop()
    t = sw_pipeline(inp)
    step = {s.iteration: s.step for s in t.slots if s.task == "ct:bn"}
    imm = [lt for lt in spm_lifetimes(t, inp) if lt.buffer == "bn.imm"]
    assert _rows(imm) == [
        (f"bn.imm@{i}", step[(i,)], step[(i,)] + 1, 8192, "bn.imm") for i in range(4)
    ]


def test_multi_buffer_doubles_the_loop_buffers() -> None:
    inp = batchnorm_loop()
    two = live_bytes_per_step(spm_lifetimes(sw_pipeline(inp, multi_buffer=2), inp))
    one = live_bytes_per_step(spm_lifetimes(sw_pipeline(inp, multi_buffer=1), inp))
    # steady state: in, out of two iterations + one imm + scale; single-buffered: one
    # iteration's in + out + imm + scale
    assert max(two) == 2 * 4096 + 2 * 4096 + 8192 + 256
    assert max(one) == 4096 + 4096 + 8192 + 256


def test_mismatched_timeline_is_rejected() -> None:
    with pytest.raises(Tx8labError, match="expands to"):
        buffer_life(sw_pipeline(load_compute_store()), batchnorm_loop())


def test_timeline_breaking_a_dependence_is_rejected() -> None:
    inp = load_compute_store()
    t = sw_pipeline(inp)
    # the store of %2 moved to step 1, before the matmul (step 2) that produces %2
    slots = tuple(dataclasses.replace(s, step=1) if s.task == "st:%2" else s for s in t.slots)
    with pytest.raises(Tx8labError, match="before its producer's step 2"):
        buffer_life(dataclasses.replace(t, slots=slots), inp)


# ----------------------------------------------------------------------------- merge


def test_merge_same_start_keeps_the_longest() -> None:
    ls = [Lifetime("v", 2, 4, 8, "v"), Lifetime("v", 2, 9, 8, "v"), Lifetime("v", 2, 6, 8, "v")]
    assert _rows(buffer_merge(ls)) == [("v", 2, 9, 8, "v")]


def test_merge_drops_contained_keeps_partial_overlap() -> None:
    ls = [
        Lifetime("v", 0, 5, 8),
        Lifetime("v", 1, 3, 8),  # inside [0, 5): dropped
        Lifetime("v", 4, 8, 8),  # overlaps [0, 5) without being inside: kept (seed)
        Lifetime("v", 5, 7, 8),  # inside the new active [4, 8): dropped
        Lifetime("v", 9, 10, 8),  # disjoint: kept
    ]
    assert _rows(buffer_merge(ls)) == [
        ("v", 0, 5, 8, ""),
        ("v/1", 4, 8, 8, ""),
        ("v/2", 9, 10, 8, ""),
    ]


def test_merge_chain_of_overlaps() -> None:
    # sorted by start: [0,10) [1,11) [2,12) [3,9); each of the first three sticks out of
    # the active one and becomes active; [3,9) is inside the active [2,12)
    ls = [
        Lifetime("v", 0, 10, 1),
        Lifetime("v", 2, 12, 1),
        Lifetime("v", 1, 11, 1),
        Lifetime("v", 3, 9, 1),
    ]
    assert [(lt.lower, lt.upper) for lt in merge_overlap(ls)] == [(0, 10), (1, 11), (2, 12)]


def test_merge_labels_are_independent() -> None:
    ls = [Lifetime("a", 0, 10, 4), Lifetime("b", 2, 3, 4)]
    assert _rows(buffer_merge(ls)) == [("a", 0, 10, 4, ""), ("b", 2, 3, 4, "")]


def test_merge_survivor_takes_the_larger_size() -> None:
    ls = [Lifetime("v", 0, 5, 8), Lifetime("v", 1, 2, 32)]
    assert _rows(buffer_merge(ls)) == [("v", 0, 5, 32, "")]


def test_merge_rejects_empty_interval() -> None:
    with pytest.raises(Tx8labError, match="lower < upper"):
        buffer_merge([Lifetime("v", 3, 3, 8)])


def test_merge_rejects_clashing_ids() -> None:
    with pytest.raises(Tx8labError, match="clash"):
        buffer_merge([Lifetime("v", 0, 2, 1), Lifetime("v", 1, 3, 1), Lifetime("v/1", 5, 6, 1)])


def test_live_bytes_per_step_matches_brute_force() -> None:
    ls = [Lifetime("a", 0, 3, 5), Lifetime("b", 2, 4, 7), Lifetime("c", 6, 7, 1)]
    want = [sum(lt.size for lt in ls if lt.lower <= s < lt.upper) for s in range(7)]
    assert live_bytes_per_step(ls) == want == [5, 5, 12, 7, 0, 0, 1]


@given(schedule_inputs(), st.sampled_from([1, 2, 3]))
def test_lifetime_properties(inp: ScheduleInput, multi_buffer: int) -> None:
    t = sw_pipeline(inp, multi_buffer=multi_buffer)
    raw = buffer_life(t, inp)
    merged = buffer_merge(raw)
    # ids unique; one survivor per label (buffer_life's intervals of a label share a start)
    assert len({lt.id for lt in merged}) == len(merged) == len({lt.id for lt in raw})
    by_id = {lt.id: lt for lt in merged}
    for lt in raw:
        keep = by_id[lt.id]
        assert keep.lower <= lt.lower < lt.upper <= keep.upper
        assert keep.size >= lt.size
    # every access step of a value is inside its lifetime
    step = {(s.task, s.iteration): s.step for s in t.slots}
    for inst in expand(inp, multi_buffer):
        s = step[inst.key]
        for u in (*inst.reads, *inst.writes):
            assert any(lt.buffer == u.root and lt.lower <= s < lt.upper for lt in merged)
    # in the timeline's own steps at most multi_buffer generations of a value are live at
    # once (the lifetimes may be longer: they also hold under program order)
    instances = expand(inp, multi_buffer)
    span: dict[tuple[str, int], list[int]] = {}
    order: dict[tuple[str, int], list[int]] = {}
    for n, inst in enumerate(instances):
        for u in (*inst.reads, *inst.writes):
            if inp.buffers[u.buffer].kind == "imm":
                continue
            s = step[inst.key]
            got = span.setdefault((u.root, u.generation), [s, s])
            got[0], got[1] = min(got[0], s), max(got[1], s)
            at = order.setdefault((u.root, u.generation), [n, n])
            at[1] = n
    for root in {r for r, _ in span}:
        mine = [v for (r, _), v in span.items() if r == root]
        for s in range(t.steps):
            assert sum(lo <= s <= hi for lo, hi in mine) <= multi_buffer
    # two generations live at once in program order never share a step-free lifetime pair
    label = {(lt.buffer, lt.id): lt for lt in merged}
    gens = {b.id: 0 for b in inp.buffers.values()}
    for r, g in span:
        gens[r] = max(gens[r], g + 1)
    keys = sorted(order)
    for i, a in enumerate(keys):
        for b in keys[i + 1 :]:
            (a0, a1), (b0, b1) = order[a], order[b]
            if a0 <= b1 and b0 <= a1:  # both live at one point of program order
                la = label[(a[0], a[0] if gens[a[0]] == 1 else f"{a[0]}@{a[1]}")]
                lb = label[(b[0], b[0] if gens[b[0]] == 1 else f"{b[0]}@{b[1]}")]
                assert la.lower < lb.upper, (a, b)
                assert lb.lower < la.upper, (a, b)
