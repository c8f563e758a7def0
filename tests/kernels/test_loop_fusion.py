"""The affine loop-fusion explorer without mlir-opt: seed 003's walk-through and the nests.

Every number pinned here was cross-checked with ``mlir-opt`` 22 by
``test_loop_fusion_mlir.py`` (the fused IR and slice bounds) or comes from
``../shared/reference/hw-fa-fusion.md`` §2.1 (the seed example's per-depth table).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tx8lab.errors import Tx8labError
from tx8lab.hw import TX81
from tx8lab.kernels.loop_fusion import (
    DEFAULT_TOLERANCE,
    FusionOptions,
    Lin,
    NestBuilder,
    access_relation,
    analyze_pair,
    can_fuse,
    check_dependence,
    collect_accesses,
    dependence_constraints,
    fuse,
    fuse_loops,
    has_cyclic_dependence,
    parse_function,
    parse_functions,
    print_function,
    producer_consumer_pairs,
    sink_sequential_loops,
    spm_report,
)
from tx8lab.kernels.loop_fusion.deps import Access, is_loop_parallel
from tx8lab.kernels.loop_fusion.driver import DenseMapOrder
from tx8lab.kernels.loop_fusion.ir import Loop
from tx8lab.kernels.loop_fusion.slices import (
    FAIL_FUSION_DEPENDENCE,
    GENERIC,
    SUCCESS,
    innermost_common_depth,
    projected_relation,
)

NESTS = Path(__file__).resolve().parent / "nests"


def load(name: str):  # type: ignore[no-untyped-def]
    path = NESTS / f"{name}.mlir"
    return parse_function(path.read_text(encoding="utf-8"), str(path))


def _seed_accesses() -> tuple[Access, Access]:
    func = load("seed_bmm_chain")
    accesses = collect_accesses(func)
    store = next(a for a in accesses if a.is_store and a.memref == "arg2")
    load_c = next(a for a in accesses if not a.is_store and a.memref == "arg2" and a.path[0] == 1)
    return store, load_c


def _rows(text: str) -> list[tuple[int, ...]]:
    return [tuple(int(v) for v in line.split()) for line in text.strip().splitlines()]


# The seed's dumps of srcRel and dstRel (11 constraints each) and of the composed relation
# (19 constraints): equalities first, then inequalities, constant last.
SEED_SRC_REL = """
1 0 0 0 -1 0 0 0
0 1 0 0 0 -1 0 0
0 0 1 0 0 0 -1 0
1 0 0 0 0 0 0 0
-1 0 0 0 0 0 0 7
0 1 0 0 0 0 0 0
0 -1 0 0 0 0 0 127
0 0 1 0 0 0 0 0
0 0 -1 0 0 0 0 511
0 0 0 1 0 0 0 0
0 0 0 -1 0 0 0 383
"""
SEED_DST_REL = """
1 0 0 0 -1 0 0 0
0 1 0 0 0 -1 0 0
0 0 0 1 0 0 -1 0
1 0 0 0 0 0 0 0
-1 0 0 0 0 0 0 7
0 1 0 0 0 0 0 0
0 -1 0 0 0 0 0 127
0 0 1 0 0 0 0 0
0 0 -1 0 0 0 0 63
0 0 0 1 0 0 0 0
0 0 0 -1 0 0 0 511
"""
SEED_COMPOSED = """
-1 0 0 0 1 0 0 0 0
0 -1 0 0 0 1 0 0 0
0 0 -1 0 0 0 0 1 0
1 0 0 0 0 0 0 0 0
-1 0 0 0 0 0 0 0 7
0 1 0 0 0 0 0 0 0
0 -1 0 0 0 0 0 0 127
0 0 1 0 0 0 0 0 0
0 0 -1 0 0 0 0 0 511
0 0 0 1 0 0 0 0 0
0 0 0 -1 0 0 0 0 383
0 0 0 0 1 0 0 0 0
0 0 0 0 -1 0 0 0 7
0 0 0 0 0 1 0 0 0
0 0 0 0 0 -1 0 0 127
0 0 0 0 0 0 1 0 0
0 0 0 0 0 0 -1 0 63
0 0 0 0 0 0 0 1 0
0 0 0 0 0 0 0 -1 511
"""


# --------------------------------------------------------------------------- seed 003


def test_seed_access_relations_are_the_seeds_matrices() -> None:
    store, load_c = _seed_accesses()
    src = access_relation(store)
    dst = access_relation(load_c, "j")
    assert src.columns == ("i0", "i1", "i2", "i3", "l0", "l1", "l2")
    assert list(src.equalities) + list(src.inequalities) == _rows(SEED_SRC_REL)
    assert len(src.equalities) == 3
    assert list(dst.equalities) + list(dst.inequalities) == _rows(SEED_DST_REL)
    assert "11 constraints" in src.to_text()


def test_seed_composed_relation_has_the_seeds_19_rows_and_is_not_empty() -> None:
    store, load_c = _seed_accesses()
    composed = dependence_constraints(store, load_c, 1)
    assert composed is not None
    assert composed.columns == ("i0", "i1", "i2", "i3", "j0", "j1", "j2", "j3")
    assert list(composed.equalities) + list(composed.inequalities) == _rows(SEED_COMPOSED)
    assert composed.num_constraints == 19
    assert not composed.is_empty()
    assert check_dependence(store, load_c, 1) is not None


def test_seed_projection_to_depth_1_pins_i0_to_j0() -> None:
    store, load_c = _seed_accesses()
    composed = dependence_constraints(store, load_c, 1)
    assert composed is not None
    projected = projected_relation(composed, 4, 1)
    # { [i0, i1, i2, i3] -> [j0 = i0] : 0 <= i0 <= 7 and ... 0 <= i3 <= 383 }
    assert projected.columns == ("i0", "i1", "i2", "i3", "j0")
    assert projected.equalities in (((-1, 0, 0, 0, 1, 0),), ((1, 0, 0, 0, -1, 0),))
    bounds = {(r[:5], r[5]) for r in projected.inequalities}
    assert ((0, 0, 0, -1, 0), 383) in bounds
    assert ((0, 0, -1, 0, 0), 511) in bounds


SEED_TRIPS = [(1, 128, 512, 384), (1, 1, 512, 384), (1, 1, 512, 384), (1, 1, 1, 384)]


def test_seed_slice_bounds_per_depth() -> None:
    func = load("seed_bmm_chain")
    checks = [can_fuse(func, 0, 1, d) for d in range(1, 5)]
    assert [c.result for c in checks] == [SUCCESS] * 4
    assert [c.slice.trip_counts for c in checks if c.slice] == SEED_TRIPS
    depth4 = checks[3].slice
    assert depth4 is not None
    # the seed's lbs[k]/ubs[k] at depth 4
    assert depth4.bounds_text() == (
        "[(d0, d1, d2, d3) -> (d0), (d0, d1, d2, d3) -> (d0 + 1)] "
        "[(d0, d1, d2, d3) -> (d1), (d0, d1, d2, d3) -> (d1 + 1)] "
        "[(d0, d1, d2, d3) -> (d3), (d0, d1, d2, d3) -> (d3 + 1)] "
        "[(d0, d1, d2, d3) -> (0), (d0, d1, d2, d3) -> (384)]"
    )
    assert depth4.iteration_count == 384
    assert checks[0].slice is not None
    assert checks[0].slice.bounds_text().startswith("[(d0) -> (d0), (d0) -> (d0 + 1)]")


def test_seed_costs_and_the_chosen_depth() -> None:
    analysis = analyze_pair(load("seed_bmm_chain"), 0, 1)
    assert analysis.src_cost == 8 * 128 * 512 * 384 * 6 == 1_207_959_552
    assert analysis.dst_cost == 8 * 128 * 64 * 512 * 6 == 201_326_592
    assert [r.fused_cost for r in analysis.rows] == [
        1_409_286_144,
        1_409_286_144,
        77_510_737_920,
        77_510_737_920,
    ]
    assert [r.additional_compute_fraction for r in analysis.rows] == [0.0, 0.0, 54.0, 54.0]
    assert [r.storage_reduction for r in analysis.rows] == [1.0] * 4
    assert [r.trip_counts for r in analysis.rows] == SEED_TRIPS
    assert analysis.src_footprint_bytes == 9_961_472
    assert analysis.dst_footprint_bytes == 3_407_872
    assert analysis.fused_footprint_bytes == 5_505_024
    assert analysis.cyclic  # C += A*B over i3 is a dependence cycle
    assert analysis.tolerance == DEFAULT_TOLERANCE == pytest.approx(0.3)
    assert analysis.tolerance_used == 0.0
    assert analysis.max_legal_depth == 4
    assert analysis.chosen_depth == 2
    assert [r.within_tolerance for r in analysis.rows] == [True, True, False, False]
    assert "deeper depths 3, 4" in analysis.decision
    assert [r.private_shape for r in analysis.rows] == [
        (1, 128, 512),
        (1, 1, 512),
        (1, 1, 512),
        (1, 1, 1),
    ]


@pytest.mark.parametrize("tolerance", [0.3, 1.0, 54.0, 1000.0])
def test_seed_depth_2_for_any_tolerance(tolerance: float) -> None:
    """The producer's cycle forces the tolerance to 0 (PR #128397), as in MLIR 22."""
    analysis = analyze_pair(
        load("seed_bmm_chain"), 0, 1, FusionOptions(compute_tolerance=tolerance)
    )
    assert analysis.chosen_depth == 2
    assert analysis.tolerance_used == 0.0


