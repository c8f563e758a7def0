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
  moved (no NoC yet): the host model reports the read.
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
- A ``bypasscodegen`` constant (an Embedding table) is read in place from DDR. A value in
  DDR that no load moves and no constant is (a block argument a compute op reads
  directly) has no address: the program is refused with an error naming the op.
- Multi-chip strategies (``chip_cut``) are refused: one chip's program is built.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from tx8lab.core.attrs import LayoutMode
from tx8lab.core.codegen_c import c_function
from tx8lab.core.grouping import is_compute
from tx8lab.core.ir import TERMINATORS, Module, Op, TensorType, Value
from tx8lab.core.ops import get_op_def
from tx8lab.core.ops.registry import Window, op_layout, value_bytes
from tx8lab.core.schedule.slicing import gather_readers, linked_dims, loop_slots
from tx8lab.core.schedule.stages import StageSettings, run_group
from tx8lab.core.schedule.sw_pipeline import Instance, Use, expand
from tx8lab.core.schedule.tasks import (
    Node,
    OpStrategy,
    ScheduleInput,
    Strategy,
    Task,
    Timeline,
)
from tx8lab.errors import Tx8labError
from tx8lab.hw.config import ChipConfig

ValueKey = tuple[int, int, bool]
LOADS = frozenset({"tx8be.LoadVar", "tx8be.LoadConst"})
STORE = "tx8be.StoreVar"
#: Top-level ops that need no code (see ``tx8lab.core.codegen``).
NO_CODE = frozenset({"tx8be.Tuple", "tx8be.Constant", "tx8be.LoadConst"})

What = Literal["load", "load_const", "store", "compute", "barrier"]


@dataclass(frozen=True)
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


@dataclass(frozen=True)
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
    """Schedule engine: ld, st, ne, ct, tdma; ``sync`` for a barrier."""
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
    return Strategy(ops, int(group.attrs["multi_buffer"]))


