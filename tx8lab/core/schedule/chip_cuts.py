"""Chip cuts: how group-cost spreads one group over several chips (``dp`` x ``tp``).

Spec: seed 001 (the ``chip_parallel`` :class:`~tx8lab.core.attrs.ParallelAttr`: dp/tp dims
over chips). :func:`chip_cut` cuts the batch by ``dp`` and the outputs' last dim by ``tp``
(the gather plan); :func:`chip_cuts` adds the row-parallel (reduce) plan for a group with a
matmul; :func:`with_chips` attaches a cut to a tile strategy. The tile-level stages
(factor spaces, split tries, propagation) are :mod:`tx8lab.core.schedule.sharding`; a cut
reuses its propagation to carry ``tp`` to the producers.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from tx8lab.core.dtypes import bits_of
from tx8lab.core.ir import Op
from tx8lab.core.ops import get_op_def
from tx8lab.core.ops.registry import ShardingSplitParam
from tx8lab.core.schedule.sharding import group_body, op_strategy, propagate
from tx8lab.core.schedule.tasks import OpStrategy, Strategy
from tx8lab.errors import Tx8labError


@dataclass(frozen=True)
class ChipCut:
    """A group's multi-chip cut (group-cost ``dp``/``tp``): chips per iteration dim per op."""

    chips: Mapping[int, tuple[int, ...]]
    """Compute op id -> chips per iteration dim (the ``OpStrategy.chips`` to attach)."""
    gathered_bytes: int
    """Bytes of the output ops' results cut on their last dim by ``tp`` (all-gathered)."""
    notes: tuple[str, ...] = ()
    reduced_bytes: int = 0
    """Bytes of a matmul result whose reduction dim is cut by ``tp`` (all-reduced)."""
    plan: str = "gather"
    """``batch`` (dp only), ``gather`` (tp: outputs cut on their last dim) or ``reduce``
    (tp: the last matmul row-parallel)."""