def test_seed_maximal_fuses_nothing() -> None:
    run = fuse(load("seed_bmm_chain"), FusionOptions(maximal=True))
    assert run.steps == []
    assert print_function(run.function) == print_function(load("seed_bmm_chain"))


def test_seed_fused_structure() -> None:
    run = fuse(load("seed_bmm_chain"))
    (step,) = run.steps
    assert (step.depth, step.private, step.src_removed) == (2, (), True)
    (nest,) = [s for s in run.function.body if isinstance(s, Loop)]
    # for i0, i1 { for i2, i3 (producer row) ; for j2, j3 (consumer) }
    inner = nest.body[0]
    assert isinstance(inner, Loop)
    assert [type(s).__name__ for s in inner.body] == ["Loop", "Loop"]
    assert [s.trip_count for s in inner.body if isinstance(s, Loop)] == [512, 64]


def test_tolerance_decides_the_depth_without_a_cycle() -> None:
    func = load("elementwise_into_bmm")
    base = analyze_pair(func, 1, 2)
    assert not base.cyclic
    assert [r.trip_counts for r in base.rows] == [
        (1, 128, 512),
        (1, 1, 512),
        (1, 1, 512),
        (1, 1, 1),
    ]
    fractions = [r.additional_compute_fraction for r in base.rows]
    assert fractions[:2] == [0.0, 0.0]
    assert fractions[2] == fractions[3] == pytest.approx(0.4884, abs=1e-4)
    assert base.chosen_depth == 2
    loose = analyze_pair(func, 1, 2, FusionOptions(compute_tolerance=0.5))
    assert loose.chosen_depth == 4  # ties go to the deepest depth
    assert analyze_pair(func, 1, 2, FusionOptions(compute_tolerance=0.48)).chosen_depth == 2


