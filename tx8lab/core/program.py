"""The program: one command stream per tile, the single record of what the chip does.

Spec: seed 001 ("TX8 Compiler": main.c is the program every tile runs on its shard; the
BatchNorm ``main.c`` load -> compute -> store loop; ``TSR`` / ``L_SHAPE`` / ``G_SHAPE``;
OP_INSTR_TYPE engines; "SPMAllocPass": each buffer at its allocated offset). A scheduled
module (after group-cost, opt-barrier and opt-ddr) becomes a :class:`Program`: for every
tile, the ordered :class:`Command` list with the engine, the op, the iteration box it
computes, the SPM byte ranges it reads and writes (with the lifetime each belongs to), the
DDR ranges it moves, the psum flags, and the barriers between groups. Each group's
schedule is built once into a :class:`GroupCode` (the loop nest of call sites) that the
Program keeps: the commands are its unrolling per tile, and the codegen pass prints main.c
from it. The host model of the chip (``tx8lab.core.hostmodel``) executes the commands,
and the C's executed call trace is compared with them command for command.

The schedule is rebuilt from the IR alone: each group's strategy (``tile_shard`` /
``tile_split`` on its body ops, ``multi_buffer``, ``retract``) through the recorded group
pipeline up to sw-pipeline (:func:`group_schedule`), the buffer versions of
``sw_pipeline.expand``, and the SPM offsets of ``spm_offsets``.

Readings chosen where the seed is vague:

- **Tiles.** A group runs on the tiles of its ``dev_region`` ``(x0, y0, x_dim, y_dim)`` (x
  is the mesh column, tile id ``row * columns + column``); its tiles are numbered in the
  region row by row (the *local* index). An op's tile coordinates are ``local mod
  product`` (the product of its shards) in mixed radix over its sharded iteration dims,
  the last fastest, the dims ordered by their group dims (``slicing.linked_dims``, so
  linked ops agree): a group dim that fewer of the group's ops shard varies slower. So an
  op that shards one dim more than its producer (a MatMul adding N to its Softmax
  input's B and M) keeps the producer's pieces on the same tiles, and a tile past the
  product repeats the work of tile ``local mod product`` (the same bytes; every tile
  runs the same code, as main.c does). Pieces that still land on other tiles are not
  moved (only the partial sums of a reduction dim sharded across tiles travel, below):
  the host model reports the read.
- **Loops.** The ``k``-th Repeat around a task is loop ``k`` of ``slicing.loop_slots``;
  its index counts the chunks of the split group dims of that loop (one stage's, or one
  group dim when a partial sum needs its own loop): mixed radix in the order of the group
  dims, last fastest. An op split by 1 on a dim takes its tile's whole piece.
- **Boxes.** Iteration dim ``i`` of size ``S`` with shard ``s`` and split ``q``: the tile's
  piece is ``ceil(S / s)``, a chunk ``ceil(piece / q)`` (``slice_extent``); chunk ``k`` of
  tile coordinate ``c`` is ``[c * piece + k * chunk, ...)``, clipped to the piece and to
  ``S`` (possibly empty: the tile has nothing there). Operand and result boxes come from
  the op library (``operand_window`` / ``result_window``: a conv's halo, a broadcast).
- **Loads** move the bounding box of what their compute readers read at the load's loop
  indices (a reader's loops the load sits outside of are at index 0: its operand does
  not change with them); a **store** moves the box its producer wrote.
- **Holders.** An SPM region holds one box of one value per lifetime: the bounding box of
  every access to that value through that lifetime on that tile (a producer outside a
  loop writes the whole piece that readers in the loop read chunk by chunk). An access
  touches a sub-box of its holder.
- **Addresses.** A buffer version's address is the offset of its lifetime in
  ``spm_offsets``: the root buffer's id when it is written once, ``root@g`` for its
  generation ``g`` otherwise; an imm buffer's ``name`` or ``name@k`` for its ``k``-th run
  (buffer-life's labels).
- **Gathers.** A table a Gather reads only some rows of (its slice keeps the rows its
  indices select: seed rdmaGather) is loaded by a *gather load*: the command reads the
  Gather's indices from SPM (``Command.gather``) and writes the picked rows in index
  order; that region's box counts positions in the index list along the axis
  (``Access.gather_axis``), and the Gather reads it so.
- **NoC reductions** (a ``noc:%7`` task: the op's reduction dim sharded across tiles,
  ``slicing`` **Reductions across tiles**). Each instance becomes, on each tile, the
  steps of its position in its reduction group (``NocReduce.groups``, local indices) of
  ``collectives.allreduce_plan``: per round its ``send`` s (``dte_send``: a chunk of its
  result to the peer's staging slot, or onto the peer's result when the pattern copies),
  then its ``recv`` s (``dte_recv``) each followed, when it adds, by a ``reduce``
  (``op_noc_add``: the landed chunk added into its result). A chunk is the result box cut
  along ``NocReduce.chunk_dim``; an empty chunk moves nothing (on either side: main.c
  still calls the library for it, which returns at once; ``Program.idle`` lists those
  transfers' tags). A send and its receive share a tag (:func:`noc_tag`) naming the
  group, task, iteration, transfer and both tiles.
- **Pieces read whole** (``slicing`` **Gathers**): the all-gather after a compute op
  passes round, as chunk ``p``, the op's result window on the ``p``-th tile of each
  gather group, landing in place in the buffer that holds the whole dim.
- **Exchanges** (``slicing`` **Exchanges**, a halo): copy ``k`` of ``NocReduce.moves``
  moves its window as far as the source tile's run of the op wrote it at these loop
  indices (a dim split in time carries its chunk along; an empty part moves nothing and
  is idle), from the source's result to the same box of the receiver's, in place.
- **Shared loads** (``slicing`` **Shared loads**): the load moves this tile's chunk of
  its window (its position in its share group; an empty chunk moves nothing and is
  idle), and its ``noc:%5`` task's sends and receives pass the chunks round, landing in
  place (the all-gather's plan, as above with no adds).
- A ``bypasscodegen`` constant (an Embedding table) is read in place from DDR. A value in
  DDR that no load moves and no constant is (a block argument a compute op reads
  directly) has no address: the program is refused with an error naming the op.
- Multi-chip strategies (``chip_cut``) are refused: one chip's program is built.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from tx8lab._bulk import constructor, gc_paused
from tx8lab.core.attrs import LayoutMode
from tx8lab.core.codegen_c import c_function
from tx8lab.core.grouping import is_compute
from tx8lab.core.ir import TERMINATORS, Module, Op, TensorType
from tx8lab.core.ops import get_op_def
from tx8lab.core.ops.registry import Window, WindowPlan, op_layout, value_bytes
from tx8lab.core.schedule.slicing import (
    chunk_boxes,
    gather_readers,
    linked_dims,
    loop_slots,
    op_tile_coords,
    region_tiles,
    tile_order,
)
from tx8lab.core.schedule.stages import StageSettings, run_group
from tx8lab.core.schedule.sw_pipeline import Instance, Use, expand
from tx8lab.core.schedule.tasks import (
    NocReduce,
    Node,
    OpStrategy,
    ScheduleInput,
    Strategy,
    Task,
    Timeline,
)
from tx8lab.errors import Tx8labError
from tx8lab.hw.collectives import (
    AllReducePlan,
    Transfer,
    allgather_plan,
    allreduce_plan,
    exchange_plan,
)
from tx8lab.hw.config import ChipConfig

ValueKey = tuple[int, int, bool]
LOADS = frozenset({"tx8be.LoadVar", "tx8be.LoadConst"})
STORE = "tx8be.StoreVar"
#: Top-level ops that need no code (see ``tx8lab.core.codegen``).
NO_CODE = frozenset({"tx8be.Tuple", "tx8be.Constant", "tx8be.LoadConst"})

What = Literal["load", "load_const", "store", "compute", "barrier", "send", "recv", "reduce"]


@dataclass(frozen=True, slots=True)
class Access:
    """One SPM or DDR range a command reads or writes."""

    space: Literal["spm", "ddr"]
    buffer: str
    """SPM: the buffer id (``%7``, ``%7.psum``, ``%7.imm``); DDR: ``DDR_<op id>``."""
    value: str
    """What the region holds: a value name (``%7``, ``%7:1``), ``%7.psum``, ``%7.imm``,
    or the DDR tensor's name."""
    lifetime: str
    """SPM: the lifetime label (``%7@1``); DDR: ""."""
    addr: int
    """SPM byte offset, or DDR byte address."""
    nbytes: int
    """Bytes of the region (the lifetime's allocation; a DDR tensor's footprint)."""
    dtype: str
    layout: str
    """``LayoutMode`` value of the bytes (``Cx``, ``Tensor`` ...)."""
    holder: Window
    """The box of the value the region holds."""
    window: Window
    """The box this command touches (inside ``holder``)."""
    gather_axis: int = -1
    """>= 0: the region holds rows of the value picked along this axis by a Gather's
    indices (seed rdmaGather), in index order; along it ``holder`` and ``window`` count
    positions in the index list, not rows of the value."""

    @property
    def holder_shape(self) -> tuple[int, ...]:
        """Extents of :attr:`holder`."""
        return tuple(b - a for a, b in self.holder)

    @property
    def shape(self) -> tuple[int, ...]:
        """Extents of :attr:`window`."""
        return tuple(b - a for a, b in self.window)