def chip_cut(group_op: Op, dp: int = 1, tp: int = 1) -> ChipCut:
    """Cut a group over ``dp * tp`` chips: the batch dim by ``dp``, outputs' last dim by ``tp``.

    Reading of the seed's ``chip_parallel`` :class:`~tx8lab.core.attrs.ParallelAttr`
    (dp/tp dims over chips) for one group:

    - **dp** (data parallel) cuts, in every compute op, the iteration dim its result dim 0
      follows (the batch, or batch x tokens after a flattening reshape) unless it is a
      reduction: samples are independent in inference, so this holds even where the op
      library keeps that dim whole on the tiles (the seed's BatchNorm shards C only).
      Weights are replicated on every chip; no transfer between chips.
    - **tp** (tensor parallel) cuts the last dim of each output op's result (Gemm/MatMul
      N, the channel) and :func:`propagate` carries it to the producers as it does tiles
      (an op that cannot take it computes that dim whole on every chip). An output op that
      cannot cut its last dim (a Softmax or LayerNorm reduces it) is not cut (a note).
      ``gathered_bytes`` counts the results cut by ``tp``: each is all-gathered after the
      group (the next group reads whole tensors; no Megatron pairing of column- and
      row-parallel matmuls).

    Raises:
        Tx8labError: ``dp`` or ``tp`` below 1, or ``group_op`` is not a group.
    """
    for name, value in (("dp", dp), ("tp", tp)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise Tx8labError(f"chip_cut: {name} must be an int >= 1, got {value!r}")
    compute, _, _, outs = group_body(group_op)
    notes: list[str] = []
    chips: dict[int, list[int]] = {
        op.id: [1] * len(get_op_def(op.kind).iter_dims(op)) for op in compute
    }
    gathered = 0
    if tp > 1:
        outputs: dict[int, ShardingSplitParam] = {}
        for op in outs:
            rank = op.results[0].type.rank if op.results else 0
            param = ShardingSplitParam(
                tuple(tp if i == rank - 1 else 1 for i in range(rank)), (1,) * rank
            )
            if rank == 0 or op_strategy(op, param) is None:
                notes.append(f"%{op.id} ({op.name}) cannot cut its last dim across {tp} chips")
                continue
            outputs[op.id] = param
            out = op.results[0].type
            gathered += -(-out.num_elements * bits_of(out.dtype) // 8)
        for k, st in propagate(group_op, outputs).strategy.ops.items():
            chips[k] = list(st.shard)
    if dp > 1:
        for op in compute:
            defn = get_op_def(op.kind)
            dims = defn.iter_dims(op)
            rmap = defn.result_dims(op)[0] if op.results else ()
            d = rmap[0] if rmap else None
            if d is None or dims[d].reduce or not (d == 0 or dims[d].shardable):
                # (the op library's check_strategy takes chips on iteration dim 0 always,
                # on other dims only where tiles may cut)
                notes.append(f"%{op.id} ({op.name}) has no batch dim to cut: replicated")
                continue
            chips[op.id][d] *= dp
    plan = "gather" if tp > 1 else "batch"
    return ChipCut({k: tuple(v) for k, v in chips.items()}, gathered, tuple(notes), 0, plan)


#: Reduce ops whose reduction dim a ``reduce`` tp plan may cut across chips.
_ROW_PARALLEL = frozenset({"tx8be.MatMul", "tx8be.Gemm", "tx8be.BatchMatMul"})


def chip_cuts(group_op: Op, dp: int = 1, tp: int = 1) -> list[ChipCut]:
    """Every chip cut group-cost weighs for a group (the gather plan, then the reduce one).

    The first is :func:`chip_cut`; with ``tp > 1`` and a matmul in the group the
    row-parallel plan follows.

    The **reduce** plan (Megatron's column/row pairing, read for one group): the last
    MatMul/Gemm/BatchMatMul in the body has its reduction dim K cut by ``tp``; the producer
    of its first operand is asked for its last dim cut by ``tp`` and :func:`propagate`
    carries that backwards (an FFN's up-projection is cut on N: column parallel). Each
    chip then holds a partial sum of the matmul's result, summed by an all-reduce of its
    bytes (``reduced_bytes``); the ops after it run whole on every chip. ``dp`` cuts the
    batch as in :func:`chip_cut`.
    """
    cuts = [chip_cut(group_op, dp, tp)]
    if tp <= 1:
        return cuts
    compute, producer, alias, _ = group_body(group_op)
    matmuls = [op for op in compute if op.kind in _ROW_PARALLEL]
    if not matmuls:
        return cuts
    last = matmuls[-1]
    dims = get_op_def(last.kind).iter_dims(last)
    k = next((i for i, d in enumerate(dims) if d.reduce), None)
    if k is None:
        return cuts
    chips: dict[int, list[int]] = {
        op.id: [1] * len(get_op_def(op.kind).iter_dims(op)) for op in compute
    }
    notes = [f"%{last.id} ({last.name}) row parallel: K cut by {tp}, its result all-reduced"]
    src = producer.get(alias.get(last.operands[0].key, last.operands[0].key))
    if src is not None and src.id in chips and src.results:
        rank = src.results[0].type.rank
        param = ShardingSplitParam(
            tuple(tp if i == rank - 1 else 1 for i in range(rank)), (1,) * rank
        )
        if op_strategy(src, param) is not None:
            for key, st in propagate(group_op, {src.id: param}, anywhere=True).strategy.ops.items():
                chips[key] = list(st.shard)
        else:
            notes.append(f"%{src.id} ({src.name}) cannot cut its last dim: computed whole")
    for key in [op.id for op in compute if compute.index(op) >= compute.index(last)]:
        chips[key] = [1] * len(chips[key])
    chips[last.id][k] = tp
    out = last.results[0].type
    reduced = -(-out.num_elements * bits_of(out.dtype) // 8)
    dp_cut = chip_cut(group_op, dp, 1)
    for key, vec in dp_cut.chips.items():
        chips[key] = [a * b for a, b in zip(chips[key], vec, strict=True)]
    cuts.append(
        ChipCut(
            {key: tuple(v) for key, v in chips.items()},
            0,
            (*notes, *dp_cut.notes),
            reduced,
            "reduce",
        )
    )
    return cuts


def with_chips(strategy: Strategy, cut: ChipCut | None) -> Strategy:
    """``strategy`` with each op's chips from ``cut`` (unchanged when ``cut`` is None)."""
    if cut is None:
        return strategy
    ops = {}
    for k, v in strategy.ops.items():
        chips = tuple(cut.chips.get(k, ()))
        ops[k] = OpStrategy(v.shard, v.split, chips if any(c > 1 for c in chips) else ())
    return Strategy(ops, strategy.multi_buffer, strategy.share)


__all__ = ["ChipCut", "chip_cut", "chip_cuts", "with_chips"]