# --------------------------------------------------------------------------- every nest

#: (src, dst, depth, privatized memrefs, src removed) per fusion, as mlir-opt does it
#: (checked by test_loop_fusion_mlir.py), default options.
EXPECTED_STEPS: dict[str, list[tuple[str, str, int, tuple[str, ...], bool]]] = {
    "seed_bmm_chain": [("nest0", "nest1", 2, (), True)],
    "seed_bmm_chain_local": [("nest0", "nest1", 2, ("C",), True)],
    "elementwise_chain": [
        ("nest0", "nest1", 2, ("t",), True),
        ("nest1", "nest2", 2, ("u",), True),
    ],
    "elementwise_into_bmm": [("nest0", "nest1", 2, ("C",), True)],
    "transpose_order": [("nest0", "nest1", 2, ("t",), True)],
    "matmul_bias_relu": [("nest0", "nest1", 2, ("C",), True)],
    "rowsum_broadcast": [("nest0", "nest1", 1, ("s",), True)],
    "rowsum_init_chain": [("nest1", "nest2", 1, (), True), ("nest0", "nest2", 1, ("s",), True)],
    "stencil3": [],
    "scale_colsum": [("nest0", "nest1", 2, ("t",), True)],
    "two_consumers": [("nest0", "nest2", 1, (), True), ("nest2", "nest1", 1, ("t",), True)],
    "even_odd": [],
    "tolerance_edge": [("nest0", "nest1", 1, ("t",), True)],
}