@dataclass(frozen=True, slots=True)
class Command:
    """One op-library call of one tile (an instruction of seed ``OP_INSTR_TYPE``)."""

    tile: int
    group: int
    what: What
    function: str
    """The C function main.c calls (``op_conv2d``, ``op_dma_load``, ``tsm_barrier``)."""
    op_id: int
    """The IR op (the group for a barrier)."""
    op_kind: str
    engine: str
    """Schedule engine: ld, st, ne, ct, tdma, dte; ``sync`` for a barrier."""
    task: str
    iteration: tuple[int, ...] = ()
    """Index of each enclosing loop, outermost first."""
    step: int = 0
    """Timeline step of this instance."""
    reads: tuple[Access, ...] = ()
    """Compute: one per operand, in order. DMA: the source."""
    writes: tuple[Access, ...] = ()
    """Compute: one per result kept in SPM. DMA: the destination."""
    imm: Access | None = None
    psum: Access | None = None
    psum_init: bool = True
    """First step of the reduction loop: the partial sum is written, not added."""
    psum_last: bool = True
    """Last step: the result is written out."""
    box: Window = ()
    """Compute: the iteration box of the slice."""
    clobbers: tuple[int, ...] = ()
    """Operands whose buffer the op overwrites (the op library says which)."""
    gather: Access | None = None
    """A gather load (seed rdmaGather): the SPM indices whose values pick the rows."""
    peer: int = -1
    """A ``send``: the tile it sends to; a ``recv``: the tile it receives from."""
    tag: str = ""
    """A ``send`` and the ``recv`` that takes its payload share one tag."""

    def fields(self) -> dict[str, Any]:
        """The command as JSON-able text (trace events and hover texts show it).

        C function, tile, op, each range it reads and writes as ``buffer@0xaddr[box]
        (lifetime)``, the psum range with its flags, and a gather's indices.
        """
        out: dict[str, Any] = {
            "function": self.function,
            "tile": self.tile,
            "op": f"%{self.op_id}",
            "reads": [_access_text(a, lifetime=True) for a in self.reads],
            "writes": [_access_text(a, lifetime=True) for a in self.writes],
        }
        if self.psum is not None:
            out["psum"] = f"{_access_text(self.psum, lifetime=True)} {_psum_flags(self)}"
        if self.gather is not None:
            out["gather"] = _access_text(self.gather, lifetime=True)
        if self.peer >= 0:
            out["peer"] = self.peer
        return out

    @property
    def label(self) -> str:
        """``tile 3 group %30 ne:%1 [0, 1]`` for messages."""
        at = f" {list(self.iteration)}" if self.iteration else ""
        return f"tile {self.tile} group %{self.group} {self.task}{at} (step {self.step})"


@dataclass(frozen=True)
class DdrTensor:
    """A tensor placed in DDR before the program runs, or read back after it."""

    name: str
    addr: int
    shape: tuple[int, ...]
    dtype: str
    layout: str
    nbytes: int
    source: Literal["input", "const", "output"]
    index: int
    """Argument index (input), the LoadConst op id (const), result index (output)."""


@dataclass(frozen=True)
class Output:
    """Where result ``index`` of ``main`` comes from after the run."""

    index: int
    kind: Literal["ddr", "const", "input"]
    tensor: DdrTensor | None = None
    op_id: int = -1
    """``const``: the top-level constant op."""
    arg: int = -1
    """``input``: the argument returned as it is."""


@dataclass(frozen=True)
class GroupCode:
    """One group's code, rolled: what main.c prints and the commands unroll.

    ``schedule.nodes`` is the loop nest (a ``Repeat`` is a ``for`` loop, a ``Task`` one
    call site); each :class:`Command` of the group is one instance of a site
    (``Command.task``) at one iteration of its loops (``Command.iteration``). Built once per
    group (:func:`group_code`): ``codegen`` prints the group's C from it and
    :func:`group_program` unrolls its commands from it, so the two cannot disagree on the
    schedule.
    """

    group: Op
    strategy: Strategy
    schedule: ScheduleInput
    """The init pipeline: loops, tasks, buffers."""
    timeline: Timeline
    instances: tuple[Instance, ...]
    """``sw_pipeline.expand``: every task instance with its buffer versions."""
    offsets: Mapping[str, tuple[int, int]]
    """Lifetime label -> (SPM offset, bytes): the group's ``spm_offsets``."""
    names: Mapping[ValueKey, str]
    """Value key -> buffer id (:func:`value_names`)."""

    @property
    def sites(self) -> list[str]:
        """Task ids in program order: one call of main.c each."""
        out: list[str] = []

        def walk(nodes: Sequence[Node]) -> None:
            for node in nodes:
                if isinstance(node, Task):
                    out.append(node.id)
                else:
                    walk(node.body)

        walk(self.schedule.nodes)
        return out