def group_schedule(group: Op, hw: ChipConfig) -> tuple[Strategy, ScheduleInput, Timeline]:
    """Strategy, init pipeline and timeline of a scheduled group, from the IR alone.

    The recorded group pipeline up to sw-pipeline; the SPM offsets come from the IR.
    """
    strategy = strategy_of(group)
    settings = StageSettings(
        multi_buffer=strategy.multi_buffer, retract=bool(group.attrs.get("retract", True))
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


def region_tiles(group: Op, hw: ChipConfig) -> list[int]:
    """Tile ids of the group's ``dev_region``, row by row (module docstring, **Tiles**)."""
    region = group.attrs.get("dev_region")
    cols = hw.mesh_cols
    if isinstance(region, tuple) and len(region) == 4:
        x0, y0, dx, dy = (int(v) for v in region)
    else:
        x0, y0, dx, dy = 0, 0, cols, hw.mesh_rows
    return [(y0 + r) * cols + (x0 + c) for r in range(dy) for c in range(dx)]


def _bbox(a: Window, b: Window) -> Window:
    return tuple((min(x0, y0), max(x1, y1)) for (x0, x1), (y0, y1) in zip(a, b, strict=True))


def _whole(shape: Sequence[int]) -> Window:
    return tuple((0, int(d)) for d in shape)


def _digits(index: int, radix: Sequence[int]) -> list[int]:
    out = [0] * len(radix)
    for i in range(len(radix) - 1, -1, -1):
        out[i] = index % radix[i]
        index //= radix[i]
    return out


class _GroupBoxes:
    """Iteration boxes of a group's compute ops per (tile, loop indices)."""

    def __init__(
        self, group: Op, strategy: Strategy, ops: Mapping[int, Op], chip0: bool = False
    ) -> None:
        self.strategy = strategy
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
        sharded_by: dict[tuple[int, int], int] = {}
        for op_id, st in strategy.ops.items():
            for root in {self.root[(op_id, i)] for i, s in enumerate(st.shard) if s > 1}:
                sharded_by[root] = sharded_by.get(root, 0) + 1
        self.tile_order = {r: (n, r) for r, n in sharded_by.items()}
        self._coords: dict[tuple[int, int], dict[int, int]] = {}
        self.slices = {
            op_id: get_op_def(ops[op_id].kind).temporal_slice_shape(ops[op_id], st)
            for op_id, st in strategy.ops.items()
            if op_id in ops
        }
        self.gathers = gather_readers(group, self.slices)
        """Table value -> the Gather whose indices pick its rows (a gather load)."""

    def chunk_index(self, root: tuple[int, int], at: Sequence[int]) -> int:
        """Chunk of group dim ``root`` at loop indices ``at`` (outermost first)."""
        got = self.digit.get(root)
        if got is None:
            return 0
        k, d, splits = got
        return _digits(at[k] if k < len(at) else 0, splits)[d]

    def tile_coords(self, op_id: int, local: int) -> dict[int, int]:
        key = (op_id, local)
        got = self._coords.get(key)
        if got is None:
            st = self.strategy.ops[op_id]
            sharded = sorted(
                (self.tile_order[self.root[(op_id, i)]], i) for i, s in enumerate(st.shard) if s > 1
            )
            radix = [st.shard[i] for _, i in sharded]
            digits = _digits(local % max(1, math.prod(radix)), radix)
            got = {i: d for (_, i), d in zip(sharded, digits, strict=True)}
            self._coords[key] = got
        return got

    def box(self, op_id: int, local: int, at: Sequence[int]) -> Window:
        st = self.strategy.ops[op_id]
        coords = self.tile_coords(op_id, local)
        out = []
        per_tile = st.per_tile()
        for i, dim in enumerate(self.dims[op_id]):
            piece = -(-dim.size // per_tile[i])
            chunk = -(-piece // st.split[i])
            k = self.chunk_index(self.root[(op_id, i)], at) if st.split[i] > 1 else 0
            base = coords.get(i, 0) * piece
            start = min(dim.size, base + k * chunk)
            stop = min(dim.size, base + piece, base + (k + 1) * chunk)
            out.append((start, max(start, stop)))
        return tuple(out)


def _loops_of(
    nodes: Sequence[Node], around: tuple[tuple[str, int], ...] = ()
) -> dict[str, tuple[tuple[str, int], ...]]:
    """Task id -> (stage, times) of each Repeat around it, outermost first."""
    out: dict[str, tuple[tuple[str, int], ...]] = {}
    for node in nodes:
        if isinstance(node, Task):
            out[node.id] = around
        else:
            out.update(_loops_of(node.body, (*around, (node.stage, node.times))))
    return out


def _spm_access(
    buffer: str,
    value: str,
    label: str,
    offsets: Mapping[str, tuple[int, int]],
    dtype: str,
    layout: str,
    window: Window,
    where: str,
) -> Access:
    if label not in offsets:
        raise Tx8labError(
            f"program: {where}: spm_offsets has no lifetime {label!r} for buffer {buffer!r}; "
            "the allocation does not match the schedule, re-run group-cost"
        )
    addr, nbytes = offsets[label]
    return Access("spm", buffer, value, label, addr, nbytes, dtype, layout, window, window)


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
    code = code if code is not None else group_code(group, hw)
    strategy, si, timeline = code.strategy, code.schedule, code.timeline
    instances = code.instances
    generations, runs = lifetime_labels(instances)
    offsets = code.offsets
    steps = {(s.task, s.iteration): s.step for s in timeline.slots}
    ops = {op.id: op for op in group.regions[0].ops if op.kind not in TERMINATORS}
    names = code.names
    boxes = _GroupBoxes(group, strategy, ops, chip0)
    loops = _loops_of(si.nodes)
    alias: dict[ValueKey, ValueKey] = {}
    readers: dict[ValueKey, list[tuple[Op, int]]] = {}
    for op in ops.values():
        if op.kind == "tx8be.Tuple":
            for res, v in zip(op.results, op.operands, strict=True):
                alias[res.key] = alias.get(v.key, v.key)
    for op in ops.values():
        if op.id in strategy.ops and is_compute(op):
            for j, v in enumerate(op.operands):
                readers.setdefault(alias.get(v.key, v.key), []).append((op, j))
    tiles = region_tiles(group, hw)
    if first_tile:
        tiles = tiles[:1]
    out: dict[int, list[Command]] = {t: [] for t in tiles}
    imm_seen: dict[str, int] = {}
    imm_index: list[int] = []
    for inst in instances:
        for b in inst.imm:
            imm_seen[b] = imm_seen.get(b, 0) + 1
        imm_index.append(max((imm_seen[b] - 1 for b in inst.imm), default=0))
    for local, tile in enumerate(tiles):
        drafts: list[Command] = []
        for n, inst in enumerate(instances):
            around = loops[inst.task.id]
            at = inst.iteration
            drafts.append(
                _command(
                    inst,
                    around,
                    tile,
                    local,
                    at,
                    steps.get(inst.key, 0),
                    imm_index[n],
                    group,
                    ops,
                    names,
                    alias,
                    readers,
                    boxes,
                    generations,
                    runs,
                    offsets,
                )
            )
        out[tile] = _with_holders(drafts)
    return out


def _value_of(op: Op, key: ValueKey) -> Value:
    return next(r for r in op.results if r.key == key)


def _load_window(
    op: Op,
    local: int,
    at: Sequence[int],
    readers: Mapping[ValueKey, list[tuple[Op, int]]],
    boxes: _GroupBoxes,
) -> Window:
    key = op.results[0].key
    box: Window | None = None
    for user, j in readers.get(key, []):
        got = get_op_def(user.kind).operand_window(user, j, boxes.box(user.id, local, at))
        box = got if box is None else _bbox(box, got)
    return box if box is not None else _whole(op.results[0].type.shape)


def _produced_window(
    key: ValueKey,
    ops: Mapping[int, Op],
    local: int,
    at: Sequence[int],
    readers: Mapping[ValueKey, list[tuple[Op, int]]],
    boxes: _GroupBoxes,
) -> Window:
    owner = ops[key[0]]
    if owner.kind in LOADS:
        return _load_window(owner, local, at, readers, boxes)
    entry = get_op_def(owner.kind)
    return entry.result_window(owner, key[1], boxes.box(owner.id, local, at))


def _command(
    inst: Instance,
    around: Sequence[tuple[str, int]],
    tile: int,
    local: int,
    at: Sequence[int],
    step: int,
    imm_run: int,
    group: Op,
    ops: Mapping[int, Op],
    names: Mapping[ValueKey, str],
    alias: Mapping[ValueKey, ValueKey],
    readers: Mapping[ValueKey, list[tuple[Op, int]]],
    boxes: _GroupBoxes,
    generations: Mapping[str, int],
    runs: Mapping[str, int],
    offsets: Mapping[str, tuple[int, int]],
) -> Command:
    task = inst.task
    op = ops[task.op_id]
    where = f"group %{group.id} {op.label}"
    reads = {u.buffer: u for u in inst.reads}
    writes = {u.buffer: u for u in inst.writes}
    base: dict[str, Any] = {
        "tile": tile,
        "group": group.id,
        "op_id": op.id,
        "op_kind": op.kind,
        "engine": task.engine,
        "task": task.id,
        "iteration": inst.iteration,
        "step": step,
    }
    if op.kind in LOADS:
        key = op.results[0].key
        ttype = op.results[0].type
        window = _load_window(op, local, at, readers, boxes)
        layout = op_layout(op).value
        src = _ddr_access(op, ttype.shape, ttype.dtype, layout, window)
        buf = names[key]
        dst = _spm_access(
            buf,
            buf,
            use_label(writes[buf], generations),
            offsets,
            ttype.dtype,
            layout,
            window,
            where,
        )
        what: What = "load_const" if op.kind == "tx8be.LoadConst" else "load"
        picker = boxes.gathers.get(key)
        gather = None
        if picker is not None:
            dst, gather = _gather_accesses(
                picker, dst, boxes, local, at, names, alias, ops, reads, generations, offsets, where
            )
        return Command(
            what=what,
            function="op_dma_gather" if gather else "op_dma_" + what,
            reads=(src,),
            writes=(dst,),
            gather=gather,
            **base,
        )
    if op.kind == STORE:
        key = alias.get(op.operands[0].key, op.operands[0].key)
        ttype = op.operands[0].type
        buf = names[key]
        window = _produced_window(key, ops, local, at, readers, boxes)
        owner = ops[key[0]]
        src = _spm_access(
            buf,
            buf,
            use_label(reads[buf], generations),
            offsets,
            ttype.dtype,
            op_layout(owner).value,
            window,
            where,
        )
        dst = _ddr_access(op, ttype.shape, ttype.dtype, op_layout(op).value, window)
        return Command(what="store", function="op_dma_store", reads=(src,), writes=(dst,), **base)
    entry = get_op_def(op.kind)
    box = boxes.box(op.id, local, at)
    layout = op_layout(op).value
    operand_accesses: list[Access] = []
    for j, v in enumerate(op.operands):
        key = alias.get(v.key, v.key)
        window = entry.operand_window(op, j, box)
        name = names.get(key)
        if name is not None:
            owner = ops[key[0]]
            operand_accesses.append(
                _spm_access(
                    name,
                    name,
                    use_label(reads[name], generations),
                    offsets,
                    v.type.dtype,
                    op_layout(owner).value,
                    window,
                    where,
                )
            )
            if j == 0 and owner.kind in LOADS and boxes.gathers.get(key) is op:
                # the table's rows came in index order (the gather load's compact box)
                operand_accesses[-1] = _as_gathered(operand_accesses[-1], op, box)
            continue
        source = None if v.is_arg else ops.get(v.owner)
        if source is not None and source.kind in LOADS and source.attrs.get("bypasscodegen"):
            operand_accesses.append(
                _ddr_access(source, v.type.shape, v.type.dtype, op_layout(source).value, window)
            )
            continue
        raise Tx8labError(
            f"program: {op.label} operand {j} in group %{group.id} is neither in SPM nor a "
            "bypasscodegen constant in DDR; it has no address the program could read (run "
            "group-ldst, the default pipeline, so every input is loaded)"
        )
    result_accesses = []
    for r in op.results:
        name = names.get(r.key)
        if name is None:
            continue
        result_accesses.append(
            _spm_access(
                name,
                name,
                use_label(writes[name], generations),
                offsets,
                r.type.dtype,
                layout,
                entry.result_window(op, r.index, box),
                where,
            )
        )
    psum_name = f"%{op.id}.psum"
    psum = None
    init = last = True
    if psum_name in writes:
        rwin = entry.result_window(op, 0, box)
        dtype = "f32" if op.results[0].type.dtype not in ("i8", "i32", "i64", "i1") else "i32"
        psum = _spm_access(
            psum_name,
            psum_name,
            use_label(writes[psum_name], generations),
            offsets,
            dtype,
            "Tensor",
            rwin,
            where,
        )
        if inst.iteration:
            # sw_pipeline.expand restarts a psum when the innermost loop is at 0
            init = inst.iteration[-1] == 0
            last = inst.iteration[-1] == around[-1][1] - 1
    imm_name = f"%{op.id}.imm"
    imm = None
    if imm_name in inst.imm:
        label = lifetime_label(imm_name, imm_run, runs.get(imm_name, 1))
        if label not in offsets:
            raise Tx8labError(
                f"program: {where}: spm_offsets has no lifetime {label!r} for its scratch; "
                "the allocation does not match the schedule, re-run group-cost"
            )
        addr, nbytes = offsets[label]
        whole = ((0, nbytes),)
        imm = Access("spm", imm_name, imm_name, label, addr, nbytes, "i8", "Tensor", whole, whole)
    clobbers = tuple(getattr(entry, "clobbered_operands", lambda _op: ())(op))
    return Command(
        what="compute",
        function=c_function(op.kind),
        reads=tuple(operand_accesses),
        writes=tuple(result_accesses),
        imm=imm,
        psum=psum,
        psum_init=init,
        psum_last=last,
        box=box,
        clobbers=clobbers,
        **base,
    )


def _gather_accesses(
    picker: Op,
    dst: Access,
    boxes: _GroupBoxes,
    local: int,
    at: Sequence[int],
    names: Mapping[ValueKey, str],
    alias: Mapping[ValueKey, ValueKey],
    ops: Mapping[int, Op],
    reads: Mapping[str, Use],
    generations: Mapping[str, int],
    offsets: Mapping[str, tuple[int, int]],
    where: str,
) -> tuple[Access, Access]:
    """A gather load's destination (rows in index order) and the indices it reads."""
    box = boxes.box(picker.id, local, at)
    index_window = get_op_def(picker.kind).operand_window(picker, 1, box)
    index_value = picker.operands[1]
    key = alias.get(index_value.key, index_value.key)
    name = names.get(key)
    if name is None or name not in reads:
        raise Tx8labError(
            f"program: {where}: the gather load of {picker.label} needs its indices in SPM "
            "before it; load them first (group-ldst, the default pipeline)"
        )
    indices = _spm_access(
        name,
        name,
        use_label(reads[name], generations),
        offsets,
        index_value.type.dtype,
        op_layout(ops[key[0]]).value,
        index_window,
        where,
    )
    return _as_gathered(dst, picker, box), indices


def _as_gathered(access: Access, picker: Op, box: Window) -> Access:
    """``access`` to a Gather's table as the rows its indices pick at ``box``, in order."""
    entry = get_op_def(picker.kind)
    axis = int(entry.attr(picker, "axis")) % picker.operands[0].type.rank
    rows = math.prod(b - a for a, b in entry.operand_window(picker, 1, box))
    table = entry.operand_window(picker, 0, box)
    compact = tuple((0, rows) if e == axis else w for e, w in enumerate(table))
    return replace(access, holder=compact, window=compact, gather_axis=axis)


def _ddr_access(op: Op, shape: Sequence[int], dtype: str, layout: str, window: Window) -> Access:
    addr = op.attrs.get("ddr_addr")
    if addr is None:
        raise Tx8labError(
            f"program: {op.label} has no ddr_addr; run opt-ddr (the default pipeline) first"
        )
    nbytes = value_bytes(tuple(shape), dtype, LayoutMode(layout))
    name = f"DDR_{op.id}"
    return Access("ddr", name, name, "", int(addr), nbytes, dtype, layout, _whole(shape), window)


def _with_holders(drafts: list[Command]) -> list[Command]:
    """Each SPM access's holder: the bounding box over its (lifetime, value) accesses."""
    holder: dict[tuple[str, str], Window] = {}
    for c in drafts:
        for a in (*c.reads, *c.writes, *((c.psum,) if c.psum else ())):
            if a.space != "spm" or a.buffer.endswith(".imm"):
                continue
            key = (a.lifetime, a.value)
            got = holder.get(key)
            holder[key] = a.window if got is None else _bbox(got, a.window)

    def fix(a: Access) -> Access:
        if a.space != "spm" or a.buffer.endswith(".imm"):
            return a
        return replace(a, holder=holder[(a.lifetime, a.value)])

    return [
        replace(
            c,
            reads=tuple(fix(a) for a in c.reads),
            writes=tuple(fix(a) for a in c.writes),
            psum=fix(c.psum) if c.psum else None,
        )
        for c in drafts
    ]


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
    main = module.main
    tiles: dict[int, list[Command]] = {t: [] for t in range(hw.tiles_per_chip)}
    groups: list[int] = []
    barriers: list[int] = []
    loaded_args: dict[int, list[Op]] = {}
    constants: dict[int, DdrTensor] = {}
    stored: dict[ValueKey, DdrTensor] = {}
    code: dict[int, GroupCode] = {}
    for top in main.ops:
        if top.kind in TERMINATORS or top.kind in NO_CODE:
            continue
        if top.kind != "tx8be.Group":
            raise Tx8labError(
                f"program: {top.label} is outside every group; main.c runs groups only "
                "(run the group pass, the default pipeline, first)"
            )
        groups.append(top.id)
        code[top.id] = group_code(top, hw)
        for tile, commands in group_program(top, hw, code[top.id]).items():
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
    )


__all__ = [
    "Access",
    "Command",
    "DdrTensor",
    "GroupCode",
    "Output",
    "Program",
    "build_program",
    "group_code",
    "group_program",
    "group_schedule",
    "lifetime_label",
    "lifetime_labels",
    "region_tiles",
    "strategy_of",
    "use_label",
    "value_names",
]