#: Per producer/consumer pair of the input: (src nest, dst nest, chosen depth, slice trip
#: counts per depth; None where fusion is illegal).
EXPECTED_PAIRS: dict[str, list[tuple[int, int, int | None, list[tuple[int, ...] | None]]]] = {
    "seed_bmm_chain": [(0, 1, 2, SEED_TRIPS)],  # type: ignore[list-item]
    "elementwise_chain": [(0, 1, 2, [(1, 32), (1, 1)]), (1, 2, 2, [(1, 32), (1, 1)])],
    "transpose_order": [(0, 1, 2, [(64, 1), (1, 1)])],
    "matmul_bias_relu": [(0, 1, 2, [(1, 16, 32), (1, 1, 32)])],
    "rowsum_broadcast": [(0, 1, 1, [(1, 64), (1, 64)])],
    "rowsum_init_chain": [
        (0, 1, 1, [(1,), None]),
        (0, 2, None, [None, None]),
        (1, 2, 1, [(1, 64), (1, 64)]),
    ],
    "stencil3": [(0, 1, None, [(3,)])],
    "scale_colsum": [(0, 1, 2, [(1, 64), (1, 1)])],
    "even_odd": [],
    "tolerance_edge": [(0, 1, 1, [(2,)])],
}


@pytest.mark.parametrize("name", sorted(EXPECTED_STEPS))
def test_fusion_steps(name: str) -> None:
    run = fuse(load(name))
    got = [(s.src_nest, s.dst_nest, s.depth, s.private, s.src_removed) for s in run.steps]
    assert got == EXPECTED_STEPS[name]


@pytest.mark.parametrize("name", sorted(EXPECTED_PAIRS))
def test_pair_tables(name: str) -> None:
    func = load(name)
    got = []
    for src, dst in producer_consumer_pairs(func):
        analysis = analyze_pair(func, src, dst)
        got.append(
            (
                func.nests.index(src),
                func.nests.index(dst),
                analysis.chosen_depth,
                [r.trip_counts for r in analysis.rows],
            )
        )
    assert got == EXPECTED_PAIRS[name]


def test_every_nest_file_has_expectations() -> None:
    names = {p.stem for p in NESTS.glob("*.mlir")}
    assert names == set(EXPECTED_STEPS)
    assert len(names) >= 6  # the seed example and at least five more