@dataclass(frozen=True)
class Program:
    """Every tile's command stream (module docstring)."""

    model: str
    hw: str
    tiles: Mapping[int, tuple[Command, ...]]
    groups: tuple[int, ...]
    """Top-level group ids in program order."""
    barriers: tuple[int, ...]
    """Groups followed by a barrier (opt-barrier ``need_barrier``)."""
    inputs: tuple[DdrTensor, ...]
    constants: tuple[DdrTensor, ...]
    outputs: tuple[Output, ...]
    ddr_bytes: int
    spm_base: int
    spm_limit: int
    """SPM addresses a command may touch: ``[spm_base, spm_limit)``."""
    code: Mapping[int, GroupCode] = field(default_factory=dict)
    """Group id -> its rolled form, the loop nest main.c prints (:class:`GroupCode`)."""
    idle: frozenset[str] = frozenset()
    """Tags (:func:`noc_tag`) of NoC transfers (transfer -1: a shared load's own chunk)
    whose chunk is empty: no command moves them, and main.c's calls for them do nothing."""
    regions: Mapping[int, tuple[int, ...]] = field(default_factory=dict)
    """Group id -> its region's tile ids by local index (``slicing.region_tiles``)."""

    @property
    def num_commands(self) -> int:
        """Commands over all tiles."""
        return sum(len(c) for c in self.tiles.values())

    def commands_per_tile(self) -> dict[int, int]:
        """Tile -> its command count."""
        return {t: len(c) for t, c in self.tiles.items()}

    def group_commands(self, group_id: int, tile: int) -> list[Command]:
        """The commands of one group on one tile (barrier included)."""
        return [c for c in self.tiles.get(tile, ()) if c.group == group_id]

    def command_args(self, tile: int = 0) -> dict[int, dict[tuple[str, tuple[int, ...]], Any]]:
        """Group id -> (task id, iteration) -> the JSON fields of that command on ``tile``.

        What a trace event shows of the call main.c makes for a timeline slot
        (``schedule.trace``): the C function, the op, and each SPM / DDR range read and
        written as ``buffer@0xaddr[box]`` with its lifetime; psum flags; a gather's indices.
        """
        out: dict[int, dict[tuple[str, tuple[int, ...]], Any]] = {}
        for c in self.tiles.get(tile, ()):
            if c.what != "barrier":
                out.setdefault(c.group, {})[(c.task, c.iteration)] = c.fields()
        return out

    def frame(self, tile: int | None = None) -> Any:
        """A pandas DataFrame, one row per command (of one tile, or all)."""
        import pandas as pd

        rows = []
        for t, commands in sorted(self.tiles.items()):
            if tile is not None and t != tile:
                continue
            for i, c in enumerate(commands):
                rows.append(
                    {
                        "tile": t,
                        "index": i,
                        "group": c.group,
                        "step": c.step,
                        "engine": c.engine,
                        "function": c.function,
                        "op": c.op_id,
                        "iteration": list(c.iteration),
                        "reads": ", ".join(_access_text(a) for a in c.reads),
                        "writes": ", ".join(_access_text(a) for a in c.writes),
                        "psum": "" if c.psum is None else _psum_text(c),
                    }
                )
        return pd.DataFrame(rows)


def _access_text(a: Access, lifetime: bool = False) -> str:
    life = f" ({a.lifetime})" if lifetime and a.lifetime and a.lifetime != a.buffer else ""
    return f"{a.buffer}@0x{a.addr:x}{_box_text(a.window)}{life}"


def _box_text(box: Window) -> str:
    return "[" + ",".join(f"{a}:{b}" for a, b in box) + "]"


def _psum_flags(c: Command) -> str:
    """``init``, ``last``, ``init+last`` or ``add`` (neither: accumulate)."""
    return "+".join(f for f, on in (("init", c.psum_init), ("last", c.psum_last)) if on) or "add"


def _psum_text(c: Command) -> str:
    return f"0x{c.psum.addr:x} {_psum_flags(c)}" if c.psum else ""


# ---------------------------------------------------------------------- the schedule


def strategy_of(group: Op) -> Strategy:
    """The group's strategy as group-cost wrote it into the IR."""
    if "multi_buffer" not in group.attrs or "spm_offsets" not in group.attrs:
        raise Tx8labError(
            f"codegen: group %{group.id} has no multi_buffer / spm_offsets attributes; run "
            "group-cost (the default pipeline) before codegen"
        )
    ops = {}
    for op in group.regions[0].ops:
        if "tile_shard" in op.attrs:
            ops[op.id] = OpStrategy(
                tuple(op.attrs["tile_shard"]),
                tuple(op.attrs["tile_split"]),
                tuple(op.attrs.get("chip_cut", ())),
            )
    share = bool(group.attrs.get("noc_share", False))
    return Strategy(ops, int(group.attrs["multi_buffer"]), share)


def group_schedule(group: Op, hw: ChipConfig) -> tuple[Strategy, ScheduleInput, Timeline]:
    """Strategy, init pipeline and timeline of a scheduled group, from the IR alone.

    The recorded group pipeline up to sw-pipeline; the SPM offsets come from the IR.
    """
    strategy = strategy_of(group)
    settings = StageSettings(
        multi_buffer=strategy.multi_buffer,
        retract=bool(group.attrs.get("retract", True)),
        max_pipeline_instances=None,  # group-cost accepted this schedule under its knob
    )
    run = run_group(group, strategy, hw, settings, until="sw-pipeline")
    return strategy, run.input, run.timeline


def value_names(group: Op, si: ScheduleInput) -> dict[ValueKey, str]:
    """Value key -> buffer id (Tuple results are their operands, as slicing reads them)."""
    alias: dict[ValueKey, ValueKey] = {}
    names: dict[ValueKey, str] = {}
    for op in group.regions[0].ops:
        if op.kind == "tx8be.Tuple":
            for res, v in zip(op.results, op.operands, strict=True):
                alias[res.key] = alias.get(v.key, v.key)
        for r in op.results:
            name = f"%{op.id}" if r.index == 0 else f"%{op.id}:{r.index}"
            if name in si.buffers:
                names[r.key] = name
    for key, target in alias.items():
        if target in names:
            names[key] = names[target]
    return names


def lifetime_labels(instances: Sequence[Instance]) -> tuple[dict[str, int], dict[str, int]]:
    """(generations per root buffer, runs per imm buffer) over the expanded program."""
    generations: dict[str, int] = {}
    runs: dict[str, int] = {}
    for inst in instances:
        for u in inst.writes:
            generations[u.root] = max(generations.get(u.root, 0), u.generation + 1)
        for b in inst.imm:
            runs[b] = runs.get(b, 0) + 1
    return generations, runs


def lifetime_label(buffer: str, index: int, count: int) -> str:
    """Buffer-life's label of version ``index`` of ``count``: ``%7`` alone, else ``%7@2``."""
    return buffer if count == 1 else f"{buffer}@{index}"


def use_label(use: Use, generations: Mapping[str, int]) -> str:
    """The lifetime label of a buffer version (``%7`` or ``%7@2``)."""
    return lifetime_label(use.root, use.generation, generations.get(use.root, 1))


