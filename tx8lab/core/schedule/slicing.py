"""DataSplit for one group: a strategy's slices, its loop stages, and the init pipeline.

Spec: seed 001 "GroupCostPass" / "DataSplitNewPass" (sharding is spatial, split temporal;
``DS_SlicePropagatePass`` relates a consumer's cut to its producers' through the op
library; ``DS_UpdateSliceIRPass`` puts each op in a loop stage by the reduce ops and
counts each stage's loop), "TS_SwPipelinePass"
(``getInitPipelineOps``: one list per stage, concatenated IC -> OC -> NH, a stage that loops
becomes a ``Repeat`` node), "SPMAllocPass" (BufferLabel/ValueBuffer, ``isImm``, psum, in
place) and the BatchNorm ``main.c`` (load -> compute -> store in a ``while`` loop).

A group body (after group-ldst: LoadVar/LoadConst, compute ops, StoreVar) and a
:class:`~tx8lab.core.schedule.tasks.Strategy` give, per compute op, its slice on one tile
for one step (``temporal_slice_shape`` from the op library); the ops' cut dims, linked
producer to consumer, give the loops; every load, compute and store becomes a
:class:`~tx8lab.core.schedule.tasks.Task` timed by the tile cost model, nested in
:class:`~tx8lab.core.schedule.tasks.Repeat` nodes, with the SPM buffers they read and write.

Readings chosen where the seed is vague:

- **Linked dims.** A producer's result dim and the consumer dim that reads it (through the
  op library's ``operand_dims`` / ``result_dims``; two consumers of one loaded value are
  linked through it too) are one *group dim*, like one loop index of the fused nest. Its
  loop is ``ic`` if any member is a reduction dim, else ``oc`` if any member is an op's
  channel, else ``nh``: an op feeding a reduce op has that reduce op's stage, which is
  DS_UpdateSliceIR's rule (ops between two reduce ops take the later one's stage).
- **Stages.** ``ic`` is STAGEIC2IC (the seed's label when an op's reduce dim is split:
  here in time, partial sums go from IC to IC), ``nh`` STAGEOC2NH (the seed's default).
  ``oc``, output channels split in time, has a name of its own, OCSPLIT: the seed's
  STAGEIC2OC is the tensor-parallel reduction segment (an op with ``tpSplit > 1`` whose
  tiles must then communicate), a spatial stage, not a loop of one tile. Loops nest NH
  (outer) > OC > IC (inner), the seed's IC -> OC -> NH concatenation read inside out. A
  stage's loop count is the product of the splits of its group dims; a stage counting 1
  has no loop. A partial sum restarts when its loop index is back at 0, so a stage whose
  split dim an op sums over may split no other group dim (one index cannot carry both
  chunk counts; nesting a loop per group dim would lift this): such a strategy is an
  error naming both dims.
- **Reads of the whole.** A group dim that a compute op produces in pieces while another
  op reads the value whole along it (a MatMul's N feeding a Reshape that splits it into
  heads) can be split in time: the buffer then holds every chunk side by side
  (``Buffer.chunk_loops``). Sharded, it is gathered (below).
- **Gathers** (issue "spatial": tile-to-tile transfers instead of recomputing). When such a
  dim is sharded across tiles, each tile computes its piece into a buffer that holds the
  whole dim, and a ``noc:%7`` task (engine ``dte``) right after the op all-gathers the
  pieces in place over the tiles that differ only on the gathered dims
  (``NocReduce.collective == "all-gather"``, position ``p`` sending the op's window on
  its ``p``-th tile; the pattern the fastest simulated, ``collectives.allgather_over_noc``),
  so the reader finds the whole value, as after a shared load. The reader and the ops
  after it run on every tile of a gather group alike. Readings: only an op's first
  result is gathered; a gathered dim is not split in time as well (the gather would have
  to wait for the last chunk: an error naming both), and an op does not both gather and
  sum partials over the NoC. The default strategy gathers nothing (it talks to no tile);
  a search tries it (``search.gather_sharded``).
- **Exchanges** (halos: tile-to-tile transfers instead of pieces no tile wrote). When a
  compute reader reads, on some tile, part of a compute op's result another tile wrote
  (a MaxPool's window reaching over the row a neighbour's Relu computed, or pieces cut
  differently), a ``noc:%7`` task right after the op copies those parts over the NoC, in
  place (``NocReduce.collective == "exchange"``, :func:`exchange_moves`: per tile, the
  bounding box its readers read less what it wrote, each part from the tile of the op's
  first block of shards that wrote it; all at once, ``collectives.exchange_over_noc``).
  The boxes are the program's (**Boxes**), on the whole piece of each tile, so such an
  op and its readers must not be split in time (an error naming them); a K-sharded op
  does not exchange. ``exchange=False`` (group-cost's ``noc=false``) refuses a strategy
  that needs one. Within one tile, a reader of a chunk that reaches into another chunk of
  the op's loop (a halo across the loop) would need the previous chunk's buffer or a
  recomputed edge: such a strategy is refused too (:func:`_check_chunk_halos`), where
  before the program read bytes no command wrote.
- **Consistency.** Within one group dim every op splits by the same factor or by 1; 1 means
  the op takes that dim whole, so it runs outside that loop and its buffer holds every
  chunk. Other mixes are an error naming both ops.
- **Placement.** A task sits in the innermost loop whose chunk changes what it touches
  (for a load: the slice its consumer reads; a weight does not change with NH). Loop
  invariant loads are hoisted out (loaded once, kept in SPM) rather than reloaded in
  every iteration as the seed's BatchNorm ``main.c`` does; a task nested deeper than a
  loop it does not vary with simply reruns (a weight reloaded per NH iteration).
- **Inputs a kernel overwrites** (the op library's ``clobbered_operands``; seed 001's
  BatchNorm overwrites its variance in steps 4-5, which is why its ``main.c`` loads the
  variance inside the ``while`` loop) are never hoisted: the load of such a value sits in
  the innermost loop of the op that overwrites it, at its place in the body, so it is
  reloaded every time the op runs; when loop fission (below) would leave it in another
  Repeat than the op, it moves to just before the value's first reader. The seed's loads
  of scale, shift and mean stay hoisted: the kernel only reads them. The op's task
  lists the overwritten buffer among its writes too (in place, the version it read), so
  the software pipeline keeps the next load of that buffer after it.
- **Readers of an overwritten value.** It may be read before the op that overwrites it,
  in every loop of that op, but by nothing after it. A second overwriting op, a later
  reader or StoreVar, the group's Return, a read through another operand of the same op,
  a producer (compute op) or an earlier reader outside one of the op's loops, and a value
  the op would overwrite in DDR are errors naming both ops. Reloading the value for a
  later reader would need a second buffer for one value, which the schedule does not
  model; each reader can have its own load instead (move-constant's ``per_use`` gives
  every use of a constant its own LoadConst).
- **Program order.** Tasks keep the body's order. In each loop body, the inner loop's
  tasks form one Repeat at the place of its first task; an outer-level task that does
  not depend on the pending Repeat moves before it, one that does closes it, and later
  inner tasks open a second Repeat of the same loop (loop fission).
- **Buffers** (one tile, one slice; multi-buffer copies are the software pipeline's): a
  value buffer per SPM value (``%7``; result ``r > 0`` of a multi-result op ``%7:r``),
  sized by the largest slice its producer writes or a consumer reads, times the chunks a
  consumer outside the producer's loop needs at once, in the producer's layout
  (``dev_info.mem_layout``, Cx padding included), rounded up to ``tile.spm_align_bytes``;
  ``%7.imm`` from the op library's ``imm_bytes``; ``%7.psum`` (``tile.psum_elem_bytes``
  per output element) when a reduce op's own reduction dim is split in time. A
  ``mem_inplace`` op's result reuses operand 0's buffer (``in_place_of``) when that value
  has no other reader, lives in the same loop body, has the same size and is not a value
  the op's kernel overwrites (the result and the kernel's scratch would share bytes).
- **Reductions across tiles** (seed SecsInfo sharding modes 1-3, issue "spatial"). An op
  whose reduction dim is sharded across tiles (``IterDim.noc_reduce``: a matmul's K, a
  conv's IC) leaves a partial sum on each tile. A ``noc:%7`` task (engine ``dte``)
  follows each result chunk (placed like a store of it: after the last partial of a
  split K) and all-reduces it in place, so every tile of a reduction group then holds
  the sum and the ops after it, and the stores, read it as if it had been computed
  whole. The tiles of a reduction group are those whose coordinates (the program's
  mixed radix, :func:`tile_order`) differ only on the reduction dims, in the order of
  those (``NocReduce.groups``, which the program follows). The pattern (direct, tree, ring:
  ``collectives.allreduce_plan``) is the fastest when every group runs it at once on
  the simulator (links shared); its staging slots are the ``%7.noc`` scratch buffer.
  The pattern is chosen by time alone, not by the SPM its staging takes. The product of
  the op's shards must divide the group's tiles (the tiles past it repeat whole groups).
  Partial sums travel in the result's element type.
- Values in DDR (block arguments, ``bypasscodegen`` LoadConsts such as an embedding table,
  StoreVar results) have no SPM buffer; a compute op reading one directly is noted.
- **Default strategy.** Shard the largest group dim that every member may shard and that
  is not a reduction over the group's tiles (greedy: then the next largest with the tiles
  left). Then, while the group's live bytes exceed the usable SPM, double the split of
  a group dim of the largest buffer ("halve the largest dim"), the one whose halving
  leaves the fewest live bytes (ties: the larger slice, then NH before OC before IC; any
  dim when the largest buffer cannot shrink). Live bytes are the sum of all buffers,
  those written inside a loop counted ``multi_buffer`` times, in-place ones once: when
  that fits, every allocation order fits.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from tx8lab._bulk import constructor
from tx8lab.core.attrs import Engine as OpEngine
from tx8lab.core.attrs import LayoutMode
from tx8lab.core.grouping import is_compute
from tx8lab.core.ir import TERMINATORS, Module, Op
from tx8lab.core.ops import OPS, get_op_def
from tx8lab.core.ops.registry import (
    IterDim,
    SliceShape,
    Window,
    effective_split,
    op_layout,
    slice_extent,
    value_bytes,
)
from tx8lab.core.schedule.tasks import (
    Buffer,
    Engine,
    NocReduce,
    Node,
    OpStrategy,
    Repeat,
    ScheduleInput,
    Strategy,
    Task,
)
from tx8lab.errors import SpmOverflow, Tx8labError
from tx8lab.hw import collectives
from tx8lab.hw import cost as hwcost
from tx8lab.hw.config import ChipConfig

ValueKey = tuple[int, int, bool]
Loop = Literal["nh", "oc", "ic"]

#: Stage labels of the three loops (seed DS_UpdateSliceIR's for ``nh`` and ``ic``; the
#: output-channel loop's own, module docstring).
STAGE_NH = "STAGEOC2NH"
STAGE_OC = "OCSPLIT"
STAGE_IC = "STAGEIC2IC"
#: Loop -> stage label.
LOOP_STAGE: dict[Loop, str] = {"nh": STAGE_NH, "oc": STAGE_OC, "ic": STAGE_IC}
#: Stages in the seed's concatenation order (getInitPipelineOps: IC -> OC -> NH).
STAGES: tuple[str, ...] = (STAGE_IC, STAGE_OC, STAGE_NH)
_LEVEL: dict[Loop, int] = {"nh": 1, "oc": 2, "ic": 3}
_LOOPS: tuple[Loop, ...] = ("nh", "oc", "ic")

_LOADS = frozenset({"tx8be.LoadVar", "tx8be.LoadConst"})
_STORES = frozenset({"tx8be.StoreVar"})
_ENGINE: dict[OpEngine, Engine] = {
    OpEngine.NE: "ne",
    OpEngine.CT: "ct",
    OpEngine.TDMA: "tdma",
    OpEngine.RDMA: "ld",
    OpEngine.WDMA: "st",
    OpEngine.SCALAR: "ct",
}


@dataclass(frozen=True)
class OpPlan:
    """One compute op under a strategy: its dims, slice and loop placement."""

    op_id: int
    kind: str
    dims: tuple[IterDim, ...]
    strategy: OpStrategy
    slice: SliceShape
    loops: tuple[Loop, ...]
    """The group loop of each iteration dim (its group dim's loop)."""
    varies: frozenset[Loop]
    """Loops whose chunk changes this op's slice (it runs inside them)."""
    roots: tuple[tuple[int, int], ...] = ()
    """The group dim of each iteration dim."""
    slots: frozenset[int] = frozenset()
    """Indices (in :attr:`SlicePlan.slots`) of the loops whose chunk changes its slice."""

    @property
    def stage(self) -> str:
        """The innermost stage it varies with ("" when it runs once)."""
        inner = _innermost(self.varies)
        return LOOP_STAGE[inner] if inner else ""


@dataclass(frozen=True)
class LoopSlot:
    """One loop of the nest: the split group dims its index counts (mixed radix, last fastest)."""

    loop: Loop
    roots: tuple[tuple[int, int], ...]
    splits: tuple[int, ...]

    @property
    def stage(self) -> str:
        """Its stage label."""
        return LOOP_STAGE[self.loop]

    @property
    def times(self) -> int:
        """Iterations: the product of its splits."""
        return math.prod(self.splits)


@dataclass(frozen=True)
class SlicePlan:
    """A group under a strategy: per-op slices and the loop count of every stage."""

    group_id: int
    ops: Mapping[int, OpPlan]
    loop_counts: Mapping[str, int]
    """Stage label -> loop count (1: that stage does not loop)."""
    tiles: int
    """Tiles the group runs on (the largest product of an op's shards)."""
    notes: tuple[str, ...] = ()
    slots: tuple[LoopSlot, ...] = ()
    """The loop nest, outermost first (module docstring, **Stages**)."""


# ---------------------------------------------------------------- the group body


class _Body:
    """What slicing needs from a group body, independent of the strategy."""

    def __init__(self, group_op: Op) -> None:
        if group_op.kind != "tx8be.Group" or not group_op.regions:
            raise Tx8labError(
                f"slicing needs a tx8be.Group op with a body, got {group_op.label} "
                "(outline ops with tx8lab.core.grouping.outline or run the group pass)"
            )
        self.group = group_op
        self.ops = [op for op in group_op.regions[0].ops if op.kind not in TERMINATORS]
        self.compute = [op for op in self.ops if is_compute(op)]
        self.alias: dict[ValueKey, ValueKey] = {}
        for op in self.ops:
            if op.kind == "tx8be.Tuple":
                for res, v in zip(op.results, op.operands, strict=True):
                    self.alias[res.key] = self.resolve(v.key)
        self.producer: dict[ValueKey, tuple[Op, int]] = {}
        self.users: dict[ValueKey, list[tuple[Op, int]]] = {}
        for op in self.ops:
            for r in op.results:
                self.producer[r.key] = (op, r.index)
            for j, v in enumerate(op.operands):
                self.users.setdefault(self.resolve(v.key), []).append((op, j))
        self.spm = {
            r.key
            for op in self.ops
            if (op.kind in _LOADS and not op.attrs.get("bypasscodegen")) or is_compute(op)
            for r in op.results
        }
        self.returned = {
            self.resolve(v.key)
            for op in group_op.regions[0].ops
            if op.kind in TERMINATORS
            for v in op.operands
        }
        self.clobbers: dict[ValueKey, list[tuple[Op, int]]] = {}
        """Value -> the (op, operand index) uses whose kernel overwrites it."""
        for op in self.compute:
            for j in get_op_def(op.kind).clobbered_operands(op):
                self.clobbers.setdefault(self.resolve(op.operands[j].key), []).append((op, j))
        self.dims = {op.id: get_op_def(op.kind).iter_dims(op) for op in self.compute}
        self.omaps = {op.id: OPS[op.kind].operand_dims(op) for op in self.compute}
        self.rmaps = {op.id: OPS[op.kind].result_dims(op) for op in self.compute}
        self._link()
        # the op library's answers for the body's ops, kept for the body's lifetime
        self._slices: dict[tuple[int, OpStrategy], SliceShape] = {}
        self._costs: dict[tuple[int, SliceShape, int, int], hwcost.Cost] = {}
        self._moves: dict[tuple[str, int, int, int], hwcost.Cost] = {}
        self.steps = self._steps()
        """What :func:`_items` reads of each body op, whatever the strategy."""
        self.values = {
            key: (op, f"%{op.id}" if r == 0 else f"%{op.id}:{r}", op.results[r].type.dtype)
            for key, (op, r) in self.producer.items()
        }
        """Value -> its producer, its buffer id and its element type (:func:`_buffers`)."""
        self.layouts = {op.id: op_layout(op) for op in self.ops}
        self.in_place = {op.id: self._in_place(op) for op in self.compute}
        """Compute op -> (operand 0's value, its result) when its result may take operand
        0's buffer as far as the body says (:func:`_buffers` checks the rest)."""
        self._imm: dict[tuple[int, SliceShape], int] = {}
        self.gathers = [op for op in self.ops if op.kind == "tx8be.Gather" and op.operands]
        self.roots = {
            op.id: tuple(self.group_dim[(op.id, i)] for i in range(len(self.dims[op.id])))
            for op in self.compute
        }
        """Compute op -> the group dim of each iteration dim."""
        self.loops = {o: tuple(self.loop_of[r] for r in roots) for o, roots in self.roots.items()}
        """Compute op -> the loop of each iteration dim."""
        self.exchanges: dict[
            tuple[Any, ...], tuple[Moves, tuple[int, ...], tuple[Window, ...]]
        ] = {}
        self.window_plans: dict[tuple[int, int, int], tuple[Any, Any]] = {}
        """(op, reader, operand) -> their window plans (:func:`_reads_own`)."""
        """:func:`exchange_moves`'s answers by what they depend on."""
        self.reductions: dict[tuple[Any, ...], NocReduce] = {}
        """:func:`_noc_reduce`'s answers by what they depend on."""
        self._chips: list[ChipConfig] = []
        """The chips it was sliced for: a memo key holds a chip's index here (hashing a
        chip config walks all its fields)."""
        self.timed: dict[tuple[Any, ...], tuple[int, str]] = {}
        """A task's (cycles, explain) by what they depend on (:func:`_build`)."""

    def chip(self, hw: ChipConfig) -> int:
        """A small key of ``hw`` for the memos (the same chip object, the same key)."""
        for i, known in enumerate(self._chips):
            if known is hw:
                return i
        self._chips.append(hw)
        return len(self._chips) - 1

    def _in_place(self, op: Op) -> tuple[ValueKey, ValueKey] | None:
        if not op.operands or not get_op_def(op.kind).op_attr(op).mem_inplace:
            return None
        src = self.resolve(op.operands[0].key)
        if src in self.clobbers:
            return None  # an overwritten operand's bytes are the kernel's scratch, not the result's
        sole_reader = [u for u, _ in self.users.get(src, []) if u.kind not in TERMINATORS]
        if len({u.id for u in sole_reader}) != 1:
            return None
        return src, op.results[0].key

    def imm_bytes(self, op: Op, piece: SliceShape) -> int:
        """The op library's ``imm_bytes`` of body op ``op`` on one ``piece``."""
        key = (op.id, piece)
        got = self._imm.get(key)
        if got is None:
            got = self._imm[key] = get_op_def(op.kind).imm_bytes(op, piece)
        return got

    def _steps(self) -> list[tuple[Any, ...]]:
        """What :func:`_items` reads of each body op that becomes a task, in order.

        ``("ld", op, key, shape, readers, clobbered by)``, ``("st", op, key)`` or
        ``("op", op, engine, operands, results, clobbers)``.
        """
        out: list[tuple[Any, ...]] = []
        for op in self.ops:
            if op.kind in _LOADS:
                if op.attrs.get("bypasscodegen"):
                    continue
                key = op.results[0].key
                users = tuple(self.compute_users(key))
                clobbered_by = tuple(b.id for b, _ in self.clobbers.get(key, ()))
                out.append(("ld", op, key, op.results[0].type.shape, users, clobbered_by))
            elif op.kind in _STORES:
                key = self.resolve(op.operands[0].key)
                if key in self.spm:
                    out.append(("st", op, key))
            elif op.id in self.dims:
                engine = _ENGINE[get_op_def(op.kind).op_attr(op).engine]
                operands = tuple(
                    (j, self.resolve(v.key), self.resolve(v.key) in self.spm, v.is_arg)
                    for j, v in enumerate(op.operands)
                )
                reads = list(dict.fromkeys(k for _, k, spm, _ in operands if spm))
                clobbers = tuple(
                    k for k in reads if any(b.id == op.id for b, _ in self.clobbers.get(k, ()))
                )
                out.append(("op", op, engine, operands, tuple(op.results), clobbers))
        return out

    def slice_shape(self, op: Op, strategy: OpStrategy) -> SliceShape:
        """The op library's ``temporal_slice_shape`` of body op ``op`` under ``strategy``."""
        if not all(type(f) is int for f in (*strategy.shard, *strategy.split, *strategy.chips)):
            # a factor that only equals an int (True, 1.0) is the op library's to refuse
            return get_op_def(op.kind).temporal_slice_shape(op, strategy)
        key = (op.id, strategy)
        got = self._slices.get(key)
        if got is None:
            got = self._slices[key] = get_op_def(op.kind).temporal_slice_shape(op, strategy)
        return got

    def op_cost(self, op: Op, piece: SliceShape, hw: ChipConfig, tiles: int) -> hwcost.Cost:
        """The op library's cost of body op ``op`` on one ``piece``."""
        key = (op.id, piece, self.chip(hw), tiles)
        got = self._costs.get(key)
        if got is None:
            got = self._costs[key] = get_op_def(op.kind).cost(op, piece, hw, tiles=tiles)
        return got

    def dma_cost(
        self, engine: Literal["ld", "st"], moved: int, hw: ChipConfig, tiles: int
    ) -> hwcost.Cost:
        """``hw.cost.dma_cost`` of one load or store."""
        key = (engine, moved, self.chip(hw), tiles)
        got = self._moves.get(key)
        if got is None:
            got = self._moves[key] = hwcost.dma_cost(engine, moved, hw, active_tiles=tiles)
        return got

    def resolve(self, key: ValueKey) -> ValueKey:
        return self.alias.get(key, key)

    def compute_users(self, key: ValueKey) -> list[tuple[Op, int]]:
        return [(op, j) for op, j in self.users.get(key, []) if op.id in self.dims]

    def _link(self) -> None:
        """Union-find of (op id, iteration dim) over producer -> consumer edges."""
        parent: dict[tuple[int, int], tuple[int, int]] = {}

        def find(x: tuple[int, int]) -> tuple[int, int]:
            while parent.setdefault(x, x) != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x

        def union(a: tuple[int, int], b: tuple[int, int]) -> None:
            ra, rb = find(a), find(b)
            if ra != rb:
                parent[max(ra, rb)] = min(ra, rb)

        for op in self.compute:
            for i in range(len(self.dims[op.id])):
                find((op.id, i))
        taken_whole: list[tuple[tuple[int, int], Op, ValueKey]] = []
        self.read_whole_by: dict[int, list[tuple[int, int, int, Op]]] = {}
        """Compute op -> (its iteration dim, result index, that result's dim, a reader) of
        each dim of its results that a compute op reads whole (**Gathers**)."""
        for key in list(self.producer):
            prod, r = self.producer[key]
            readers = self.compute_users(key)
            # each dim of the value: the producer's dim (if a compute op) and each reader's
            rank = prod.results[r].type.rank
            for e in range(rank):
                members: list[tuple[int, int]] = []
                if prod.id in self.dims:
                    d = self.rmaps[prod.id][r][e]
                    if d is not None:
                        members.append((prod.id, d))
                for user, j in readers:
                    omap = self.omaps[user.id][j]
                    at = omap[e] if e < len(omap) else None
                    if at is not None:
                        members.append((user.id, at))
                for other in members[1:]:
                    union(members[0], other)
                whole = [
                    user
                    for user, j in readers
                    if (e >= len(self.omaps[user.id][j]) or self.omaps[user.id][j][e] is None)
                ]
                # a compute producer's chunks of the dim, read whole by another op
                made = prod.id in self.dims and self.rmaps[prod.id][r][e] is not None
                if made and whole and prod.results[r].type.shape[e] > 1:
                    taken_whole.append((members[0], whole[0], key))
                    d = self.rmaps[prod.id][r][e]
                    assert d is not None
                    self.read_whole_by.setdefault(prod.id, []).append((d, r, e, whole[0]))
        self.group_dim: dict[tuple[int, int], tuple[int, int]] = {m: find(m) for m in parent}
        loops: dict[tuple[int, int], set[str]] = {}
        for (op_id, i), root in self.group_dim.items():
            loops.setdefault(root, set()).add(self.dims[op_id][i].loop)
        self.loop_of: dict[tuple[int, int], Loop] = {
            root: "ic" if "ic" in got else "oc" if "oc" in got else "nh"
            for root, got in loops.items()
        }
        self.read_whole: dict[tuple[int, int], tuple[Op, ValueKey]] = {}
        """Group dim -> a compute op that reads a value carrying it whole (and the value)."""
        for member, user, key in taken_whole:
            self.read_whole.setdefault(find(member), (user, key))
        self.members: dict[tuple[int, int], list[tuple[int, int]]] = {}
        for m, root in sorted(self.group_dim.items()):
            self.members.setdefault(root, []).append(m)

    def loop(self, op_id: int, dim: int) -> Loop:
        return self.loop_of[self.group_dim[(op_id, dim)]]

    def tile_budget(self, hw: ChipConfig) -> int:
        return group_tile_budget(self.group, hw)


def group_tile_budget(group_op: Op, hw: ChipConfig) -> int:
    """The tiles a group runs on: its ``dev_region`` (group-mapping) when set, else the chip's."""
    region = group_op.attrs.get("dev_region")
    if isinstance(region, tuple) and len(region) == 4 and region[2] * region[3] > 0:
        return int(region[2] * region[3])
    return hw.tiles_per_chip


def _innermost(loops: Iterable[Loop]) -> Loop | None:
    inner: Loop | None = None
    for loop in loops:
        if inner is None or _LEVEL[loop] > _LEVEL[inner]:
            inner = loop
    return inner


def _label(op: Op) -> str:
    return f"%{op.id} ({op.name})"


# ---------------------------------------------------------------- the plan


def _plan(body: _Body, strategy: Strategy) -> SlicePlan:
    known = body.roots.keys()
    extra = sorted(set(strategy.ops) - known)
    if extra:
        raise Tx8labError(
            f"strategy for group %{body.group.id} names op ids {extra} that are not compute "
            f"ops of its body (compute ops: {sorted(known)})"
        )
    slices: dict[int, SliceShape] = {}
    for op in body.compute:
        st = strategy.ops.get(op.id)
        if st is None:
            raise Tx8labError(
                f"strategy for group %{body.group.id} has no OpStrategy for {_label(op)}: "
                "give one per compute op (or pass strategy=None for the default)"
            )
        slices[op.id] = body.slice_shape(op, st)
        for i, r, _, reader in body.read_whole_by.get(op.id, ()):
            shard, split = st.shard[i], st.split[i]
            if shard == 1:
                continue
            why = ""
            if split > 1:
                why = f"also splits it in time by {split}; shard it or split it, not both"
            elif r > 0:
                why = "a result other than the first is not gathered; shard another dim"
            elif noc_ways(body.dims[op.id], st) > 1:
                why = "also sums partials over the NoC; shard its reduction dim or this one"
            if why:
                raise Tx8labError(
                    f"group %{body.group.id}: {_label(op)} shards dim {body.dims[op.id][i].name} "
                    f"over {shard} tiles, which {_label(reader)} reads whole (the tiles would "
                    f"all-gather the pieces over the NoC), but it {why}"
                )
    # each group dim splits by one factor (or 1: that op takes it whole)
    factor: dict[tuple[int, int], tuple[int, tuple[int, int]]] = {}
    for op in body.compute:
        splits = zip(strategy.ops[op.id].split, body.roots[op.id], strict=True)
        for i, (split, root) in enumerate(splits):
            if split == 1:
                continue
            seen = factor.get(root)
            if seen is None:
                factor[root] = (split, (op.id, i))
            elif seen[0] != split:
                other_id, other_dim = seen[1]
                raise Tx8labError(
                    f"group %{body.group.id}: {_label(_body_op(body, op.id))} splits dim "
                    f"{body.dims[op.id][i].name} by {split} but the linked dim "
                    f"{body.dims[other_id][other_dim].name} of "
                    f"{_label(_body_op(body, other_id))} is split by {seen[0]}: linked dims "
                    "take one split (or 1 to take the dim whole)"
                )
    slots = _slots(body, {r: f for r, (f, _) in factor.items()})
    slot_of = {root: k for k, slot in enumerate(slots) for root in slot.roots}
    counts = {stage: 1 for stage in STAGES}
    for root, (split, _) in factor.items():
        counts[LOOP_STAGE[body.loop_of[root]]] *= split
    ops: dict[int, OpPlan] = {}
    for op in body.compute:
        st = strategy.ops[op.id]
        loops, roots = body.loops[op.id], body.roots[op.id]
        varies = frozenset(loop for loop, s in zip(loops, st.split, strict=True) if s > 1)
        in_slots = frozenset(slot_of[r] for r, s in zip(roots, st.split, strict=True) if s > 1)
        ops[op.id] = OpPlan(
            op.id, op.kind, body.dims[op.id], st, slices[op.id], loops, varies, roots, in_slots
        )
    tiles = max((math.prod(st.shard) for st in strategy.ops.values()), default=1)
    return SlicePlan(body.group.id, ops, counts, tiles, slots=slots)


def _slots(body: _Body, splits: Mapping[tuple[int, int], int]) -> tuple[LoopSlot, ...]:
    """The loop nest of ``splits`` (group dim -> split), outermost first.

    One loop per stage (NH > OC > IC) counting its split group dims in mixed radix, the
    seed's reading. A partial sum restarts when the innermost loop around its op is back at
    0, so in a stage where an op sums over split dims and other dims of the stage are split
    too, the dims each op sums over get a loop of their own (one loop for all of them, in
    mixed radix), inside a loop of the stage's other split dims and inside the summed loops
    of every other dim the op varies with.

    Raises:
        Tx8labError: two ops sum over overlapping but different sets of split dims, or
            their loops would have to nest both ways; the message names the ops.
    """
    out: list[LoopSlot] = []
    for loop in _LOOPS:
        roots = sorted(r for r, f in splits.items() if f > 1 and body.loop_of[r] == loop)
        groups = _summed_groups(body, roots)
        if len(roots) < 2 or not groups or groups == [tuple(roots)]:
            if roots:
                out.append(LoopSlot(loop, tuple(roots), tuple(splits[r] for r in roots)))
            continue
        summed = {r for g in groups for r in g}
        rest = tuple(r for r in roots if r not in summed)
        if rest:
            out.append(LoopSlot(loop, rest, tuple(splits[r] for r in rest)))
        out.extend(LoopSlot(loop, g, tuple(splits[r] for r in g)) for g in groups)
    return tuple(out)


def _summed_groups(
    body: _Body, roots: Sequence[tuple[int, int]]
) -> list[tuple[tuple[int, int], ...]]:
    """The sets of ``roots`` some op sums over, ordered so each sits inside what it varies with."""
    if len(roots) < 2:
        return []
    inside = set(roots)
    sets: dict[tuple[tuple[int, int], ...], set[tuple[int, int]]] = {}
    who: dict[tuple[tuple[int, int], ...], Op] = {}
    for op in body.compute:
        mine = [body.group_dim[(op.id, i)] for i in range(len(body.dims[op.id]))]
        dims = body.dims[op.id]
        summed = tuple(
            sorted({r for r, d in zip(mine, dims, strict=True) if d.reduce and r in inside})
        )
        if not summed:
            continue
        for other, by in who.items():
            if other != summed and set(other) & set(summed):
                raise Tx8labError(
                    f"group %{body.group.id}: {_label(op)} sums over the split dims "
                    f"{', '.join(_dim_text(body, r) for r in summed)} and {_label(by)} over "
                    f"{', '.join(_dim_text(body, r) for r in other)}: their partial sums "
                    "cannot restart with one loop each; split fewer of these dims"
                )
        who.setdefault(summed, op)
        sets.setdefault(summed, set()).update(r for r in mine if r in inside and r not in summed)
    order: list[tuple[tuple[int, int], ...]] = []
    left = dict(sets)
    while left:
        # a summed set goes next when no dim it varies with is summed by a set still left
        ready = [
            g
            for g, outer in sorted(left.items())
            if not outer & {r for h in left if h != g for r in h}
        ]
        if not ready:
            names = "; ".join(
                f"{_label(who[g])} sums over {', '.join(_dim_text(body, r) for r in g)}"
                for g in left
            )
            raise Tx8labError(
                f"group %{body.group.id}: no loop order keeps these partial sums right "
                f"({names}): each runs inside the other's loop; split fewer of these dims"
            )
        order.append(ready[0])
        del left[ready[0]]
    return order


def _body_op(body: _Body, op_id: int) -> Op:
    return next(op for op in body.ops if op.id == op_id)


def _reset(st: OpStrategy, roots: Sequence[tuple[int, int]], slot: LoopSlot) -> OpStrategy:
    """``st`` with the splits of the dims ``slot`` counts set to 1."""
    split = tuple(1 if r in slot.roots else q for q, r in zip(st.split, roots, strict=True))
    return OpStrategy(st.shard, split, st.chips)


def _slot_slice(
    body: _Body,
    op: Op,
    plan: OpPlan,
    k: int,
    slots: Sequence[LoopSlot],
    memo: dict[tuple[int, int], SliceShape],
) -> SliceShape:
    """``op``'s slice with the splits loop ``k`` counts set to 1 (kept in ``memo``)."""
    got = memo.get((op.id, k))
    if got is None:
        st = _reset(plan.strategy, plan.roots, slots[k])
        got = memo[(op.id, k)] = body.slice_shape(op, st)
    return got


def _varies(
    body: _Body,
    op: Op,
    plan: OpPlan,
    index: int,
    slots: Sequence[LoopSlot],
    memo: dict[tuple[int, int], SliceShape],
    result: bool = False,
) -> frozenset[int]:
    """Loops (slot indices) whose chunk changes operand (``result``: result) ``index``'s slice."""

    def piece(shape: SliceShape) -> Any:
        return shape.results[index] if result else shape.operands[index]

    base = piece(plan.slice)
    return frozenset(
        k for k in plan.slots if piece(_slot_slice(body, op, plan, k, slots, memo)) != base
    )


# ---------------------------------------------------------------- tasks and nesting


@dataclass
class _Item:
    """A task before it has cycles: op, engine, loops, values read and written."""

    op: Op
    engine: Engine
    varies: frozenset[int]
    """Loops (slot indices) whose chunk changes what it touches."""
    reads: list[ValueKey]
    writes: list[ValueKey]
    shapes: dict[ValueKey, tuple[int, ...]] = field(default_factory=dict)
    """Slice shape of each value it reads or writes."""
    path: tuple[int, ...] = ()
    """Ids of the Repeats around it, outermost first."""
    loops: tuple[tuple[int, int], ...] = ()
    """(slot index, times) of each Repeat of ``path``."""
    value_varies: dict[ValueKey, frozenset[int]] = field(default_factory=dict)
    """Loops whose chunk changes each written value (a partial sum does not change with IC)."""
    clobbers: list[ValueKey] = field(default_factory=list)
    """Values it reads whose buffer its kernel overwrites (``clobbered_operands``)."""
    noc: bool = False
    """The all-reduce over the NoC of its op's partial sums (**Reductions across tiles**),
    or, after a shared load, the all-gather of its chunks (**Shared loads**)."""
    share: int = 0
    """A shared load: the tiles of its share group (it moves one chunk of that many)."""

    @property
    def level(self) -> int:
        """Depth of its innermost loop (0: outside every loop)."""
        return max(self.varies, default=-1) + 1

    @property
    def id(self) -> str:
        return f"noc:%{self.op.id}" if self.noc else f"{self.engine}:%{self.op.id}"


def _items(
    body: _Body, plan: SlicePlan, notes: list[str], budget: int, exchange: bool = True
) -> list[_Item]:
    items: list[_Item] = []
    gathers = gather_readers(body.group, {i: p.slice for i, p in plan.ops.items()}, body.gathers)
    # each op's slice with one loop's splits undone, shared by its operands and results
    memo: dict[tuple[int, int], SliceShape] = {}
    ops, slots = plan.ops, plan.slots
    for step in body.steps:
        what, op = step[0], step[1]
        if what == "ld":
            _, _, key, shape, readers, clobbered_by = step
            varies: frozenset[int] = frozenset()
            if readers:
                shape = (0,) * len(shape)
                for user, j in readers:
                    got = ops[user.id].slice.operands[j]
                    shape = tuple(max(a, b) for a, b in zip(shape, got, strict=True))
                    varies |= _varies(body, user, ops[user.id], j, slots, memo)
            # a value some kernel overwrites is reloaded every time that op runs
            placed = varies.union(*(ops[b].slots for b in clobbered_by))
            indices: list[ValueKey] = []
            shapes: dict[ValueKey, tuple[int, ...]] = {key: shape}
            picker = gathers.get(key)
            if picker is not None:
                # rdmaGather: the rows its indices pick, so the load reads the indices and
                # runs again whenever they change
                index_key = body.resolve(picker.operands[1].key)
                if index_key in body.spm:
                    indices.append(index_key)
                    shapes[index_key] = ops[picker.id].slice.operands[1]
                placed |= _varies(body, picker, ops[picker.id], 1, slots, memo)
            items.append(
                _Item(op, "ld", placed, indices, [key], shapes, value_varies={key: varies})
            )
        elif what == "st":
            key = step[2]
            prod, r = body.producer[key]
            if prod.id in ops:
                shape = ops[prod.id].slice.results[r]
                varies = _varies(body, prod, ops[prod.id], r, slots, memo, result=True)
            else:
                load = next(it for it in items if it.op.id == prod.id)
                shape, varies = load.shapes[key], load.varies
            items.append(_Item(op, "st", varies, [key], [], {key: shape}))
        elif op.id in ops:
            _, _, engine, operands, results, clobbers = step
            p = ops[op.id]
            pieces = p.slice.operands
            reads: list[ValueKey] = []
            shapes = {}
            for j, key, spm, is_arg in operands:
                if spm:
                    old = shapes.get(key)
                    if old is None:
                        reads.append(key)
                        shapes[key] = pieces[j]
                    else:
                        shapes[key] = tuple(max(a, b) for a, b in zip(old, pieces[j], strict=True))
                elif is_arg:
                    notes.append(f"{_label(op)} reads operand {j} from DDR (no load)")
            writes = [r.key for r in results]
            shapes.update({r.key: p.slice.results[r.index] for r in results})
            changes = {
                r.key: _varies(body, op, p, r.index, slots, memo, result=True) for r in results
            }
            items.append(
                _Item(
                    op,
                    engine,
                    p.slots,
                    reads,
                    writes,
                    shapes,
                    value_varies=changes,
                    clobbers=list(clobbers),
                )
            )
            res = op.results[0].key
            _check_chunk_halos(body, plan, op)
            gathered = _gathered(body, op.id, p.strategy)
            moves, held, _ = ((), (), ()) if gathered else exchange_moves(body, plan, op, budget)
            if moves and not exchange:
                raise Tx8labError(
                    f"group %{body.group.id}: the readers of {_label(op)} need pieces other "
                    "tiles compute (a halo); with group-cost.noc=false no tile passes one "
                    "over the NoC: shard the dims they read alike, or turn noc on"
                )
            if moves and noc_ways(p.dims, p.strategy) > 1:
                raise Tx8labError(
                    f"group %{body.group.id}: the readers of {_label(op)} need pieces other "
                    "tiles hold, and it sums partials over the NoC too; an exchange after an "
                    "all-reduce is not modelled: shard its reduction dim or the other dims"
                )
            if moves:
                # after the op: the rows its readers need from other tiles land in place
                halo = {res: held}
                items.append(
                    _Item(op, "dte", changes[res], [res], [], halo, clobbers=[res], noc=True)
                )
            if gathered:
                # after each piece: the tiles' pieces, all-gathered in place for the readers
                whole = p.slice.results[0]
                for user, j in body.compute_users(res):
                    got = ops[user.id].slice.operands[j]
                    whole = tuple(max(a, b) for a, b in zip(whole, got, strict=True))
                gather = {res: whole}
                items.append(
                    _Item(op, "dte", changes[res], [res], [], gather, clobbers=[res], noc=True)
                )
            if noc_ways(p.dims, p.strategy) > 1:
                # after its last partial: sum the tiles' partials in place, once per result chunk
                items.append(
                    _Item(
                        op,
                        "dte",
                        changes[res],
                        [res],
                        [],
                        {res: p.slice.results[0]},
                        clobbers=[res],
                        noc=True,
                    )
                )
    _check_clobbers(body, items)
    return _gathers_after_their_indices(items)


def _gathered(body: _Body, op_id: int, st: OpStrategy) -> list[tuple[int, int]]:
    """(iteration dim, result dim) of each sharded dim of ``op_id``'s result read whole."""
    return [(i, e) for i, _, e, _ in body.read_whole_by.get(op_id, ()) if st.shard[i] > 1]


def _tile_box(
    body: _Body,
    plan: SlicePlan,
    order: Mapping[Any, Any],
    op_id: int,
    local: int,
    chunk: Mapping[tuple[int, int], int] | None = None,
) -> Window:
    """The iteration box of ``op_id``'s whole piece on tile ``local`` (every chunk of it).

    The program's boxes (``program`` **Boxes**, **Tiles**): a sharded dim's piece is
    ``ceil(size / per tile)`` at the tile's coordinate, the mixed radix of
    :func:`tile_order` over the op's sharded dims (the tiles past their product repeat).
    ``chunk``: group dim -> chunk index; a dim the op splits in time by ``q`` then takes
    that chunk (``ceil(piece / q)`` long), every other dim its whole piece.
    """
    p = plan.ops[op_id]
    st = p.strategy
    coords = op_tile_coords(st.shard, body.roots[op_id], order, local)
    box = []
    for i, (dim, n) in enumerate(zip(p.dims, st.per_tile(), strict=True)):
        piece = -(-dim.size // n)
        base = coords.get(i, 0) * piece
        lo, hi = base, base + piece
        c = chunk.get(body.group_dim[(op_id, i)]) if chunk and st.split[i] > 1 else None
        if c is not None:
            step = -(-piece // st.split[i])
            lo, hi = base + c * step, min(hi, base + (c + 1) * step)
        box.append((min(dim.size, lo), min(dim.size, max(lo, hi))))
    return tuple(box)


def _check_chunk_halos(body: _Body, plan: SlicePlan, op: Op) -> None:
    """Refuse a reader whose chunk needs what another chunk of ``op`` computes.

    A reader in the same loop as ``op`` (both split a group dim in time) reads, at chunk
    ``c``, what ``op`` writes at chunk ``c`` only when its window does not reach over the
    chunk's edge; a halo across the loop (a pool's window over a Relu split along W) would
    need the previous chunk's buffer or a recomputed edge, neither of which the schedule
    has. Checked on the first two chunks of each split dim of tile 0.

    Raises:
        Tx8labError: naming both ops and the dim.
    """
    p = plan.ops[op.id]
    split = {body.group_dim[(op.id, i)] for i, q in enumerate(p.strategy.split) if q > 1}
    if not split:
        return
    order: dict[Any, Any] | None = None
    for user, j in body.compute_users(op.results[0].key):
        ust = plan.ops[user.id].strategy
        theirs = {body.group_dim[(user.id, i)] for i, q in enumerate(ust.split) if q > 1}
        shared = split & theirs
        if not shared or (theirs == split and _reads_own(body, plan, op, user, j)):
            continue
        if order is None:
            order = _plan_order(body, plan)
        udef, mine = get_op_def(user.kind), get_op_def(op.kind)
        rmap = body.rmaps[op.id][0]
        for root in sorted(shared):
            # the value's dims that follow this loop (a halo between tiles is not this)
            along = [
                e for e, i in enumerate(rmap) if i is not None and body.roots[op.id][i] == root
            ]
            for c in (0, 1):
                at = {root: c}
                need = udef.operand_window(user, j, _tile_box(body, plan, order, user.id, 0, at))
                own = mine.result_window(op, 0, _tile_box(body, plan, order, op.id, 0, at))
                if not any(hi <= lo for lo, hi in need) and any(
                    need[e][0] < own[e][0] or need[e][1] > own[e][1] for e in along
                ):
                    raise Tx8labError(
                        f"group %{body.group.id}: {_label(user)} reads, in chunk {c} of the "
                        f"loop over {_dim_text(body, root)}, part of "
                        f"{_value_text(body, op.results[0].key)} that another chunk of "
                        f"{_label(op)} computes (a halo across the loop); not modelled: "
                        "split another dim, or shard this one"
                    )


def _plan_order(body: _Body, plan: SlicePlan) -> dict[tuple[int, int], tuple[int, tuple[int, int]]]:
    """:func:`tile_order` of the plan's strategy (the program's order of sharded dims)."""
    return tile_order(Strategy({k: q.strategy for k, q in plan.ops.items()}), body.group_dim)


def _reads_own(body: _Body, plan: SlicePlan, op: Op, user: Op, j: int) -> bool:
    """Whether ``user`` reads, on every tile, inside what ``op`` wrote there (a quick test).

    True when both ops shard the same group dims by the same factors, the op's reduction
    dims aside (so each such dim has the same coordinate on a tile), and every dim of the
    value either follows one iteration dim in both, or is whole in ``op``; False when
    unsure.
    """
    key = (op.id, user.id, j)
    plans = body.window_plans.get(key)
    if plans is None:
        got = (
            get_op_def(op.kind).window_plan(op, 0, result=True),
            get_op_def(user.kind).window_plan(user, j),
        )
        plans = body.window_plans[key] = got
    mine, theirs = plans
    if mine is None or theirs is None:
        return False  # a window of the op's own (a conv's halo)
    st, ust = plan.ops[op.id].strategy, plan.ops[user.id].strategy
    if st.chips != ust.chips:
        return False
    roots, uroots = body.roots[op.id], body.roots[user.id]
    dims = body.dims[op.id]
    # a reduction dim sharded across tiles is summed over them (every tile of a reduction
    # group then holds the sum); it varies slowest (tile_order: fewer ops shard it)
    cut = {(roots[i], s) for i, s in enumerate(st.shard) if s > 1 and not dims[i].reduce}
    if cut != {(uroots[i], s) for i, s in enumerate(ust.shard) if s > 1}:
        return False
    for a, b in zip(mine, theirs, strict=True):
        if type(a) is int and st.shard[a] > 1 and type(b) is not int:
            return False  # sharded here, a fixed range there
    return True


def _inside(a: Window, b: Window) -> bool:
    return all(lo >= blo and hi <= bhi for (lo, hi), (blo, bhi) in zip(a, b, strict=True))


def _meet(a: Window, b: Window) -> Window | None:
    box = tuple((max(lo, blo), min(hi, bhi)) for (lo, hi), (blo, bhi) in zip(a, b, strict=True))
    return None if any(hi <= lo for lo, hi in box) else box


Moves = tuple[tuple[int, int, Window], ...]
"""An exchange's copies: (source tile, tile, window of the value), local tile indices."""


def exchange_moves(
    body: _Body, plan: SlicePlan, op: Op, budget: int
) -> tuple[Moves, tuple[int, ...], tuple[Window, ...]]:
    """The halo moves of ``op``'s result (**Exchanges**), the box a tile holds, one run's.

    The moves are (source tile, tile, window) on the tiles' whole pieces; none when on
    every tile its compute readers read inside what the op writes there. The box is the
    largest extent, per dim, of what the op writes and its readers read on one tile in
    one run (the first chunk of each loop: the buffer holds it); the last, each move's
    part in that run (() when it moves nothing then).

    Raises:
        Tx8labError: the op or a reader splits in time a dim the halo crosses.
    """
    p = plan.ops[op.id]
    readers = body.compute_users(op.results[0].key)
    if math.prod(p.strategy.shard) == 1 or all(
        _reads_own(body, plan, op, user, j) for user, j in readers
    ):
        return (), (), ()
    order = _plan_order(body, plan)
    # the tiles' coordinates follow the order of the sharded group dims (tile_order)
    ranks = tuple(
        order.get(r) for who in (op, *(u for u, _ in readers)) for r in body.roots[who.id]
    )
    key = (op.id, p.strategy, tuple(plan.ops[u.id].strategy for u, _ in readers), budget, ranks)
    got = body.exchanges.get(key)
    if got is not None:
        return got
    mine = get_op_def(op.kind)
    own = [mine.result_window(op, 0, _tile_box(body, plan, order, op.id, t)) for t in range(budget)]
    need: list[Window | None] = [None] * budget
    for user, j in readers:
        udef = get_op_def(user.kind)
        for t in range(budget):
            w = udef.operand_window(user, j, _tile_box(body, plan, order, user.id, t))
            if any(hi <= lo for lo, hi in w):
                continue
            got_t = need[t]
            need[t] = w if got_t is None else _bbox(got_t, w)
    op_tiles = math.prod(p.strategy.shard)
    moves: list[tuple[int, int, Window]] = []
    halo: set[int] = set()
    for t in range(budget):
        want = need[t]
        if want is None or _inside(want, own[t]):
            continue
        pairs = enumerate(zip(want, own[t], strict=True))
        halo |= {e for e, (w, o) in pairs if w[0] < o[0] or w[1] > o[1]}
        block = t - t % op_tiles
        for k in range(op_tiles):
            # the tiles past a whole block of the op's shards repeat the first block
            src = block + k if block + k < budget else k
            if src == t:
                continue
            box = _meet(own[src], want)
            if box is not None and _meet(box, own[t]) is None:
                moves.append((src, t, box))
    if not moves:
        got = body.exchanges[key] = ((), (), ())
        return got
    # a dim the halo crosses is not split in time by the op or a reader (module docstring)
    value = op.results[0].key
    for who, dim_map in [(op, body.rmaps[op.id][0])] + [
        (user, body.omaps[user.id][j]) for user, j in readers
    ]:
        split = plan.ops[who.id].strategy.split
        for e in sorted(halo):
            i = dim_map[e] if e < len(dim_map) else None
            if i is not None and split[i] > 1:
                raise Tx8labError(
                    f"group %{body.group.id}: the readers of {_value_text(body, value)} need "
                    f"its dim {e} from other tiles (a halo), and {_label(who)} splits that "
                    f"dim in time by {split[i]}; the exchange of a split halo is not "
                    "modelled: shard it or split another dim"
                )
    # what one run moves and holds: the first chunk of every dim split in time
    first = {r: 0 for r in body.roots[op.id]}
    for user, _ in readers:
        first.update({r: 0 for r in body.roots[user.id]})
    own0 = [
        mine.result_window(op, 0, _tile_box(body, plan, order, op.id, t, first))
        for t in range(budget)
    ]
    held = [0] * len(own[0])
    for t in range(budget):
        box = own0[t]
        for user, j in readers:
            udef = get_op_def(user.kind)
            w = udef.operand_window(user, j, _tile_box(body, plan, order, user.id, t, first))
            if not any(hi <= lo for lo, hi in w):
                box = _bbox(box, w)
        held = [max(h, hi - lo) for h, (lo, hi) in zip(held, box, strict=True)]
    runs = tuple(_meet(w, own0[src]) or () for src, _, w in moves)
    got = body.exchanges[key] = (tuple(moves), tuple(held), runs)
    return got


def _bbox(a: Window, b: Window) -> Window:
    return tuple((min(x0, y0), max(x1, y1)) for (x0, x1), (y0, y1) in zip(a, b, strict=True))


def gather_readers(
    group: Op, slices: Mapping[int, SliceShape], gathers: Sequence[Op] | None = None
) -> dict[ValueKey, Op]:
    """Table value -> the Gather that reads only some of its rows (its slices ``slices``).

    The op library's ``Gather.operand_slice`` keeps the rows the slice's indices select
    (seed rdmaGather): that load brings exactly those rows, picked by the index values.
    A Gather whose indices reach as many rows as the table has takes it whole.
    ``gathers``: the body's Gather ops, when the caller has them.
    """
    out: dict[ValueKey, Op] = {}
    for op in group.regions[0].ops if gathers is None else gathers:
        if op.kind != "tx8be.Gather" or op.id not in slices or not op.operands:
            continue
        table = op.operands[0].type
        axis = int(op.attrs.get("axis", 0)) % table.rank
        if slices[op.id].operands[0][axis] < table.shape[axis]:
            out.setdefault(op.operands[0].key, op)
    return out


def _gathers_after_their_indices(items: list[_Item]) -> list[_Item]:
    """Each gather load moved just before its first reader when it reads indices.

    The indices are written by an earlier load or compute op of the body; the gather's own
    load (body order: constants first) would otherwise run before them.
    """
    out = list(items)
    for load in [it for it in items if it.engine == "ld" and it.reads]:
        out.remove(load)
        key = load.writes[0]
        first = next((i for i, it in enumerate(out) if key in it.reads), len(out))
        out.insert(first, load)
    return out


def _check_clobbers(body: _Body, items: list[_Item]) -> None:
    """Raise when an overwritten value is read after the op that overwrites it."""
    order = {it.op.id: i for i, it in enumerate(items)}
    for key, uses in body.clobbers.items():
        clob, j = uses[0]
        what = f"{_label(clob)} overwrites its operand {j} ({_value_text(body, key)})"
        if key not in body.spm:
            raise Tx8labError(
                f"group %{body.group.id}: {what} but reads it from DDR (no load into SPM); "
                "the kernel would overwrite the tensor in DDR: load it (group-ldst) first"
            )
        for reader, k in body.users.get(key, []):
            if reader.kind == "tx8be.Tuple" or (reader.id, k) == (clob.id, j):
                continue
            if reader.id == clob.id:
                raise Tx8labError(
                    f"group %{body.group.id}: {what} and reads the same value as operand "
                    f"{k}, which the kernel may read overwritten; give each operand its own load"
                )
            if order.get(reader.id, -1) > order[clob.id]:
                raise Tx8labError(
                    f"group %{body.group.id}: {what}, and {_label(reader)} reads it "
                    f"afterwards (operand {k}): it would read the overwritten bytes; give "
                    f"{_label(reader)} its own load of the value, or order it before "
                    f"{_label(clob)}"
                )
        if key in body.returned:
            raise Tx8labError(
                f"group %{body.group.id}: {what}, and the group returns that value: it "
                "would return the overwritten bytes; return a copy made before the op"
            )


def _reload_before_first_reader(body: _Body, items: list[_Item]) -> list[_Item]:
    """Items with the load of each overwritten value moved to just before its first reader.

    With the load's placement (the overwriting op's loops) this keeps it in the op's loop
    body whatever the body's order puts between them.
    """
    out = list(items)
    for key in body.clobbers:
        load = next((it for it in out if it.engine == "ld" and key in it.writes), None)
        if load is None:
            continue
        out.remove(load)
        first = next(i for i, it in enumerate(out) if key in it.reads)
        out.insert(first, load)
    return out


def _clobber_conflict(body: _Body, items: list[_Item]) -> tuple[ValueKey, _Item, _Item] | None:
    """The first overwritten value whose producer or earlier reader left the op's loops.

    Each of them must sit in every Repeat around the op that overwrites the value (deeper
    is fine), so it runs again in each iteration before the op does. Returns (value, the
    overwriting op's item, the other item), None when every value is fine.
    """
    for key, ((clob, _), *_) in body.clobbers.items():
        at = next(it for it in items if it.op.id == clob.id)
        for other in items:
            touches = key in other.writes or (key in other.reads and other is not at)
            if touches and other.path[: len(at.path)] != at.path:
                return key, at, other
    return None


def _check_clobber_loops(body: _Body, plan: SlicePlan, items: list[_Item]) -> None:
    """Raise naming both ops when :func:`_clobber_conflict` finds one."""
    conflict = _clobber_conflict(body, items)
    if conflict is None:
        return
    key, at, other = conflict
    j = next(j for op, j in body.clobbers[key] if op.id == at.op.id)
    loops = " > ".join(f"{plan.slots[k].stage} x{t}" for k, t in at.loops)
    role = "reads" if key not in other.writes else "loads" if other.engine == "ld" else "computes"
    raise Tx8labError(
        f"group %{body.group.id}: {_label(at.op)} overwrites its operand {j} "
        f"({_value_text(body, key)}) every time it runs ({loops}), but "
        f"{_label(other.op)}, which {role} that value, runs outside that loop: "
        f"the op's next run would read the overwritten bytes; split "
        f"{_label(other.op)} like {_label(at.op)} (same loops) or make the value a "
        "load of its own"
    )


def _value_text(body: _Body, key: ValueKey) -> str:
    if key in body.producer:
        prod, r = body.producer[key]
        return f"%{prod.id}" + (f":{r}" if r else "") + f" of {prod.name}"
    return f"block argument {key[1]}"


def _nest(
    items: list[_Item],
    slots: Sequence[LoopSlot],
    depth: int,
    path: tuple[int, ...],
    loops: tuple[tuple[int, int], ...],
    ids: list[int],
) -> list[Any]:
    """Nodes for ``items`` inside the loop at ``depth`` (0: outside every loop).

    Returns items and ``(stage, times, body nodes)`` triples (a Repeat each); every item
    gets the ids and loops of the Repeats around it.
    """
    if depth >= len(slots):
        for it in items:
            it.path, it.loops = path, loops
        return list(items)
    inner = depth + 1
    stage, times = slots[depth].stage, slots[depth].times
    out: list[Any] = []
    run: list[_Item] = []

    def flush() -> None:
        if run:
            ids[0] += 1
            body = _nest(list(run), slots, inner, (*path, ids[0]), (*loops, (depth, times)), ids)
            out.append((stage, times, body))
            run.clear()

    for it in items:
        if it.level >= inner:
            run.append(it)
            continue
        produced = {k for r in run for k in r.writes}
        if run and any(k in produced for k in it.reads):
            flush()
        it.path, it.loops = path, loops
        out.append(it)
    flush()
    return out


# ---------------------------------------------------------------- buffers


def _buffers(
    body: _Body,
    plan: SlicePlan,
    items: list[_Item],
    hw: ChipConfig,
    reductions: Mapping[int, NocReduce],
) -> tuple[dict[str, Buffer], dict[ValueKey, str], dict[str, bool]]:
    """Buffers, the buffer id of each SPM value, and whether each is written in a loop."""
    align = hw.tile.spm_align_bytes
    writer = {k: it for it in items for k in it.writes}
    readers: dict[ValueKey, list[_Item]] = {}
    for it in items:
        for k in it.reads:
            readers.setdefault(k, []).append(it)
    loop_of_repeat = {rid: lt for it in items for rid, lt in zip(it.path, it.loops, strict=True)}
    names: dict[ValueKey, str] = {}
    buffers: dict[str, Buffer] = {}
    in_loop: dict[str, bool] = {}
    for key, it in writer.items():
        op, name, dtype = body.values[key]
        names[key] = name
        shape = own = it.shapes[key]
        chunks = 1
        chunk_loops = 0
        for reader in readers.get(key, []):
            shape = tuple(max(a, b) for a, b in zip(shape, reader.shapes[key], strict=True))
            common = 0
            while (
                common < min(len(it.path), len(reader.path))
                and it.path[common] == reader.path[common]
            ):
                common += 1
            extra = 1
            for rid in it.path[common:]:
                loop, times = loop_of_repeat[rid]
                if loop in it.value_varies[key]:
                    extra *= times
            chunks = max(chunks, extra)
            if extra > 1:
                chunk_loops = max(chunk_loops, len(it.path) - common)
        layout = body.layouts[op.id]
        piece = value_bytes(own, dtype, layout)
        whole = piece if shape == own else value_bytes(shape, dtype, layout)
        size = max(whole, chunks * piece)
        buffers[name] = _new_buffer(name, op.id, _align(size, align), "value", None, chunk_loops)
        in_loop[name] = bool(it.path)
    # in place: a mem_inplace op's result reuses operand 0's buffer
    for it in items:
        if it.engine in ("ld", "st"):
            continue
        pair = body.in_place.get(it.op.id)
        if pair is None:
            continue
        src, dst = pair
        if src not in names or dst not in names:
            continue
        same_loop = writer[src].path == it.path
        a, b = buffers[names[src]], buffers[names[dst]]
        if same_loop and a.bytes == b.bytes:
            buffers[b.id] = Buffer(b.id, b.op_id, b.bytes, "value", a.id)
    # scratch and partial sums
    for it in items:
        if it.op.id not in plan.ops:
            continue
        if it.noc:
            name = f"%{it.op.id}.noc"
            red = reductions[it.op.id]
            if red.slots:
                buffers[name] = Buffer(name, it.op.id, red.slots * red.slot_bytes, "imm")
                in_loop[name] = False
            continue
        p = plan.ops[it.op.id]
        imm = body.imm_bytes(it.op, p.slice)
        if imm:
            name = f"%{it.op.id}.imm"
            buffers[name] = Buffer(name, it.op.id, _align(imm, align), "imm")
            in_loop[name] = False
        if any(d.reduce and s > 1 for d, s in zip(p.dims, p.strategy.split, strict=True)):
            name = f"%{it.op.id}.psum"
            size = math.prod(p.slice.results[0]) * hw.tile.psum_elem_bytes
            buffers[name] = Buffer(name, it.op.id, _align(size, align), "psum")
            in_loop[name] = False
    return buffers, names, in_loop


#: ``Task`` / ``Buffer`` from every field, positionally (one per task of every candidate).
_new_task = constructor(Task)
_new_buffer = constructor(Buffer)


def _align(size: int, align: int) -> int:
    return -(-size // align) * align if size else 0


def schedule_live_bytes(si: ScheduleInput, multi_buffer: int = 2) -> int:
    """SPM bytes if every buffer of ``si`` were live at once (the default's fit test).

    Value buffers written inside a loop count ``multi_buffer`` times, in-place ones not at
    all (they reuse their source), imm and psum buffers once.
    """
    in_loop = {w for node in si.nodes for w in _loop_writes(node, False)}
    total = 0
    for buf in si.buffers.values():
        if buf.in_place_of is not None:
            continue
        copies = multi_buffer if buf.kind == "value" and buf.id in in_loop else 1
        total += buf.bytes * copies
    return total


def _loop_writes(node: Node, inside: bool) -> Iterable[str]:
    if isinstance(node, Repeat):
        for inner in node.body:
            yield from _loop_writes(inner, True)
    elif inside:
        yield from node.writes


# ---------------------------------------------------------------- building


def _build(
    body: _Body, strategy: Strategy, hw: ChipConfig, *, with_cost: bool, exchange: bool = True
) -> tuple[ScheduleInput, SlicePlan]:
    plan = _plan(body, strategy)
    budget = body.tile_budget(hw)
    for p in plan.ops.values():
        if math.prod(p.strategy.shard) > budget:
            raise Tx8labError(
                f"group %{body.group.id}: %{p.op_id} ({p.kind}) shards over "
                f"{math.prod(p.strategy.shard)} tiles {p.strategy.shard} but the group runs on "
                f"{budget}; make the product of its shard at most {budget}"
            )
    notes: list[str] = []
    items = _items(body, plan, notes, budget, exchange)
    nested = _nest(items, plan.slots, 0, (), (), [0])
    if _clobber_conflict(body, items) is not None:
        # loop fission left a reload in another Repeat than the op overwriting the value
        items = _reload_before_first_reader(body, items)
        nested = _nest(items, plan.slots, 0, (), (), [0])
    _check_clobber_loops(body, plan, items)
    shares: dict[int, NocReduce] = {}
    if strategy.share:
        items, shares = _with_shares(body, plan, items, hw)
        nested = _nest(items, plan.slots, 0, (), (), [0])
    reductions = {
        it.op.id: shares.get(it.op.id) or _noc_reduce(body, plan, it, hw) for it in items if it.noc
    }
    buffers, names, _ = _buffers(body, plan, items, hw, reductions)
    tiles = plan.tiles
    chip = body.chip(hw)

    def task(it: _Item, stage: str) -> Task:
        reads = tuple(names[k] for k in it.reads if k in names)
        # an overwritten operand's buffer is written too (in place, the same version)
        writes = tuple(names[k] for k in (*it.writes, *it.clobbers) if k in names)
        if it.noc:
            red = reductions[it.op.id]
            staging = f"%{it.op.id}.noc"
            writes = (*writes, staging) if staging in buffers else writes
            what = (
                f"all-reduce of {red.ways} partial sums"
                if red.collective != "all-gather"
                else f"all-gather of {red.ways} loaded chunks"
                if it.op.id in shares
                else f"all-gather of {red.ways} computed pieces"
            )
            text = (
                f"{it.id} {what} over the NoC, {red.pattern} "
                f"(simulated, {len(red.groups)} groups at once): {red.cycles:,} cycles; "
                + ", ".join(f"{p} {c:,}" for p, c in red.alternatives)
            )
            return _new_task(it.id, it.op.id, it.engine, red.cycles, reads, writes, stage, text)
        psum = f"%{it.op.id}.psum"
        imm = f"%{it.op.id}.imm"
        if psum in buffers:
            reads, writes = (*reads, psum), (*writes, psum)
        if imm in buffers:
            writes = (*writes, imm)
        cycles, text = 0, ""
        if with_cost:
            # what the cost reads: the op's slice, or the slice a load or store moves (a
            # shared load its chunk)
            p = plan.ops.get(it.op.id)
            piece = (
                p.slice if p is not None else it.shapes[it.writes[0] if it.writes else it.reads[0]]
            )
            key = (it.op.id, it.engine, piece, tiles, chip, it.share)
            got = body.timed.get(key)
            if got is None:
                c = _cost(body, plan, it, hw, tiles, buffers, names)
                got = body.timed[key] = (c.cycles, f"{it.id} {c.formula}")
            cycles, text = got
        return _new_task(it.id, it.op.id, it.engine, cycles, reads, writes, stage, text)

    counts = ", ".join(f"{s}={plan.loop_counts[s]}" for s in STAGES)
    notes.insert(0, f"loop counts {counts}; {tiles} tiles")
    for op_id, red in reductions.items():
        if red.collective == "all-gather" and op_id not in shares:
            notes.append(
                f"%{op_id}'s pieces are read whole: its {red.ways} tiles per group "
                f"{red.pattern} all-gather them, {red.noc_bytes:,} bytes per run"
            )
            continue
        if red.collective == "all-gather":
            notes.append(
                f"%{op_id} is loaded once per {red.ways} tiles that read it alike: each loads "
                f"a chunk, {red.pattern} all-gather, {red.noc_bytes:,} bytes per run"
            )
            continue
        notes.append(
            f"%{op_id} sums its partials over the NoC: {red.ways} tiles per group, "
            f"{red.pattern} all-reduce, {red.noc_bytes:,} bytes per run"
        )
    nodes = _convert(nested, "", task)
    si = ScheduleInput(body.group.id, nodes, buffers, tiles, tuple(notes), reductions)
    return si, replace(plan, notes=tuple(notes))


def _convert(nodes: list[Any], stage: str, task: Callable[[_Item, str], Task]) -> tuple[Node, ...]:
    """Nested items as tasks and Repeats.

    Module level, not a closure of :func:`_build`: a recursive closure is a reference
    cycle, which would keep every init pipeline it saw until a collection (tx8lab._bulk).
    """
    out: list[Node] = []
    for n in nodes:
        if isinstance(n, _Item):
            out.append(task(n, stage))
        else:
            inner_stage, times, inner = n
            out.append(Repeat(times, _convert(inner, inner_stage, task), inner_stage))
    return tuple(out)


def noc_ways(dims: Sequence[IterDim], strategy: OpStrategy) -> int:
    """Tiles whose partial sums one result piece adds: the shards of its reduction dims.

    Examples:
        >>> from tx8lab.core.ops.registry import IterDim
        >>> dims = (IterDim("M", 8), IterDim("K", 64, "ic", shardable=False, noc_reduce=True))
        >>> noc_ways(dims, OpStrategy((2, 4), (1, 1)))
        4
    """
    return math.prod(s for d, s in zip(dims, strategy.shard, strict=True) if d.reduce)


def chunk_dim(shape: Sequence[int], chunks: int) -> int:
    """The dim a ring cuts a result piece along: the first at least ``chunks`` long.

    Else the longest, so a chunk is one box.

    Examples:
        >>> chunk_dim((1, 7, 7, 512), 4), chunk_dim((1, 2, 2, 3), 4)
        (1, 3)
    """
    for i, d in enumerate(shape):
        if d >= chunks:
            return i
    return max(range(len(shape)), key=lambda i: (shape[i], -i)) if shape else 0


def chunk_shape(shape: Sequence[int], chunks: int) -> tuple[int, ...]:
    """The largest of :func:`chunk_boxes`'s chunks of a ``shape`` piece (the first one).

    Examples:
        >>> chunk_shape((1, 7, 512), 4)
        (1, 2, 512)
    """
    dim = chunk_dim(shape, chunks)
    return tuple(-(-d // chunks) if i == dim else d for i, d in enumerate(shape))


def chunk_boxes(box: Window, chunks: int, dim: int) -> list[Window]:
    """``box`` cut in ``chunks`` along ``dim`` (``ceil`` shares; the last ones may be empty).

    Examples:
        >>> chunk_boxes(((0, 1), (4, 9)), 2, 1)
        [((0, 1), (4, 7)), ((0, 1), (7, 9))]
    """
    if not box:
        return [box] * chunks
    lo, hi = box[dim]
    per = -(-(hi - lo) // chunks)
    out = []
    for c in range(chunks):
        a = min(hi, lo + c * per)
        b = min(hi, lo + (c + 1) * per)
        out.append(tuple((a, b) if i == dim else w for i, w in enumerate(box)))
    return out


def region_tiles(group: Op, hw: ChipConfig) -> list[int]:
    """Tile ids of the group's ``dev_region``, row by row (its *local* indices' tiles)."""
    region = group.attrs.get("dev_region")
    cols = hw.mesh_cols
    if isinstance(region, tuple) and len(region) == 4:
        x0, y0, dx, dy = (int(v) for v in region)
    else:
        x0, y0, dx, dy = 0, 0, cols, hw.mesh_rows
    return [(y0 + r) * cols + (x0 + c) for r in range(dy) for c in range(dx)]


def op_tile_coords(
    shard: Sequence[int],
    roots: Sequence[tuple[int, int]],
    order: Mapping[tuple[int, int], Any],
    local: int,
) -> dict[int, int]:
    """Iteration dim -> tile ``local``'s coordinate on it, for each dim an op shards.

    The mixed radix of the op's sharded dims in :func:`tile_order` (the program's
    **Tiles**; ``roots``: each dim's group dim); the tiles past their product repeat.
    """
    sharded = sorted((order[roots[i]], i) for i, s in enumerate(shard) if s > 1)
    radix = [shard[i] for _, i in sharded]
    digits = mixed_digits(local % max(1, math.prod(radix)), radix)
    return {i: d for (_, i), d in zip(sharded, digits, strict=True)}  # slowest first


def mixed_digits(index: int, radix: Sequence[int]) -> list[int]:
    """``index`` in mixed radix ``radix``, the last digit fastest (a tile's coordinates).

    Examples:
        >>> mixed_digits(7, (2, 4))
        [1, 3]
    """
    out = [0] * len(radix)
    for i in range(len(radix) - 1, -1, -1):
        out[i] = index % radix[i]
        index //= radix[i]
    return out


def tile_order(
    strategy: Strategy, root: Mapping[tuple[int, int], tuple[int, int]]
) -> dict[tuple[int, int], tuple[int, tuple[int, int]]]:
    """Group dim -> its sort key among an op's sharded dims (the program's **Tiles**).

    A dim fewer ops shard varies slower, then by group dim.
    """
    sharded_by: dict[tuple[int, int], int] = {}
    for op_id, st in strategy.ops.items():
        for r in {root[(op_id, i)] for i, s in enumerate(st.shard) if s > 1}:
            sharded_by[r] = sharded_by.get(r, 0) + 1
    return {r: (n, r) for r, n in sharded_by.items()}


def _noc_reduce(body: _Body, plan: SlicePlan, it: _Item, hw: ChipConfig) -> NocReduce:
    # what the reduction depends on: every op's shard (the tile order), its result piece
    p = plan.ops[it.op.id]
    shards = tuple(q.strategy.shard for q in plan.ops.values())
    whole = it.shapes[it.op.results[0].key]
    key = (it.op.id, shards, p.slice.results[0], whole, body.chip(hw))
    got = body.reductions.get(key)
    if got is None:
        if noc_ways(p.dims, p.strategy) > 1:
            got = _new_noc_reduce(body, plan, it, hw)
        elif _gathered(body, it.op.id, p.strategy):
            got = _new_gather(body, plan, it, hw)
        else:
            got = _new_exchange(body, plan, it, hw)
        body.reductions[key] = got
    return got


def _chip_tiles(body: _Body, hw: ChipConfig) -> tuple[int, ...]:
    """The chip tile id of each local tile of the group's region (what collectives take)."""
    budget = body.tile_budget(hw)
    return tuple(t % hw.tiles_per_chip for t in region_tiles(body.group, hw)[:budget])


def _new_exchange(body: _Body, plan: SlicePlan, it: _Item, hw: ChipConfig) -> NocReduce:
    """The halo exchange after a compute op (**Exchanges**): its moves, simulated."""
    op = it.op
    budget = body.tile_budget(hw)
    moves, _, runs = exchange_moves(body, plan, op, budget)
    chip = _chip_tiles(body, hw)
    res = op.results[0]
    mode = op_layout(op)
    # one run's copies (a loop's later runs move as much)
    now = [
        (chip[a], chip[b], value_bytes(tuple(hi - lo for lo, hi in w), res.type.dtype, mode))
        for (a, b, _), w in zip(moves, runs, strict=True)
        if w
    ]
    run = collectives.exchange_over_noc(now, res.type.dtype, hw)
    return NocReduce(
        "direct",
        budget,
        (tuple(range(budget)),),
        len(moves),
        0,
        0,
        0,
        run.cycles,
        run.noc_bytes,
        (("direct", run.cycles),),
        "exchange",
        moves,
    )


def _new_gather(body: _Body, plan: SlicePlan, it: _Item, hw: ChipConfig) -> NocReduce:
    """The all-gather of a computed value read whole along a sharded dim (**Gathers**)."""
    op = it.op
    p = plan.ops[op.id]
    dims = _gathered(body, op.id, p.strategy)
    budget = body.tile_budget(hw)
    op_tiles = math.prod(p.strategy.shard)
    if budget % op_tiles:
        raise Tx8labError(
            f"group %{body.group.id}: {_label(op)} gathers its pieces over the NoC, but its "
            f"{op_tiles} tiles {p.strategy.shard} do not divide the group's {budget}; use a "
            f"shard whose product divides {budget}"
        )
    groups = _tile_groups(body, plan, op, {i for i, _ in dims}, budget)
    res = op.results[0]
    return _gather_choice(
        tuple(it.shapes[res.key]),
        res.type.dtype,
        op_layout(op).value,
        groups,
        _chip_tiles(body, hw),
        dims[0][1],
        hw,
    )


@functools.lru_cache(maxsize=4096)
def _gather_choice(
    shape: tuple[int, ...],
    dtype: str,
    layout: str,
    groups: tuple[tuple[int, ...], ...],
    tile_of: tuple[int, ...],
    dim: int,
    hw: ChipConfig,
) -> NocReduce:
    """The fastest all-gather of a ``shape`` value over each of ``groups`` (**Gathers**)."""
    num_bytes = value_bytes(shape, dtype, LayoutMode(layout))
    ranked = collectives.allgather_over_noc(
        [[tile_of[t] for t in g] for g in groups], num_bytes, dtype, hw
    )
    best = ranked[0]
    ways = len(groups[0])
    return NocReduce(
        best.pattern,
        ways,
        groups,
        ways,
        dim,
        0,
        0,
        best.cycles,
        best.noc_bytes,
        tuple((r.pattern, r.cycles) for r in ranked),
        "all-gather",
    )


def _new_noc_reduce(body: _Body, plan: SlicePlan, it: _Item, hw: ChipConfig) -> NocReduce:
    op = it.op
    p = plan.ops[op.id]
    ways = noc_ways(p.dims, p.strategy)
    st = p.strategy
    op_tiles = math.prod(st.shard)
    budget = body.tile_budget(hw)
    if budget % op_tiles:
        raise Tx8labError(
            f"group %{body.group.id}: {_label(op)} sums its partials over {ways} tiles, but its "
            f"{op_tiles} tiles {st.shard} do not divide the group's {budget}: the tiles "
            "past them would repeat a reduction group in part; use a shard whose product "
            f"divides {budget}"
        )
    groups = _tile_groups(body, plan, op, {i for i, d in enumerate(p.dims) if d.reduce}, budget)
    res = op.results[0].type
    return _noc_choice(
        tuple(p.slice.results[0]),
        res.dtype,
        op_layout(op).value,
        ways,
        groups,
        _chip_tiles(body, hw),
        hw,
    )


def _tile_groups(
    body: _Body, plan: SlicePlan, op: Op, across: set[int], budget: int
) -> tuple[tuple[int, ...], ...]:
    """The region's local tiles grouped by ``op``'s coordinates on its dims not in ``across``.

    A group's tiles differ only on the dims of ``across``, and are in the order of those
    (the program's mixed radix, :func:`tile_order`); the tiles past the op's shard
    product repeat whole groups.
    """
    st = plan.ops[op.id].strategy
    op_tiles = math.prod(st.shard)
    order = _plan_order(body, plan)
    members: dict[tuple[int, ...], dict[tuple[int, ...], int]] = {}
    for local in range(budget):
        # in the mixed radix's order, slowest first
        coords = op_tile_coords(st.shard, body.roots[op.id], order, local).items()
        keep = tuple(d for i, d in coords if i not in across)
        pos = tuple(d for i, d in coords if i in across)
        members.setdefault((local // op_tiles, *keep), {})[pos] = local
    return tuple(tuple(g[k] for k in sorted(g)) for _, g in sorted(members.items()))


def replicates_a_load(group_op: Op, strategy: Strategy) -> bool:
    """Whether some load of the group is read alike by several tiles under ``strategy``.

    A load (not read in place) whose one compute reader shards an iteration dim the
    operand does not depend on: the only loads **Shared loads** may share, read from
    the IR alone (no slicing), so a search skips twins that could share nothing.
    """
    body = [op for op in group_op.regions[0].ops if op.kind not in TERMINATORS]
    readers: dict[ValueKey, list[tuple[Op, int]]] = {}
    for op in body:
        if op.id in strategy.ops:
            for j, v in enumerate(op.operands):
                readers.setdefault(v.key, []).append((op, j))
    for op in body:
        if op.kind not in _LOADS or op.attrs.get("bypasscodegen"):
            continue
        users = readers.get(op.results[0].key, [])
        if len(users) != 1:
            continue
        user, j = users[0]
        mapped = {m for m in get_op_def(user.kind).operand_dims(user)[j] if m is not None}
        shard = strategy.ops[user.id].shard
        if math.prod(s for i, s in enumerate(shard) if i not in mapped) > 1:
            return True
    return False


def _with_shares(
    body: _Body, plan: SlicePlan, items: list[_Item], hw: ChipConfig
) -> tuple[list[_Item], dict[int, NocReduce]]:
    """``items`` with each load worth sharing followed by its all-gather (**Shared loads**)."""
    out: list[_Item] = []
    shares: dict[int, NocReduce] = {}
    budget = body.tile_budget(hw)
    tile_of = _chip_tiles(body, hw)
    for it in items:
        out.append(it)
        if it.engine != "ld" or it.reads or it.noc:
            continue  # a gather load reads its indices
        key = it.writes[0]
        readers = body.compute_users(key)
        if len(readers) != 1 or body.clobbers.get(key):
            continue
        user, j = readers[0]
        p = plan.ops[user.id]
        if budget % math.prod(p.strategy.shard):
            continue
        mapped = {m for m in get_op_def(user.kind).operand_dims(user)[j] if m is not None}
        across = {i for i in range(len(p.dims)) if i not in mapped}
        groups = _tile_groups(body, plan, user, across, budget)
        ways = len(groups[0])
        if ways < 2:
            continue
        load = it.op
        share = _share_choice(
            tuple(it.shapes[key]),
            load.results[0].type.dtype,
            op_layout(load).value,
            ways,
            groups,
            tile_of,
            plan.tiles,
            hw,
        )
        if share is None:
            continue
        it.share = ways
        out.append(
            _Item(
                load, "dte", it.varies, [key], [], {key: it.shapes[key]}, clobbers=[key], noc=True
            )
        )
        shares[load.id] = share
    return out, shares


@functools.lru_cache(maxsize=4096)
def _share_choice(
    shape: tuple[int, ...],
    dtype: str,
    layout: str,
    ways: int,
    groups: tuple[tuple[int, ...], ...],
    tile_of: tuple[int, ...],
    active: int,
    hw: ChipConfig,
) -> NocReduce | None:
    """The all-gather of a shared load, or None when every tile reading it is faster."""
    dim = chunk_dim(shape, ways)
    if not shape or shape[dim] < ways:
        return None
    mode = LayoutMode(layout)
    num_bytes = value_bytes(shape, dtype, mode)
    chunk = value_bytes(chunk_shape(shape, ways), dtype, mode)
    whole = hwcost.dma_cost("ld", num_bytes, hw, active_tiles=active).cycles
    part = hwcost.dma_cost("ld", chunk, hw, active_tiles=active).cycles
    if part >= whole:
        return None
    gather = _gather_choice(shape, dtype, layout, groups, tile_of, dim, hw)
    return None if part + gather.cycles >= whole else gather


@functools.lru_cache(maxsize=4096)
def _noc_choice(
    shape: tuple[int, ...],
    dtype: str,
    layout: str,
    ways: int,
    groups: tuple[tuple[int, ...], ...],
    tile_of: tuple[int, ...],
    hw: ChipConfig,
) -> NocReduce:
    """The fastest all-reduce of a ``shape`` piece (module docstring, **Reductions**)."""
    mode = LayoutMode(layout)
    num_bytes = value_bytes(shape, dtype, mode)
    ranked = _allreduce_ranking(
        tuple(tuple(tile_of[t] for t in g) for g in groups), num_bytes, dtype, hw
    )
    best = ranked[0]
    plan = collectives.allreduce_plan(ways, best.pattern)
    dim = chunk_dim(shape, plan.chunks)
    pieces = chunk_boxes(tuple((0, d) for d in shape), plan.chunks, dim)
    align = hw.tile.spm_align_bytes
    slot = _align(max(value_bytes(tuple(b - a for a, b in w), dtype, mode) for w in pieces), align)
    return NocReduce(
        best.pattern,
        ways,
        groups,
        plan.chunks,
        dim,
        plan.slots,
        slot,
        best.cycles,
        best.noc_bytes,
        tuple((r.pattern, r.cycles) for r in ranked),
    )


@dataclass(frozen=True)
class _Ranked:
    """One all-reduce pattern's simulated figures (what a :class:`NocReduce` keeps)."""

    pattern: collectives.Pattern
    cycles: int
    noc_bytes: int


@functools.lru_cache(maxsize=4096)
def _allreduce_ranking(
    groups: tuple[tuple[int, ...], ...], num_bytes: int, dtype: str, hw: ChipConfig
) -> tuple[_Ranked, ...]:
    """``collectives.allreduce_over_noc``'s ranking of these chip tiles, simulated once.

    Pieces of different shapes (or layouts, or groups of another region) with the same
    bytes on the same tiles are the same all-reduce: the simulation is shared.
    """
    ranked = collectives.allreduce_over_noc(groups, num_bytes, dtype, hw)
    return tuple(_Ranked(r.pattern, r.cycles, r.noc_bytes) for r in ranked)


def noc_bytes(si: ScheduleInput) -> int:
    """Payload bytes a group's NoC reductions send, over every run of their tasks.

    Examples:
        >>> noc_bytes(ScheduleInput(1, (), {}))
        0
    """
    return sum(
        times * si.reductions[task.op_id].noc_bytes
        for task, times in task_runs(si.nodes)
        if task.id.startswith("noc:") and task.op_id in si.reductions
    )


def _cost(
    body: _Body,
    plan: SlicePlan,
    it: _Item,
    hw: ChipConfig,
    tiles: int,
    buffers: Mapping[str, Buffer],
    names: Mapping[ValueKey, str],
) -> hwcost.Cost:
    op = it.op
    if it.engine in ("ld", "st"):
        key = it.writes[0] if it.engine == "ld" else it.reads[0]
        prod, r = body.producer[key]
        shape = it.shapes[key]
        if it.share:  # a shared load moves its chunk (**Shared loads**)
            shape = chunk_shape(shape, it.share)
        moved = value_bytes(shape, prod.results[r].type.dtype, op_layout(prod))
        return body.dma_cost(it.engine, moved, hw, tiles)
    return body.op_cost(op, plan.ops[op.id].slice, hw, tiles)


# ---------------------------------------------------------------- public entry points


@dataclass(frozen=True)
class LinkedDims:
    """The group dims of a body: which op iteration dims are one loop index of the nest."""

    root: Mapping[tuple[int, int], tuple[int, int]]
    """(op id, iteration dim) -> its group dim (the smallest member)."""
    loop: Mapping[tuple[int, int], Loop]
    """Group dim -> its loop (``nh`` / ``oc`` / ``ic``, see **Linked dims**)."""


def linked_dims(group_op: Op) -> LinkedDims:
    """The linked dims of ``group_op``'s compute ops (module docstring, **Linked dims**)."""
    body = _Body(group_op)
    return LinkedDims(dict(body.group_dim), dict(body.loop_of))


def loop_slots(group_op: Op, strategy: Strategy) -> tuple[LoopSlot, ...]:
    """The loop nest of ``group_op`` under ``strategy``, outermost first (see **Stages**).

    The ``k``-th Repeat around any task of the init pipeline is loop ``k`` of this tuple.
    """
    return _plan(_Body(group_op), strategy).slots


def plan_group(group_op: Op, strategy: Strategy, hw: ChipConfig) -> SlicePlan:
    """Per-op slices, loop placement and the stage loop counts of ``group_op`` under ``strategy``.

    Raises:
        Tx8labError: the strategy misses an op, names a foreign one, cuts a dim its op
            forbids, or splits linked dims by different factors.
    """
    return _build(_Body(group_op), strategy, hw, with_cost=False)[1]


def loop_counts(group_op: Op, strategy: Strategy, hw: ChipConfig) -> dict[str, int]:
    """Loop count of each stage (seed DS_UpdateSliceIR's pipeline depth per stage)."""
    return dict(plan_group(group_op, strategy, hw).loop_counts)


class SliceCache:
    """What slicing keeps about one group while it slices it for many strategies.

    The strategy-independent view of the body (linked dims, producers, users) and the op
    library's answers for its ops (slices and costs under each strategy) are computed once
    instead of once per strategy: a search slices one group for hundreds of candidates
    that share most ops' strategies. Make one per search (it assumes the op library does
    not change meanwhile) and hand it to :func:`schedule_input` with that group.

    Raises:
        Tx8labError: ``group_op`` is not a group with a body.
    """

    def __init__(self, group_op: Op) -> None:
        self._body = _Body(group_op)

    @property
    def group(self) -> Op:
        """The group it slices."""
        return self._body.group

    def _for(self, group_op: Op) -> _Body:
        if group_op is not self._body.group:
            raise Tx8labError(
                f"a slice cache of group %{self._body.group.id} was given for {group_op.label}; "
                "make one per group"
            )
        return self._body


def _gather_roots(body: _Body) -> list[tuple[int, tuple[int, int]]]:
    """(length, group dim) of each dim read whole that every member may shard, longest first."""
    out = []
    for root in body.read_whole:
        members = body.members[root]
        if body.loop_of[root] == "ic" or not all(body.dims[o][i].shardable for o, i in members):
            continue
        out.append((min(body.dims[o][i].size for o, i in members), root))
    return sorted(out, key=lambda x: (-x[0], x[1]))


def gather_ways_of(group_op: Op, tiles: int, cache: SliceCache | None = None) -> list[int]:
    """The gather widths a search tries (module docstring, **Gathers**).

    Powers of two dividing ``tiles`` that some dim read whole (every member may shard it)
    is as long as.
    """
    body = cache._for(group_op) if cache is not None else _Body(group_op)
    return noc_widths(max((n for n, _ in _gather_roots(body)), default=0), tiles)


def noc_widths(longest: int, tiles: int) -> list[int]:
    """2, 4, 8, ... while the width divides ``tiles`` and is at most ``longest``.

    Examples:
        >>> noc_widths(1024, 16), noc_widths(6, 16), noc_widths(64, 12)
        ([2, 4, 8, 16], [2, 4], [2, 4])
    """
    out = []
    k = 2
    while k <= tiles and tiles % k == 0 and k <= longest:
        out.append(k)
        k *= 2
    return out


def gather_sharded(
    group_op: Op, strategy: Strategy, ways: int, tiles: int, cache: SliceCache | None = None
) -> Strategy:
    """``strategy`` with the dims read whole sharded ``ways`` ways (**Gathers**).

    Longest first, each on every member op (its split there brought back to 1), while
    every member's tiles stay within ``tiles``; a dim shorter than ``ways`` is left alone.
    """
    if ways <= 1:
        return strategy
    body = cache._for(group_op) if cache is not None else _Body(group_op)
    ops = dict(strategy.ops)
    for size, root in _gather_roots(body):
        members = body.members[root]
        if size < ways or any(
            o not in ops or math.prod(ops[o].shard) * ways // ops[o].shard[i] > tiles
            for o, i in members
        ):
            continue
        for o, i in members:
            st = ops[o]
            shard = tuple(ways if j == i else s for j, s in enumerate(st.shard))
            split = tuple(1 if j == i else q for j, q in enumerate(st.split))
            ops[o] = OpStrategy(shard, split, st.chips)
    return Strategy(ops, strategy.multi_buffer, strategy.share)


def schedule_input(
    group_op: Op,
    strategy: Strategy | None,
    hw: ChipConfig,
    *,
    multi_buffer: int = 2,
    cache: SliceCache | None = None,
    exchange: bool = True,
) -> ScheduleInput:
    """The init pipeline of ``group_op`` (seed getInitPipelineOps) with its buffers.

    ``strategy`` None takes :func:`default_strategy` (``multi_buffer`` copies per looping
    buffer in its fit test); its choices are in ``ScheduleInput.notes``. ``cache``: the
    group's :class:`SliceCache`, when it is sliced for many strategies (the same result).
    ``exchange`` False refuses a strategy whose readers need pieces of other tiles
    (**Exchanges**).

    Raises:
        Tx8labError: the strategy does not fit the group, or ``cache`` is another group's.
    """
    if strategy is None:
        return default_schedule(group_op, hw, multi_buffer=multi_buffer)[1]
    body = cache._for(group_op) if cache is not None else _Body(group_op)
    si, _ = _build(body, strategy, hw, with_cost=True, exchange=exchange)
    return si


def default_schedule(
    group_op: Op,
    hw: ChipConfig,
    *,
    multi_buffer: int = 2,
    chips: Mapping[int, tuple[int, ...]] | None = None,
    exchange: bool = True,
) -> tuple[Strategy, ScheduleInput]:
    """:func:`default_strategy` and its init pipeline, computed once.

    The input's ``notes`` say how the default was chosen. ``exchange``: as
    :func:`schedule_input`'s.
    """
    body = _Body(group_op)
    strategy, extra = _default(body, hw, multi_buffer, chips or {})
    si, _ = _build(body, strategy, hw, with_cost=True, exchange=exchange)
    if extra:
        si = replace(si, notes=(*si.notes, *extra))
    return strategy, si


def unsplit_strategy(group_op: Op, *, multi_buffer: int = 2) -> Strategy:
    """Every compute op of the group whole on one tile in one step (no sharding, no split).

    group-cost gives it to ``group_tag`` 2 groups (ops in DDR, "不切分").
    """
    body = _Body(group_op)
    return Strategy(
        {
            op.id: OpStrategy((1,) * len(body.dims[op.id]), (1,) * len(body.dims[op.id]))
            for op in body.compute
        },
        multi_buffer,
    )


def default_strategy(
    group_op: Op,
    hw: ChipConfig,
    *,
    multi_buffer: int = 2,
    chips: Mapping[int, tuple[int, ...]] | None = None,
) -> Strategy:
    """The documented default (module docstring): shard the largest dim, split until it fits.

    ``chips`` (op id -> chips per iteration dim, :func:`~tx8lab.core.schedule.chip_cuts.chip_cut`)
    cuts the group across chips first; the tiles then share one chip's piece.

    Raises:
        Tx8labError: nothing is left to split and the group still does not fit in SPM; the
            message lists the largest buffers.
    """
    return _default(_Body(group_op), hw, multi_buffer, chips or {})[0]


def _default(
    body: _Body, hw: ChipConfig, multi_buffer: int, chips: Mapping[int, tuple[int, ...]]
) -> tuple[Strategy, list[str]]:
    if multi_buffer < 1:
        raise Tx8labError(f"multi_buffer must be >= 1, got {multi_buffer}")
    roots = list(body.members)

    def chip_piece(o: int, i: int) -> int:
        cut = chips.get(o, ())
        return -(-body.dims[o][i].size // (cut[i] if cut else 1))

    size = {root: max(chip_piece(o, i) for o, i in body.members[root]) for root in roots}

    def all_members(root: tuple[int, int], flag: str) -> bool:
        return all(getattr(body.dims[o][i], flag) for o, i in body.members[root])

    shard = {root: 1 for root in roots}
    notes: list[str] = []
    left = body.tile_budget(hw)
    shardable = [
        r
        for r in roots
        if all_members(r, "shardable") and body.loop_of[r] != "ic" and r not in body.read_whole
    ]
    for root in sorted(shardable, key=lambda r: (-size[r], r)):
        if left <= 1 or size[root] <= 1:
            break
        f = min(left, size[root])
        shard[root] = f
        left //= f
        notes.append(f"shard {_dim_text(body, root)} over {f} tiles")
    split = {root: 1 for root in roots}
    capacity = hw.tile.spm_usable_bytes

    def strategy_of(splits: Mapping[tuple[int, int], int]) -> Strategy:
        ops: dict[int, OpStrategy] = {}
        for op in body.compute:
            n = len(body.dims[op.id])
            roots_of = [body.group_dim[(op.id, i)] for i in range(n)]
            cut = tuple(chips.get(op.id, ()))
            ops[op.id] = OpStrategy(
                tuple(shard[r] for r in roots_of),
                tuple(splits[r] for r in roots_of),
                cut if any(c > 1 for c in cut) else (),
            )
        return Strategy(ops, multi_buffer)

    def live(splits: Mapping[tuple[int, int], int]) -> tuple[int, ScheduleInput]:
        si, _ = _build(body, strategy_of(splits), hw, with_cost=False)
        return schedule_live_bytes(si, multi_buffer), si

    current, si = live(split)
    splittable = [r for r in roots if all_members(r, "splittable")]
    while current > capacity:
        # halve a dim of the largest buffer (weighted by its copies), the one that leaves
        # the fewest live bytes; any dim when none of the largest buffer's can be cut
        largest = _largest_buffer(si, multi_buffer)
        best: tuple[Any, ...] | None = None
        for root in splittable:
            piece = slice_extent(size[root], shard[root], split[root])
            if piece < 2:
                continue
            trial = {**split, root: effective_split(size[root], shard[root], split[root] * 2)}
            try:
                _slots(body, trial)
                got, trial_si = live(trial)
            except Tx8labError:
                # no loop order keeps its partial sums right, or a reader's chunk would
                # reach into another chunk (**Exchanges**)
                continue
            shrinks = trial_si.buffers[largest].bytes < si.buffers[largest].bytes
            key = (not shrinks, got, -piece, _LEVEL[body.loop_of[root]], root)
            if best is None or key < best[0]:
                best = (key, root, got, trial_si)
        if best is None:
            biggest = sorted(si.buffers.values(), key=lambda b: -b.bytes)[:6]
            listed = ", ".join(f"{b.id} {b.bytes:,} B" for b in biggest)
            raise SpmOverflow(
                f"group %{body.group.id} does not fit in SPM: {current:,} live bytes > "
                f"{capacity:,} usable and no dim is left to split; largest buffers: {listed}",
                needed_bytes=current,
                available_bytes=capacity,
            )
        _, root, current, si = best
        split[root] = effective_split(size[root], shard[root], split[root] * 2)
    for root in roots:
        if split[root] > 1:
            notes.append(f"split {_dim_text(body, root)} by {split[root]}")
    notes.append(f"live {current:,} B of {capacity:,} B usable SPM (x{multi_buffer} buffers)")
    return strategy_of(split), notes


def _largest_buffer(si: ScheduleInput, multi_buffer: int) -> str:
    """Id of the buffer that takes the most live bytes (the first such, in order)."""
    in_loop = {w for node in si.nodes for w in _loop_writes(node, False)}

    def weight(buf: Buffer) -> int:
        if buf.in_place_of is not None:
            return 0
        return buf.bytes * (multi_buffer if buf.kind == "value" and buf.id in in_loop else 1)

    return max(si.buffers.values(), key=weight).id


def _dim_text(body: _Body, root: tuple[int, int]) -> str:
    members = body.members[root]
    op_id, i = members[0]
    dim = body.dims[op_id][i]
    return f"{dim.name}={dim.size} of %{op_id} ({body.loop_of[root]}, {len(members)} linked)"


# ---------------------------------------------------------------- reports and bench


def groups_of(module: Module) -> list[Op]:
    """The top-level ``tx8be.Group`` ops of every function, in program order."""
    return [op for func in module.functions for op in func.ops if op.kind == "tx8be.Group"]


def engine_busy_cycles(si: ScheduleInput) -> dict[str, int]:
    """Cycles each engine is busy over the whole group (tasks times their Repeat counts)."""
    busy: dict[str, int] = {}
    for task, times in task_runs(si.nodes):
        busy[task.engine] = busy.get(task.engine, 0) + task.cycles * times
    return busy


def task_runs(nodes: Sequence[Node], times: int = 1) -> Iterator[tuple[Task, int]]:
    """Every task of ``nodes`` with how many times it runs (its Repeats' counts multiplied)."""
    for node in nodes:
        if isinstance(node, Repeat):
            yield from task_runs(node.body, times * node.times)
        else:
            yield node, times


def strategy_table(
    module: Module, hw: ChipConfig, *, multi_buffer: int = 2
) -> list[dict[str, Any]]:
    """One row per group under the default strategy: loop counts, tiles, buffers, cycles.

    ``bound_cycles`` is the busiest engine (a perfect pipeline), ``serial_cycles`` every task
    one after another (no overlap); the software pipeline lands in between.
    """
    rows: list[dict[str, Any]] = []
    for group in groups_of(module):
        body = _Body(group)
        strategy, _ = _default(body, hw, multi_buffer, {})
        si, plan = _build(body, strategy, hw, with_cost=True)
        busy = engine_busy_cycles(si)
        rows.append(
            {
                "group": group.id,
                "pattern": group.attrs.get("group_pattern")
                or " ".join(op.name for op in body.compute),
                "tiles": si.tiles,
                **{stage: plan.loop_counts[stage] for stage in STAGES},
                "tasks": _count_tasks(si.nodes),
                "buffers": len(si.buffers),
                "live_bytes": schedule_live_bytes(si, multi_buffer),
                "bound_cycles": max(busy.values(), default=0),
                "serial_cycles": sum(busy.values()),
                "limiting_engine": max(busy, key=busy.__getitem__) if busy else "",
            }
        )
    return rows


def _count_tasks(nodes: Sequence[Node]) -> int:
    return sum(_count_tasks(n.body) if isinstance(n, Repeat) else 1 for n in nodes)


__all__ = [
    "LOOP_STAGE",
    "STAGES",
    "STAGE_IC",
    "STAGE_NH",
    "STAGE_OC",
    "LinkedDims",
    "LoopSlot",
    "OpPlan",
    "SliceCache",
    "SlicePlan",
    "chunk_boxes",
    "chunk_dim",
    "chunk_shape",
    "default_schedule",
    "default_strategy",
    "engine_busy_cycles",
    "gather_readers",
    "groups_of",
    "linked_dims",
    "loop_counts",
    "loop_slots",
    "mixed_digits",
    "noc_bytes",
    "noc_ways",
    "plan_group",
    "region_tiles",
    "replicates_a_load",
    "schedule_input",
    "schedule_live_bytes",
    "strategy_table",
    "task_runs",
    "tile_order",
]