def test_stencil_needs_65_percent_extra_work() -> None:
    analysis = analyze_pair(load("stencil3"), 1, 2)
    (row,) = analysis.rows
    assert row.slice is not None
    assert row.slice.bounds_text() == "[(d0) -> (d0), (d0) -> (d0 + 3)]"
    assert row.fused_cost == 64 * (6 + 3 * 3)
    assert row.additional_compute_fraction == pytest.approx(960 / (66 * 3 + 64 * 6) - 1)
    assert analysis.chosen_depth is None
    assert "0.30" not in analysis.decision or "30.00%" in analysis.decision
    fused = fuse(load("stencil3"), FusionOptions(compute_tolerance=1.0))
    assert [s.depth for s in fused.steps] == [1]
    text = print_function(fused.function)
    assert "memref.alloc() : memref<3xf32>" in text
    assert "%alloc[-%arg2 + %arg3]" in text


def test_default_tolerance_is_mlirs_float_0_3() -> None:
    """Extra work of exactly 30%: fused within MLIR's default 0.30f, not within 0.3.

    13 * (4 + 2 * 2) = 1.3 * (14 * 2 + 13 * 4); in doubles the fraction is
    0.30000000000000004, above 0.3 and below float(0.3f) = 0.30000001192092896.
    """
    func = load("tolerance_edge")
    default = analyze_pair(func, 1, 2)
    assert default.rows[0].additional_compute_fraction == 104 / 80 - 1 > 0.3
    assert default.chosen_depth == 1
    assert analyze_pair(func, 1, 2, FusionOptions(compute_tolerance=0.3)).chosen_depth is None


def test_reduction_producer_reused_at_depth_1() -> None:
    analysis = analyze_pair(load("rowsum_broadcast"), 1, 2)
    assert analysis.cyclic
    depth1, depth2 = analysis.rows
    assert depth2.additional_compute_fraction == 12.0  # the 64-long sum redone 16 times
    assert depth1.additional_compute_fraction == 0.0
    assert analysis.chosen_depth == 1
    assert depth1.private_shape == (1,)


def test_multi_store_producer_uses_the_deepest_legal_depth() -> None:
    analysis = analyze_pair(load("matmul_bias_relu"), 2, 3)
    assert analysis.producer_stores == 2
    assert analysis.chosen_depth == analysis.max_legal_depth == 2
    assert "2 producer stores" in analysis.decision
    assert all(r.storage_reduction is None for r in analysis.rows)


def test_consumer_reduction_loop_is_sunk_before_fusing() -> None:
    func = load("scale_colsum")
    consumer = func.nests[1]
    assert not is_loop_parallel(func, (consumer,))
    assert is_loop_parallel(func, (consumer, 0))
    sunk = sink_sequential_loops(func, consumer)
    outer = sunk.body[consumer]
    assert isinstance(outer, Loop)
    assert outer.trip_count == 32  # i (parallel) now outside k (sequential)
    assert analyze_pair(func, func.nests[0], consumer).dst_sunk


def test_consumer_that_writes_the_produced_memref_limits_the_depth() -> None:
    func = load("rowsum_init_chain")
    init, reduce_ = func.nests[0], func.nests[1]
    assert can_fuse(func, init, reduce_, 1).result == SUCCESS
    assert can_fuse(func, init, reduce_, 2).result == FAIL_FUSION_DEPENDENCE


def test_no_integer_dependence_between_even_and_odd_elements() -> None:
    func = load("even_odd")
    store = next(a for a in collect_accesses(func) if a.is_store and a.memref == "t")
    read = next(a for a in collect_accesses(func) if not a.is_store and a.memref == "t")
    composed = dependence_constraints(store, read, 1)
    assert composed is not None
    assert composed.is_empty()  # 2i = 2j + 1 has rational but no integer solutions
    assert check_dependence(store, read, 1) is None
    assert producer_consumer_pairs(func) == []


def test_cycles() -> None:
    seed = load("seed_bmm_chain")
    assert has_cyclic_dependence(seed, (0,))
    ew = load("elementwise_chain")
    assert not any(has_cyclic_dependence(ew, (n,)) for n in ew.nests)