class _GroupBoxes:
    """Iteration boxes of a group's compute ops per (tile, loop indices)."""

    def __init__(
        self,
        group: Op,
        strategy: Strategy,
        ops: Mapping[int, Op],
        memo: _BoxMemo | None = None,
        chip0: bool = False,
    ) -> None:
        self.strategy = strategy
        self.memo = memo if memo is not None else _BoxMemo()
        links = linked_dims(group)
        self.root = links.root
        self.dims = {
            op_id: get_op_def(ops[op_id].kind).iter_dims(ops[op_id])
            for op_id in strategy.ops
            if op_id in ops
        }
        for op_id, st in strategy.ops.items():
            if any(c > 1 for c in st.chips) and not chip0:
                raise Tx8labError(
                    f"program: group %{group.id} cuts %{op_id} across chips ({st.chips}); "
                    "the program of a multi-chip plan is not built yet, run with one chip"
                )
        # the loop of each split group dim and its digit in that loop's index
        self.digit: dict[tuple[int, int], tuple[int, int, tuple[int, ...]]] = {}
        for k, slot in enumerate(loop_slots(group, strategy)):
            for d, root in enumerate(slot.roots):
                self.digit[root] = (k, d, slot.splits)
        # tile order of the group dims: a dim fewer ops shard varies slower
        self.tile_order = tile_order(strategy, self.root)
        self._coords: dict[tuple[int, int], dict[int, int]] = {}
        self._cuts: dict[int, list[tuple[int, int, int, int, int, int]]] = {}
        self.slices = {
            op_id: get_op_def(ops[op_id].kind).temporal_slice_shape(ops[op_id], st)
            for op_id, st in strategy.ops.items()
            if op_id in ops
        }
        self.gathers = gather_readers(group, self.slices)
        """Table value -> the Gather whose indices pick its rows (a gather load)."""

    def tile_coords(self, op_id: int, local: int) -> dict[int, int]:
        key = (op_id, local)
        got = self._coords.get(key)
        if got is None:
            shard = self.strategy.ops[op_id].shard
            roots = [self.root[(op_id, i)] for i in range(len(shard))]
            got = self._coords[key] = op_tile_coords(shard, roots, self.tile_order, local)
        return got

    def _dim_cuts(self, op_id: int) -> list[tuple[int, int, int, int, int, int]]:
        """Per iteration dim: size, piece, chunk, and where its chunk index is read.

        The chunk of a split dim is digit ``d`` of loop ``k``'s index in the mixed radix of
        that loop's splits: ``(index // stride) % radix``; ``k`` is -1 for a dim that is
        not split (chunk 0).
        """
        got = self._cuts.get(op_id)
        if got is None:
            st = self.strategy.ops[op_id]
            got = []
            for i, dim in enumerate(self.dims[op_id]):
                # chip 0's piece when cut across chips (per_tile is chips x shard)
                piece = -(-dim.size // st.per_tile()[i])
                chunk = -(-piece // st.split[i])
                k, stride, radix = -1, 1, 1
                where = self.digit.get(self.root[(op_id, i)]) if st.split[i] > 1 else None
                if where is not None:
                    k, d, splits = where
                    stride, radix = math.prod(splits[d + 1 :]), splits[d]
                got.append((dim.size, piece, chunk, k, stride, radix))
            self._cuts[op_id] = got
        return got

    def family(self, op_id: int, local: int) -> int:
        """The id of the box family of ``op_id`` on tile ``local`` (see :class:`_BoxMemo`)."""
        coords = self.tile_coords(op_id, local)
        family = tuple((*cut, coords.get(i, 0)) for i, cut in enumerate(self._dim_cuts(op_id)))
        return self.memo.ids.setdefault(family, len(self.memo.ids))

    def compute_box(self, op_id: int, local: int, at: tuple[int, ...]) -> Window:
        """The iteration box of ``op_id`` on tile ``local`` at loop indices ``at``."""
        coords = self.tile_coords(op_id, local)
        out = []
        for i, (size, piece, chunk, k, stride, radix) in enumerate(self._dim_cuts(op_id)):
            c = (at[k] if k < len(at) else 0) // stride % radix if k >= 0 else 0
            base = coords.get(i, 0) * piece
            start = min(size, base + c * chunk)
            stop = min(size, base + piece, base + (c + 1) * chunk)
            out.append((start, max(start, stop)))
        return tuple(out)


class _BoxMemo:
    """Iteration boxes by what decides them, kept across the groups of a program.

    A box is a function of its op's *family* on a tile (per iteration dim: size, piece,
    chunk, which loop digit picks the chunk, the tile's coordinate) and the loop indices;
    the layers of a transformer repeat the same families, so each box is worked out once.
    """

    def __init__(self) -> None:
        self.ids: dict[tuple[tuple[int, ...], ...], int] = {}
        self.boxes: dict[tuple[int, tuple[int, ...]], Window] = {}


def task_loops(
    nodes: Sequence[Node], around: tuple[tuple[str, int], ...] = ()
) -> dict[str, tuple[tuple[str, int], ...]]:
    """Task id -> (stage, times) of each Repeat around it, outermost first."""
    out: dict[str, tuple[tuple[str, int], ...]] = {}
    for node in nodes:
        if isinstance(node, Task):
            out[node.id] = around
        else:
            out.update(task_loops(node.body, (*around, (node.stage, node.times))))
    return out


def group_code(group: Op, hw: ChipConfig) -> GroupCode:
    """The :class:`GroupCode` of a scheduled top-level group (its schedule, built once)."""
    strategy, si, timeline = group_schedule(group, hw)
    instances = tuple(expand(si, strategy.multi_buffer))
    offsets = {str(lid): (int(off), int(n)) for lid, off, n in group.attrs["spm_offsets"]}
    return GroupCode(group, strategy, si, timeline, instances, offsets, value_names(group, si))


def group_program(
    group: Op,
    hw: ChipConfig,
    code: GroupCode | None = None,
    *,
    chip0: bool = False,
    first_tile: bool = False,
) -> dict[int, list[Command]]:
    """The commands of one scheduled top-level group on each of its tiles.

    ``code`` is the group's :func:`group_code` (built here when not given). A strategy cut
    across chips is refused (the program of a multi-chip plan is not built), unless
    ``chip0``: then the commands are chip 0's, on its piece of every cut dim (the first
    ``ceil(size / (chips * shard))`` per tile coordinate, as slicing sizes it), which is
    what timing a multi-chip plan needs (every chip runs the same code on its piece).
    ``first_tile``: only the region's first tile (local index 0), whose piece is the
    largest in every dim (pieces are ``ceil(size / shard)`` from the start).
    """
    with gc_paused():  # every command survives: see tx8lab._bulk
        code = code if code is not None else group_code(group, hw)
        return _group_program(group, hw, code, _BoxMemo(), chip0=chip0, first_tile=first_tile)


def _group_program(
    group: Op,
    hw: ChipConfig,
    code: GroupCode,
    memo: _BoxMemo,
    *,
    chip0: bool = False,
    first_tile: bool = False,
    idle: set[str] | None = None,
) -> dict[int, list[Command]]:
    """:func:`group_program`; the tags of empty NoC transfers are added to ``idle``."""
    tiles = region_tiles(group, hw)
    unroll = _Unroll(group, code, memo, chip0, tiles)
    if first_tile:
        tiles = tiles[:1]
    out = {tile: unroll.commands(tile, local) for local, tile in enumerate(tiles)}
    if idle is not None:
        idle.update(unroll.idle)
    return out


def collective_plan(red: NocReduce) -> AllReducePlan:
    """The transfers of ``red``: its all-gather's or its all-reduce's plan."""
    if red.collective == "all-gather":
        return allgather_plan(red.ways, red.pattern)  # type: ignore[arg-type]
    if red.collective == "exchange":
        return exchange_plan(red.ways, [(a, b) for a, b, _ in red.moves])
    return allreduce_plan(red.ways, red.pattern)  # type: ignore[arg-type]


def group_position(red: NocReduce, local: int, where: str) -> tuple[tuple[int, ...], int]:
    """The reduction (share) group of the region's tile ``local`` and its position in it.

    Raises:
        Tx8labError: the tile is in none of ``red``'s groups (``where`` names the op).
    """
    for group in red.groups:
        if local in group:
            return group, group.index(local)
    raise Tx8labError(
        f"program: {where}: tile {local} of the region is in none of its {red.collective} "
        f"groups {red.groups}; re-run group-cost"
    )


def noc_tag(group: int, op_id: int, at: Sequence[int], transfer: int, src: int, dst: int) -> str:
    """The tag a NoC transfer's send and receive share (``Command.tag``).

    Examples:
        >>> noc_tag(30, 7, (1, 0), 2, 4, 5)
        '%30 noc:%7 [1, 0] #2 4->5'
    """
    return f"%{group} noc:%{op_id} {list(at)} #{transfer} {src}->{dst}"


# An SPM range of a command before its holder is known: the tile-independent part
# (:data:`_Spm`) and the window. ``_Spm`` is ((lifetime, value), buffer, lifetime, addr,
# bytes, dtype, layout, gather axis); the buffer is the value's name (the key's value).
_Spm = tuple[tuple[str, str], str, str, int, int, str, str, int]
_Draft = tuple[_Spm, Window]
_Ddr = tuple[str, int, int, str, str, Window]
"""A DDR tensor: name, address, bytes, dtype, layout, its whole box."""
_Head = tuple[int, What, str, int, str, str, str, tuple[int, ...], int]
"""``Command`` fields ``group`` .. ``step`` (the tile comes first)."""
_WindowOf = Callable[[Window], Window]
"""An op's iteration box -> the window of one of its operands or results."""

#: ``Access`` / ``Command`` from every field, positionally (a program has ~10^6 of each).
_new_access: Callable[..., Access] = constructor(Access)
_new_command: Callable[..., Command] = constructor(Command)


@dataclass(frozen=True, slots=True)
class _LoadSite:
    """What one load instance's command is on every tile: all but its windows."""

    head: _Head
    ddr: _Ddr
    dst: _Spm
    readers: tuple[tuple[int, _WindowOf], ...]
    """Its compute readers: op id and the window of the operand they read."""
    whole: Window
    """What it moves when nothing reads it."""
    picker: tuple[int, _WindowOf, _WindowOf, _Spm] | None
    """A gather load: the Gather's id, its table and index windows, the indices' range."""
    share: NocReduce | None = None
    """A shared load: its all-gather (each tile loads its position's chunk)."""


@dataclass(frozen=True, slots=True)
class _StoreSite:
    """What one store instance's command is on every tile: all but its windows."""

    head: _Head
    src: _Spm
    ddr: _Ddr
    owner: int
    """The op whose result it stores ..."""
    window: _WindowOf
    """... and that result's window; unless the owner is a load, whose value is stored as
    it is: then the store moves what the load does (``readers`` and ``whole``)."""
    readers: tuple[tuple[int, _WindowOf], ...] | None
    whole: Window


@dataclass(frozen=True, slots=True)
class _ComputeSite:
    """What one compute instance's command is on every tile: all but its box and windows."""

    head: _Head
    op_id: int
    reads: tuple[tuple[_Spm | None, _Ddr, _WindowOf], ...]
    """Per operand: its SPM range (None: read in place from the DDR tensor), the window."""
    writes: tuple[tuple[_Spm, _WindowOf], ...]
    """Each result kept in SPM: its range and window."""
    psum: tuple[_Spm, _WindowOf] | None
    psum_init: bool
    psum_last: bool
    imm: Access | None
    clobbers: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class _NocSite:
    """One all-reduce instance (``noc:%7``), or a shared load's all-gather (``noc:%5``)."""

    head: _Head
    op_id: int
    result: _Spm
    window: _WindowOf
    """The op's iteration box -> its result's window (the piece summed)."""
    staging: Access | None
    """The ``%7.noc`` scratch: slot ``k`` is ``slot_bytes`` at ``addr + k * slot_bytes``
    (None for an all-gather, which lands in place)."""
    reduce: NocReduce
    plan: AllReducePlan
    readers: tuple[tuple[int, _WindowOf], ...] | None = None
    """An all-gather: the value's compute readers (its window is theirs, as the load's)."""
    computed: bool = False
    """An all-gather of a compute op's pieces: position ``p`` holds the op's result window
    on the ``p``-th tile of its group (else the chunks of the readers' window)."""


_Site = _LoadSite | _StoreSite | _ComputeSite | _NocSite
_NO_DDR: _Ddr = ("", -1, 0, "", "", ())


def _empty_box(box: Window) -> bool:
    return any(b <= a for a, b in box)


def _bbox(a: Window, b: Window) -> Window:
    return tuple((min(x0, y0), max(x1, y1)) for (x0, x1), (y0, y1) in zip(a, b, strict=True))


def _whole(shape: Sequence[int]) -> Window:
    return tuple((0, int(d)) for d in shape)


def _same(box: Window) -> Window:
    return box


def _plan_window(plan: WindowPlan, n: int) -> _WindowOf:
    """The function box -> window of a window plan over ``n`` iteration dims."""
    if plan == tuple(range(n)):
        return _same
    if not plan:
        return lambda box: ()
    consts = tuple(p for p in plan if not isinstance(p, int))
    # a fixed range is read from the constants appended after the box
    index: list[int] = []
    fixed = 0
    for p in plan:
        if isinstance(p, int):
            index.append(p)
        else:
            index.append(n + fixed)
            fixed += 1
    if len(index) == 1:
        i = index[0]
        if consts:
            return lambda box: consts
        return lambda box: (box[i],)
    get: _WindowOf = operator.itemgetter(*index)
    if not consts:
        return get
    return lambda box: get(box + consts)


def _with_axis(spm: _Spm, axis: int) -> _Spm:
    """``spm`` holding a Gather's rows picked along ``axis`` (``Access.gather_axis``)."""
    key, buffer, label, addr, nbytes, dtype, layout, _ = spm
    return (key, buffer, label, addr, nbytes, dtype, layout, axis)


def _gathered(table: Window, index_window: Window, axis: int) -> Window:
    """A Gather's table as the rows its indices pick, in order: positions along ``axis``."""
    rows = math.prod(b - a for a, b in index_window)
    return tuple((0, rows) if e == axis else w for e, w in enumerate(table))


class _Unroll:
    """One group's commands per tile (:func:`group_program`, module docstring).

    What a command is on every tile (its buffers, lifetime labels, SPM offsets, DDR
    tensor, scratch, psum flags, and how its windows follow from iteration boxes) is worked
    out once per instance (:meth:`_site`); per tile only the boxes and the windows are.
    Each SPM range's holder is the bounding box of its (lifetime, value)'s windows on the
    tile, so a tile's commands are drafted first and built once every holder is known.
    """

    def __init__(
        self,
        group: Op,
        code: GroupCode,
        memo: _BoxMemo | None = None,
        chip0: bool = False,
        tiles: Sequence[int] = (),
    ) -> None:
        self.group = group
        self.instances = code.instances
        self.generations, self.runs = lifetime_labels(self.instances)
        self.offsets = code.offsets
        self.steps = {(s.task, s.iteration): s.step for s in code.timeline.slots}
        ops = {op.id: op for op in group.regions[0].ops if op.kind not in TERMINATORS}
        self.ops = ops
        self.names = code.names
        self.boxes = _GroupBoxes(group, code.strategy, ops, memo, chip0)
        self.reductions = code.schedule.reductions
        self.tiles = tiles
        """The region's tile ids by local index (a NoC transfer's peer)."""
        self.idle: set[str] = set()
        """Tags of the NoC transfers left out because their chunk is empty."""
        self.loops = task_loops(code.schedule.nodes)
        self.alias: dict[ValueKey, ValueKey] = {}
        self.readers: dict[ValueKey, list[tuple[Op, int]]] = {}
        for op in ops.values():
            if op.kind == "tx8be.Tuple":
                for res, v in zip(op.results, op.operands, strict=True):
                    self.alias[res.key] = self.alias.get(v.key, v.key)
        for op in ops.values():
            if op.id in code.strategy.ops and is_compute(op):
                for j, v in enumerate(op.operands):
                    self.readers.setdefault(self.alias.get(v.key, v.key), []).append((op, j))
        imm_seen: dict[str, int] = {}
        self.imm_index: list[int] = []
        for inst in self.instances:
            for b in inst.imm:
                imm_seen[b] = imm_seen.get(b, 0) + 1
            self.imm_index.append(max((imm_seen[b] - 1 for b in inst.imm), default=0))
        self.sites: list[_Site | None] = [None] * len(self.instances)
        self._windows: dict[tuple[int, int, bool], _WindowOf] = {}
        self._load_sites: dict[int, _LoadSite] = {}

    # ------------------------------------------------------------------ windows
    def window_of(self, op: Op, index: int, *, result: bool = False) -> _WindowOf:
        """``operand_window`` (``result_window``) of ``op``: by its plan, or kept per box."""
        key = (op.id, index, result)
        got = self._windows.get(key)
        if got is not None:
            return got
        entry = get_op_def(op.kind)
        plan = entry.window_plan(op, index, result=result)
        if plan is not None:
            got = _plan_window(plan, len(entry.iter_dims(op)))
        else:
            memo: dict[Window, Window] = {}
            method = entry.result_window if result else entry.operand_window

            def window(box: Window) -> Window:
                w = memo.get(box)
                if w is None:
                    w = memo[box] = method(op, index, box)
                return w

            got = window
        self._windows[key] = got
        return got

    def readers_of(self, load: Op) -> tuple[tuple[int, _WindowOf], ...]:
        """The compute readers of a load's value: op id, window of the operand they read."""
        readers = self.readers.get(load.results[0].key, ())
        return tuple((user.id, self.window_of(user, j)) for user, j in readers)

    # ------------------------------------------------------------------ sites
    def _spm(self, buffer: str, label: str, dtype: str, layout: str, where: str) -> _Spm:
        if label not in self.offsets:
            raise Tx8labError(
                f"program: {where}: spm_offsets has no lifetime {label!r} for buffer "
                f"{buffer!r}; the allocation does not match the schedule, re-run group-cost"
            )
        addr, nbytes = self.offsets[label]
        return ((label, buffer), buffer, label, addr, nbytes, dtype, layout, -1)

    def _site(self, n: int) -> _Site:
        inst = self.instances[n]
        task = inst.task
        op = self.ops[task.op_id]
        where = f"group %{self.group.id} {op.label}"

        def head(what: What, function: str) -> _Head:
            step = self.steps.get(inst.key, 0)
            return (self.group.id, what, function, op.id, op.kind, task.engine, task.id,
                    inst.iteration, step)  # fmt: skip

        reads = {u.buffer: u for u in inst.reads}
        writes = {u.buffer: u for u in inst.writes}
        gen = self.generations
        if task.id.startswith("noc:"):
            return self._noc_site(n, head("send", "dte_send"), reads, writes, where)
        if op.kind in LOADS:
            key = op.results[0].key
            ttype = op.results[0].type
            layout = op_layout(op).value
            ddr = _ddr_tensor(op, ttype.shape, ttype.dtype, layout)
            buf = self.names[key]
            dst = self._spm(buf, use_label(writes[buf], gen), ttype.dtype, layout, where)
            what: What = "load_const" if op.kind == "tx8be.LoadConst" else "load"
            gather = self.boxes.gathers.get(key)
            picker = None
            if gather is not None:
                index_value = gather.operands[1]
                ikey = self.alias.get(index_value.key, index_value.key)
                name = self.names.get(ikey)
                if name is None or name not in reads:
                    raise Tx8labError(
                        f"program: {where}: the gather load of {gather.label} needs its "
                        "indices in SPM before it; load them first (group-ldst, the default "
                        "pipeline)"
                    )
                indices = self._spm(
                    name,
                    use_label(reads[name], gen),
                    index_value.type.dtype,
                    op_layout(self.ops[ikey[0]]).value,
                    where,
                )
                axis = int(get_op_def(gather.kind).attr(gather, "axis"))
                dst = _with_axis(dst, axis % gather.operands[0].type.rank)
                table, rows = self.window_of(gather, 0), self.window_of(gather, 1)
                picker = (gather.id, table, rows, indices)
            function = "op_dma_gather" if gather is not None else "op_dma_" + what
            return _LoadSite(
                head(what, function),
                ddr,
                dst,
                self.readers_of(op),
                _whole(ttype.shape),
                picker,
                self.reductions.get(op.id),
            )
        if op.kind == STORE:
            key = self.alias.get(op.operands[0].key, op.operands[0].key)
            ttype = op.operands[0].type
            buf = self.names[key]
            owner = self.ops[key[0]]
            layout = op_layout(owner).value
            src = self._spm(buf, use_label(reads[buf], gen), ttype.dtype, layout, where)
            ddr = _ddr_tensor(op, ttype.shape, ttype.dtype, op_layout(op).value)
            readers = None
            window: _WindowOf = _same
            if owner.kind in LOADS:
                readers = self.readers_of(owner)
            else:
                window = self.window_of(owner, key[1], result=True)
            whole = _whole(owner.results[0].type.shape)
            return _StoreSite(
                head("store", "op_dma_store"), src, ddr, owner.id, window, readers, whole
            )
        entry = get_op_def(op.kind)
        layout = op_layout(op).value
        operands: list[tuple[_Spm | None, _Ddr, _WindowOf]] = []
        for j, v in enumerate(op.operands):
            key = self.alias.get(v.key, v.key)
            name = self.names.get(key)
            window = self.window_of(op, j)
            if name is not None:
                owner = self.ops[key[0]]
                label = use_label(reads[name], gen)
                spm = self._spm(name, label, v.type.dtype, op_layout(owner).value, where)
                if j == 0 and owner.kind in LOADS and self.boxes.gathers.get(key) is op:
                    # the table's rows came in index order (the gather load's compact box)
                    axis = int(entry.attr(op, "axis")) % v.type.rank
                    spm = _with_axis(spm, axis)
                    window = _gathered_window(window, self.window_of(op, 1), axis)
                operands.append((spm, _NO_DDR, window))
                continue
            source = None if v.is_arg else self.ops.get(v.owner)
            if source is not None and source.kind in LOADS and source.attrs.get("bypasscodegen"):
                layout_of = op_layout(source).value
                ddr = _ddr_tensor(source, v.type.shape, v.type.dtype, layout_of)
                operands.append((None, ddr, window))
                continue
            raise Tx8labError(
                f"program: {op.label} operand {j} in group %{self.group.id} is neither in SPM "
                "nor a bypasscodegen constant in DDR; it has no address the program could "
                "read (run group-ldst, the default pipeline, so every input is loaded)"
            )
        results = []
        for r in op.results:
            name = self.names.get(r.key)
            if name is not None:
                spm = self._spm(name, use_label(writes[name], gen), r.type.dtype, layout, where)
                results.append((spm, self.window_of(op, r.index, result=True)))
        psum_name = f"%{op.id}.psum"
        psum = None
        init = last = True
        if psum_name in writes:
            dtype = "f32" if op.results[0].type.dtype not in ("i8", "i32", "i64", "i1") else "i32"
            label = use_label(writes[psum_name], gen)
            psum = (
                self._spm(psum_name, label, dtype, "Tensor", where),
                self.window_of(op, 0, result=True),
            )
            if inst.iteration:
                # sw_pipeline.expand restarts a psum when the innermost loop is at 0
                init = inst.iteration[-1] == 0
                last = inst.iteration[-1] == self.loops[task.id][-1][1] - 1
        imm_name = f"%{op.id}.imm"
        imm = None
        if imm_name in inst.imm:
            imm = self._scratch(n, imm_name, "i8", "Tensor", where)
        clobbers = tuple(getattr(entry, "clobbered_operands", lambda _op: ())(op))
        return _ComputeSite(
            head("compute", c_function(op.kind)),
            op.id,
            tuple(operands),
            tuple(results),
            psum,
            init,
            last,
            imm,
            clobbers,
        )

    def _noc_site(
        self,
        n: int,
        head: _Head,
        reads: Mapping[str, Use],
        writes: Mapping[str, Use],
        where: str,
    ) -> _NocSite:
        op = self.ops[self.instances[n].task.op_id]
        red = self.reductions.get(op.id)
        if red is None:
            raise Tx8labError(
                f"program: {where}: the schedule has a NoC reduction task but no reduction "
                "for the op; re-run group-cost"
            )
        res = op.results[0]
        name = self.names[res.key]
        result = self._spm(
            name, use_label(reads[name], self.generations), res.type.dtype,
            op_layout(op).value, where,
        )  # fmt: skip
        plan = collective_plan(red)
        if red.collective == "all-gather":
            readers = self.readers_of(op)
            if op.kind in LOADS:
                return _NocSite(head, op.id, result, _same, None, red, plan, readers)
            window = self.window_of(op, 0, result=True)
            return _NocSite(head, op.id, result, window, None, red, plan, readers, computed=True)
        if red.collective == "exchange":  # lands in place, no staging
            return _NocSite(
                head, op.id, result, self.window_of(op, 0, result=True), None, red, plan
            )
        staging = self._scratch(n, f"%{op.id}.noc", res.type.dtype, op_layout(op).value, where)
        return _NocSite(head, op.id, result, self.window_of(op, 0, result=True), staging, red, plan)

    def _scratch(self, n: int, name: str, dtype: str, layout: str, where: str) -> Access:
        """Instance ``n``'s run of the scratch (imm) buffer ``name``, all of its bytes."""
        label = lifetime_label(name, self.imm_index[n], self.runs.get(name, 1))
        if label not in self.offsets:
            raise Tx8labError(
                f"program: {where}: spm_offsets has no lifetime {label!r} for its scratch "
                f"{name}; the allocation does not match the schedule, re-run group-cost"
            )
        addr, nbytes = self.offsets[label]
        whole = ((0, nbytes),)
        return Access("spm", name, name, label, addr, nbytes, dtype, layout, whole, whole)

    def noc_commands(
        self,
        site: _NocSite,
        local: int,
        window: Window,
        hold: Callable[[_Spm, Window], _Draft],
    ) -> list[tuple[What, str, tuple[Any, ...], tuple[Any, ...], int, str]]:
        """The sends, receives and adds of one all-reduce (all-gather) on tile ``local``.

        ``window``: the piece summed (gathered). Each is (what, function, reads, writes,
        peer tile, tag); sends and receives of an empty chunk are left out (on both
        sides: the tiles of a group share the piece).
        """
        red = site.reduce
        group, pos = group_position(red, local, f"group %{self.group.id} %{site.op_id}")
        st = site.staging
        group_id, _, _, op_id, _, _, _, at, _ = site.head
        if site.computed:  # each position's own piece
            box = self.boxes.compute_box
            chunks = [site.window(box(site.op_id, g, at)) for g in group]
        elif red.collective == "exchange":  # copy k: its window within the source's run
            run_box = self.boxes.compute_box
            chunks = []
            for origin, _, w in red.moves:
                ran = site.window(run_box(site.op_id, origin, at))
                pairs = zip(w, ran, strict=True)
                chunks.append(tuple((max(a, c), min(b, d)) for (a, b), (c, d) in pairs))
        else:
            chunks = chunk_boxes(window, red.chunks, red.chunk_dim)
        out: list[tuple[What, str, tuple[Any, ...], tuple[Any, ...], int, str]] = []

        def landing(t: Transfer, chunk: Window) -> Any:
            if not t.add or st is None:
                return hold(site.result, chunk)
            return replace(
                st,
                value=f"{st.value}{t.slot}",
                addr=st.addr + t.slot * red.slot_bytes,
                nbytes=red.slot_bytes,
                holder=chunk,
                window=chunk,
            )

        for k, t in site.plan.steps(pos):
            chunk = chunks[t.chunk]
            sender, receiver = self.tiles[group[t.src]], self.tiles[group[t.dst]]
            tag = noc_tag(group_id, op_id, at, k, sender, receiver)
            if _empty_box(chunk):
                self.idle.add(tag)
                continue
            land = landing(t, chunk)
            if t.src == pos:
                src = hold(site.result, chunk)
                out.append(("send", "dte_send", (src,), (land,), receiver, tag))
                continue
            out.append(("recv", "dte_recv", (), (land,), sender, tag))
            if t.add:
                acc = hold(site.result, chunk)
                out.append(("reduce", "op_noc_add", (land, acc), (acc,), -1, ""))
        return out

    # ------------------------------------------------------------------ one tile
    def commands(self, tile: int, local: int) -> list[Command]:
        """The group's commands on ``tile`` (the ``local``-th of its region)."""
        holder: dict[tuple[str, str], Window] = {}
        held = holder.get
        families: dict[int, int] = {}
        boxes = self.boxes.memo.boxes
        known_box = boxes.get
        compute_box = self.boxes.compute_box

        def box_of(op_id: int, at: tuple[int, ...]) -> Window:
            family = families.get(op_id)
            if family is None:
                family = families[op_id] = self.boxes.family(op_id, local)
            key = (family, at)
            box = known_box(key)
            if box is None:
                box = boxes[key] = compute_box(op_id, local, at)
            return box

        def hold(spm: _Spm, window: Window) -> _Draft:
            key = spm[0]
            got = held(key)
            if got is None:
                holder[key] = window
            elif got != window:
                holder[key] = _bbox(got, window)
            return (spm, window)

        def load_window(readers: tuple[tuple[int, _WindowOf], ...], at: tuple[int, ...]) -> Window:
            # what a load moves: the bounding box of its compute readers' reads at ``at``
            out: Window | None = None
            for user, window in readers:
                w = window(box_of(user, at))
                out = w if out is None else _bbox(out, w)
            assert out is not None
            return out

        # the last field: a compute's box, or a NoC command's (what, function, peer, tag)
        drafts: list[tuple[_Site, Any, Any, _Draft | None, Access | None, Any]] = []
        draft = drafts.append
        new_access = _new_access
        sites = self.sites
        for n, inst in enumerate(self.instances):
            site = sites[n]
            if site is None:
                site = sites[n] = self._site(n)
            at = inst.iteration
            if type(site) is _ComputeSite:
                box = box_of(site.op_id, at)
                reads: list[Access | _Draft] = []
                for spm, ddr, window in site.reads:
                    win = window(box)
                    if spm is None:
                        name, addr, nbytes, dtype, layout, whole = ddr
                        reads.append(new_access("ddr", name, name, "", addr, nbytes, dtype, layout,
                                                whole, win, -1))  # fmt: skip
                        continue
                    reads.append(hold(spm, win))
                writes = [hold(spm, window(box)) for spm, window in site.writes]
                psum = None if site.psum is None else hold(site.psum[0], site.psum[1](box))
                draft((site, reads, writes, psum, None, box))
            elif type(site) is _LoadSite:
                win = load_window(site.readers, at) if site.readers else site.whole
                if site.share is not None:  # a shared load: this tile's chunk of it
                    red = site.share
                    where = f"group %{site.head[0]} %{site.head[3]}"
                    _, pos = group_position(red, local, where)
                    win = chunk_boxes(win, red.chunks, red.chunk_dim)[pos]
                    if _empty_box(win):
                        self.idle.add(noc_tag(site.head[0], site.head[3], at, -1, tile, tile))
                        continue
                name, addr, nbytes, dtype, layout, whole = site.ddr
                src = new_access("ddr", name, name, "", addr, nbytes, dtype, layout, whole, win, -1)
                gather = None
                if site.picker is not None:
                    picker, table, rows, indices = site.picker
                    pbox = box_of(picker, at)
                    index_window = rows(pbox)
                    _, buffer, label, addr, nbytes, dtype, layout, axis = indices
                    gather = new_access("spm", buffer, buffer, label, addr, nbytes, dtype, layout,
                                        index_window, index_window, axis)  # fmt: skip
                    win = _gathered(table(pbox), index_window, site.dst[7])
                draft((site, (src,), (hold(site.dst, win),), None, gather, ()))
            elif type(site) is _NocSite:
                if site.readers is not None:  # an all-gather: the load's window
                    piece = load_window(site.readers, at)
                else:
                    piece = site.window(box_of(site.op_id, at))
                for noc in self.noc_commands(site, local, piece, hold):
                    draft((site, noc[2], noc[3], None, None, (noc[0], noc[1], noc[4], noc[5])))
            elif type(site) is _StoreSite:
                if site.readers is None:
                    win = site.window(box_of(site.owner, at))
                else:
                    win = load_window(site.readers, at) if site.readers else site.whole
                name, addr, nbytes, dtype, layout, whole = site.ddr
                dst = new_access("ddr", name, name, "", addr, nbytes, dtype, layout, whole, win, -1)
                draft((site, (hold(site.src, win),), (dst,), None, None, ()))
        out = []
        new_command = _new_command
        for site, reads, writes, psum, gather, box in drafts:
            if type(site) is _ComputeSite:
                imm, init, last, clobbers = site.imm, site.psum_init, site.psum_last, site.clobbers
            else:
                imm, init, last, clobbers = None, True, True, ()
            group, what, function, op_id, op_kind, engine, task, iteration, step = site.head
            peer, tag = -1, ""
            if type(site) is _NocSite:
                what, function, peer, tag = box
                box = ()
            out.append(
                new_command(
                    tile,
                    group,
                    what,
                    function,
                    op_id,
                    op_kind,
                    engine,
                    task,
                    iteration,
                    step,
                    tuple([_built(a, holder) for a in reads]),
                    tuple([_built(a, holder) for a in writes]),
                    imm,
                    None if psum is None else _built(psum, holder),
                    init,
                    last,
                    box,
                    clobbers,
                    gather,
                    peer,
                    tag,
                )
            )
        return out


def _gathered_window(table: _WindowOf, rows: _WindowOf, axis: int) -> _WindowOf:
    """A Gather's table window, as the rows its indices pick (:func:`_gathered`)."""
    return lambda box: _gathered(table(box), rows(box), axis)


def _built(a: Access | _Draft, holder: Mapping[tuple[str, str], Window]) -> Access:
    """A drafted SPM range with its holder (a DDR range is built already)."""
    if type(a) is tuple:
        (key, buffer, label, addr, nbytes, dtype, layout, axis), window = a
        return _new_access(
            "spm", buffer, buffer, label, addr, nbytes, dtype, layout, holder[key], window, axis
        )
    assert isinstance(a, Access)
    return a


def _ddr_tensor(op: Op, shape: Sequence[int], dtype: str, layout: str) -> _Ddr:
    addr = op.attrs.get("ddr_addr")
    if addr is None:
        raise Tx8labError(
            f"program: {op.label} has no ddr_addr; run opt-ddr (the default pipeline) first"
        )
    nbytes = value_bytes(tuple(shape), dtype, LayoutMode(layout))
    return (f"DDR_{op.id}", int(addr), nbytes, dtype, layout, _whole(shape))


# ---------------------------------------------------------------------- the module


def _placed(
    name: str, op: Op, ttype: TensorType, source: Literal["input", "const", "output"], index: int
) -> DdrTensor:
    """The DDR tensor ``op`` moves, at its ``ddr_addr`` (-1 when opt-ddr did not run)."""
    layout = op_layout(op).value
    nbytes = value_bytes(ttype.shape, ttype.dtype, LayoutMode(layout))
    addr = int(op.attrs.get("ddr_addr", -1))
    return DdrTensor(name, addr, ttype.shape, ttype.dtype, layout, nbytes, source, index)


def build_program(module: Module, hw: ChipConfig) -> Program:
    """The :class:`Program` of a scheduled module (every top-level group of ``main``).

    Raises:
        Tx8labError: an op outside every group that needs code, a group not scheduled
            (run the default pipeline), or an access without an address; the message
            names the group and the op.
    """
    with gc_paused():  # every command survives: see tx8lab._bulk
        return _build_program(module, hw)


def _build_program(module: Module, hw: ChipConfig) -> Program:
    main = module.main
    tiles: dict[int, list[Command]] = {t: [] for t in range(hw.tiles_per_chip)}
    groups: list[int] = []
    barriers: list[int] = []
    loaded_args: dict[int, list[Op]] = {}
    constants: dict[int, DdrTensor] = {}
    stored: dict[ValueKey, DdrTensor] = {}
    code: dict[int, GroupCode] = {}
    memo = _BoxMemo()  # boxes repeat across groups (a transformer's layers)
    idle: set[str] = set()
    regions: dict[int, tuple[int, ...]] = {}
    for top in main.ops:
        if top.kind in TERMINATORS or top.kind in NO_CODE:
            continue
        if top.kind != "tx8be.Group":
            raise Tx8labError(
                f"program: {top.label} is outside every group; main.c runs groups only "
                "(run the group pass, the default pipeline, first)"
            )
        groups.append(top.id)
        regions[top.id] = tuple(region_tiles(top, hw))
        code[top.id] = group_code(top, hw)
        for tile, commands in _group_program(top, hw, code[top.id], memo, idle=idle).items():
            tiles[tile].extend(commands)
        body = top.regions[0]
        outer = dict(zip((a.key for a in body.args), top.operands, strict=True))
        for op in body.ops:
            if op.kind == "tx8be.LoadVar":
                src = outer.get(op.operands[0].key)
                if src is not None and src.is_arg:
                    loaded_args.setdefault(src.index, []).append(op)
            elif op.kind == "tx8be.LoadConst":
                const = _placed(f"%{op.id}", op, op.results[0].type, "const", op.id)
                constants.setdefault(const.addr, const)
        ret = body.ops[-1]
        for r, v in zip(top.results, ret.operands, strict=True):
            owner = None if v.is_arg else next((o for o in body.ops if o.id == v.owner), None)
            if owner is not None and owner.kind == STORE:
                stored[r.key] = _placed(f"%{owner.id}", owner, v.type, "output", r.index)
        if top.attrs.get("need_barrier"):
            barriers.append(top.id)
            for tile in tiles:  # main() calls tsm_barrier() on every tile
                tiles[tile].append(
                    Command(
                        tile, top.id, "barrier", "tsm_barrier", top.id, top.kind, "sync", "sync"
                    )
                )
    inputs = [
        _placed(f"%arg{arg.index}", load, arg.type, "input", arg.index)
        for arg in main.args
        for load in loaded_args.get(arg.index, [])
    ]
    outputs = []
    ret = main.ops[-1]
    for i, v in enumerate(ret.operands):
        if v.is_arg:
            outputs.append(Output(i, "input", arg=v.index))
        elif v.key in stored:
            outputs.append(Output(i, "ddr", replace(stored[v.key], index=i)))
        else:
            owner = next(o for o in main.ops if o.id == v.owner)
            if owner.kind in ("tx8be.Constant", "tx8be.LoadConst"):
                outputs.append(Output(i, "const", op_id=owner.id))
            else:
                raise Tx8labError(
                    f"program: result {i} of main comes from {owner.label}, which stores "
                    "nothing to DDR; the program cannot return it"
                )
    placed = [*inputs, *constants.values(), *(o.tensor for o in outputs if o.tensor)]
    for tensor in placed:
        if tensor.addr < 0:
            raise Tx8labError(
                f"program: {tensor.name} has no ddr_addr; run opt-ddr (the default pipeline) first"
            )
    ddr_bytes = max((d.addr + d.nbytes for d in placed), default=0)
    return Program(
        str(module.attrs.get("tx8.model", "unnamed model")),
        hw.name,
        {t: tuple(c) for t, c in tiles.items()},
        tuple(groups),
        tuple(barriers),
        tuple(inputs),
        tuple(constants.values()),
        tuple(outputs),
        ddr_bytes,
        hw.tile.spm_alloc_base_bytes,
        hw.tile.spm_limit_bytes,
        code,
        frozenset(idle),
        regions,
    )


__all__ = [
    "Access",
    "Command",
    "DdrTensor",
    "GroupCode",
    "Output",
    "Program",
    "build_program",
    "collective_plan",
    "group_code",
    "group_position",
    "group_program",
    "group_schedule",
    "lifetime_label",
    "lifetime_labels",
    "noc_tag",
    "region_tiles",
    "strategy_of",
    "task_loops",
    "use_label",
    "value_names",
]