def test_generic_strategy_slices_read_read_pairs() -> None:
    # the generic strategy (the test pass) also slices the producer's loads
    func = load("seed_bmm_chain")
    generic = can_fuse(func, 0, 1, 4, GENERIC)
    assert generic.slice is not None
    assert generic.slice.trip_counts == (1, 1, 1, 384)


def test_private_buffer_against_the_tile_spm() -> None:
    report = spm_report(analyze_pair(load("seed_bmm_chain_local"), 1, 2), TX81)
    assert report.memref == "C"
    assert report.unfused_bytes == 8 * 128 * 512 * 4
    assert report.spm_usable_bytes == TX81.tile.spm_usable_bytes == 3 * 2**20 - 64 * 2**10
    assert report.chosen is not None
    assert report.chosen.private_shape == (1, 1, 512)
    assert report.chosen.private_bytes == 2048
    assert report.reduction == 1024
    # per (i0, i1): A row 1.5 KiB + B 768 KiB + C row 2 KiB + D 128 KiB + E row 256 B
    assert report.chosen.working_set_bytes == 1536 + 786432 + 2048 + 131072 + 256
    assert report.chosen.fits
    assert not report.unfused_nests_fit  # the producer alone touches 9.5 MiB
    small = TX81.with_overrides({"tile.spm_bytes": "512Ki"})
    assert not spm_report(analyze_pair(load("seed_bmm_chain_local"), 1, 2), small).chosen.fits  # type: ignore[union-attr]


# --------------------------------------------------------------------------- IR and text


def _build_seed() -> str:
    b = NestBuilder("bmm_chain")
    a = b.arg("arg0", (8, 128, 384))
    bb = b.arg("arg1", (8, 384, 512))
    c = b.arg("arg2", (8, 128, 512))
    d = b.arg("arg3", (8, 512, 64))
    e = b.arg("arg4", (8, 128, 64))
    with b.loop(0, 8) as i0, b.loop(0, 128) as i1, b.loop(0, 512) as i2, b.loop(0, 384) as i3:
        x = b.load(a, i0, i1, i3)
        y = b.load(bb, i0, i3, i2)
        z = b.load(c, i0, i1, i2)
        b.store(b.op("arith.addf", z, b.op("arith.mulf", x, y)), c, i0, i1, i2)
    with b.loop(0, 8) as j0, b.loop(0, 128) as j1, b.loop(0, 64) as j2, b.loop(0, 512) as j3:
        x = b.load(c, j0, j1, j3)
        y = b.load(d, j0, j3, j2)
        z = b.load(e, j0, j1, j2)
        b.store(b.op("arith.addf", z, b.op("arith.mulf", x, y)), e, j0, j1, j2)
    return print_function(b.build())


def test_builder_and_parser_give_the_same_text() -> None:
    assert _build_seed() == print_function(load("seed_bmm_chain"))


@pytest.mark.parametrize("name", sorted(EXPECTED_STEPS))
def test_print_parse_round_trip(name: str) -> None:
    text = print_function(load(name))
    assert print_function(parse_function(text)) == text
    fused = print_function(fuse(load(name)).function)
    assert print_function(parse_function(fused)) == fused


def test_affine_expressions() -> None:
    i, j = Lin.var("i"), Lin.var("j")
    e = (i * 2 - j + 3) - (i - 1)
    assert e == i - j + 4
    assert e.subs({"i": j + 1}) == Lin.constant(5)
    assert e.evaluate({"i": 1, "j": 2}) == 3
    with pytest.raises(Tx8labError, match="integer constants"):
        _ = i * 1.5  # type: ignore[operator]


def test_fuse_loops_promotes_pinned_loops() -> None:
    func = load("elementwise_chain")
    check = can_fuse(func, 2, 3, 2)
    assert check.slice is not None
    fused = fuse_loops(func, 2, 3, check.slice)
    consumer = fused.body[3]
    assert isinstance(consumer, Loop)
    inner = consumer.body[0]
    assert isinstance(inner, Loop)
    # both slice loops ran once: promoted, the producer's body is inlined
    assert not any(isinstance(s, Loop) for s in inner.body)


BAD_INPUTS = [
    ("affine.for %i = 0 to 4 step 2 {\n}", "3:31", "step 1"),
    (
        "affine.for %i = 0 to 4 {\n  %x = affine.load %a[%i floordiv 2] : memref<4xf32>\n}",
        "4:26",
        "floordiv",
    ),
    (
        "affine.for %i = 0 to 4 {\n  %x = affine.load %a[%i * %i] : memref<4xf32>\n}",
        "4:28",
        "not affine",
    ),
    ("affine.for %i = max #m(%i) to 4 {\n}", "3:19", "max bounds"),
    ("affine.if #s(%i) {\n}", "3:3", "unsupported operation"),
    ("%x = arith.cmpf olt, %a, %a : f32", "3:19", "only the form"),
    ("%x = memref.load %a[%i] : memref<4xf32>", "3:8", "not supported"),
    ("affine.for %i = 0 to 4 {\n  %x = affine.load %a[%i] : memref<8xf32>\n}", "4:8", "has type"),
    (
        "affine.for %i = 0 to 4 {\n  %x = affine.load %b[%i] : memref<4xf32>\n}",
        "4:8",
        "not a memref",
    ),
]


@pytest.mark.parametrize(("body", "where", "message"), BAD_INPUTS)
def test_parse_errors_name_file_line_and_column(body: str, where: str, message: str) -> None:
    text = f"func.func @f(%a: memref<4xf32>) {{\n  // body\n  {body}\n  return\n}}\n"
    with pytest.raises(Tx8labError, match=message) as err:
        parse_functions(text, "nests.mlir")
    assert str(err.value).startswith(f"nests.mlir:{where}:")


def test_parse_errors_for_whole_functions() -> None:
    with pytest.raises(Tx8labError, match=r"x\.mlir:1:18: memref<\?xf32>: only static"):
        parse_functions("func.func @f(%a: memref<?xf32>) {\n return\n}", "x.mlir")
    with pytest.raises(Tx8labError, match=r"x\.mlir:1:18: expected a memref type"):
        parse_functions("func.func @f(%a: tensor<4xf32>) {\n return\n}", "x.mlir")
    with pytest.raises(Tx8labError, match=r"x\.mlir: no func.func found"):
        parse_functions("// nothing\n", "x.mlir")
    with pytest.raises(Tx8labError, match="used before it is defined"):
        parse_functions(
            "func.func @f(%a: memref<4xf32>) {\n  affine.for %i = 0 to 4 {\n"
            "    affine.store %v, %a[%i] : memref<4xf32>\n  }\n  return\n}",
            "x.mlir",
        )


def test_dense_map_iteration_order_decides_the_chain_order() -> None:
    m = DenseMapOrder()
    for k in range(7):
        m.insert(k)
    assert m.keys() == [0, 2, 4, 6, 1, 3, 5]  # slots 37 * k mod 64
    m.erase(4)
    m.insert(7)
    assert m.keys() == [0, 7, 2, 6, 1, 3, 5]  # 7 lands in slot 259 mod 64 = 3


def test_options_are_checked() -> None:
    with pytest.raises(Tx8labError, match="mode"):
        FusionOptions(mode="sibling")
    with pytest.raises(Tx8labError, match="compute_tolerance"):
        FusionOptions(compute_tolerance=-0.1)


def test_analyze_pair_rejects_non_pairs() -> None:
    func = load("elementwise_chain")
    with pytest.raises(Tx8labError, match="src < dst"):
        analyze_pair(func, 3, 2)
    with pytest.raises(Tx8labError, match="not a producer/consumer pair"):
        analyze_pair(func, 2, 4)


def test_innermost_common_depth() -> None:
    func = load("matmul_bias_relu")
    producer = collect_accesses(func, (func.nests[0],))
    assert innermost_common_depth(producer) == 2  # the init store sits outside the k loop
