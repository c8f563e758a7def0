"""The data the group-schedule stages hand each other (the contract between them).

Spec: seed 001 "TS_SwPipelinePass" (getInitPipelineOps builds a list of pipeline ops with
``Repeat`` nodes for stages that loop; pipeline() expands them with retraction;
getEnginsPipeline puts each op in its engine slot per time step) and "SPMAllocPass"
(BufferLabel / ValueBuffer: a buffer per value, ``isImm`` for an op's scratch space).

The stages and who makes what:

1. slicing (``tx8lab/core/schedule/slicing.py``): a group + a :class:`Strategy` + the
   hardware -> :class:`ScheduleInput` (the init pipeline: :class:`Task` and
   :class:`Repeat` nodes in program order, and the :class:`Buffer` each task reads and
   writes). Task cycles come from the tile cost model (``tx8lab/hw/cost.py``).
2. sw-pipeline (``pipeline.py``): :class:`ScheduleInput` -> :class:`Timeline` (time steps x
   engines, every task instance with its iteration indices and start/end cycles).
3. buffer-life / buffer-merge (``lifetimes.py``): :class:`Timeline` + buffers ->
   :class:`Lifetime` list (half-open ``[lower, upper)`` in time steps, bytes).
4. spm-alloc (``spm_alloc.py``): lifetimes -> offsets (MiniMalloc's problem).
5. estimate (``estimate.py``): timeline -> cycles, engine busy time, limiting engine.

Everything here is frozen and plain, so views and the JSON report read it directly.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from tx8lab.core.tiling import OpStrategy

#: The engine slots of getEnginsPipeline (seed ``enginsBase``): loads (RDMA), stores
#: (WDMA), the matrix engine, the vector engine (CGRA, "ct"), the TDMA (which, seed 001
#: "Tile": ``op_reshape`` / ``op_gatherScatter``, works on its own tile's SPM), and ``dte``:
#: tile-to-tile NoC transfers (halo exchanges, gathers, all-reduces, shared loads), which
#: seed 001 gives to the DTE ("DTE 模块也可以通过 special core 将本 Tile 上的 SPM 与远程 Tile
#: 上的 SPM 进行通信"). The seed's ``enginsBase`` lists no NoC slot (its groups never pass
#: data between tiles), so ``dte`` is this project's addition, named after the engine.
Engine = Literal["ld", "st", "ne", "ct", "tdma", "dte"]
ENGINES: tuple[Engine, ...] = ("ld", "ne", "ct", "st", "tdma", "dte")

BufferKind = Literal["value", "imm", "psum"]


@dataclass(frozen=True)
class Strategy:
    """A group's strategy: one :class:`OpStrategy` per body op id (compute ops)."""

    ops: Mapping[int, OpStrategy]
    multi_buffer: int = 2
    """Buffers per looping value (2 = double buffering; 1 = none)."""
    share: bool = False
    """Loads the tiles of a group read alike may be shared: each tile loads a chunk and
    the chunks are all-gathered over the NoC, where that is faster (``slicing``
    **Shared loads**)."""


@dataclass(frozen=True, slots=True)
class Buffer:
    """One SPM buffer (seed ValueBuffer/BufferLabel) on one tile."""

    id: str
    """Unique within the group: ``"%7"`` (value), ``"%7.imm"``, ``"%7.psum"``, ``"%7#1"``."""
    op_id: int
    """The IR op whose value (or scratch space) it holds."""
    bytes: int
    """Size of one slice on one tile, in bytes (the layout's footprint)."""
    kind: BufferKind = "value"
    in_place_of: str | None = None
    """For a memInplace op's result: the buffer whose memory it reuses."""
    chunk_loops: int = 0
    """Innermost Repeats around its writer that a reader sits outside of: their iterations
    write the chunks of one version side by side (the buffer holds them all), so a write is
    fresh only when each of those loops is at index 0."""


@dataclass(frozen=True, slots=True)
class Task:
    """One pipeline op: one slice of an IR op (or a load/store of one) on one engine."""

    id: str
    """Unique within the group: ``"ld:%3"``, ``"ne:%5"``, ``"st:%9"``."""
    op_id: int
    engine: Engine
    cycles: int
    reads: tuple[str, ...] = ()
    """Buffer ids read."""
    writes: tuple[str, ...] = ()
    """Buffer ids written."""
    stage: str = ""
    """Loop stage (STAGEOC2NH / OCSPLIT / STAGEIC2IC, ``slicing.LOOP_STAGE``), "" outside loops."""
    explain: str = ""
    """The cost formula with its numbers (``hw.cost.explain``)."""


@dataclass(frozen=True, slots=True)
class Repeat:
    """A loop in the init pipeline (seed ``PipelineOpsBase`` with ``repeatTimes``)."""

    times: int
    body: tuple[Task | Repeat, ...]
    stage: str = ""


Node = Task | Repeat


@dataclass(frozen=True)
class ScheduleInput:
    """The init pipeline of one group on one tile, plus its buffers."""

    group_id: int
    nodes: tuple[Node, ...]
    buffers: Mapping[str, Buffer]
    tiles: int = 16
    """Tiles the group runs on (all run the same pipeline on their shard)."""
    notes: tuple[str, ...] = ()
    """How the strategy was chosen or adjusted (shown by ``explain``)."""
    reductions: Mapping[int, NocReduce] = field(default_factory=dict)
    """Op id -> the all-reduce of its partial sums over the NoC (its reduction dim is
    sharded across tiles), or a shared load's all-gather: the ``noc:%7`` task after it."""


@dataclass(frozen=True)
class NocReduce:
    """How one op's partial sums are added over the NoC after each run (an all-reduce).

    Or how a shared load's chunks, or a compute op's pieces of a value another op reads
    whole, reach every tile of its share (gather) group (an all-gather).

    Spec: seed 001 SecsInfo sharding modes 1-3 (tiles holding partial sums of one output
    communicate); the patterns are ``tx8lab.hw.collectives``'s. Chosen by slicing.
    """

    pattern: str
    """``direct``, ``tree`` or ``ring`` (``collectives.allreduce_plan``)."""
    ways: int
    """Tiles in one reduction group (the product of the op's reduction-dim shards)."""
    groups: tuple[tuple[int, ...], ...]
    """Local tile indices of each reduction group, in position order (as costed)."""
    chunks: int
    """The result slice is cut in this many chunks along ``chunk_dim`` (1 but the ring)."""
    chunk_dim: int
    slots: int
    """Staging slots a tile needs (``%7.noc`` is ``slots * slot_bytes``)."""
    slot_bytes: int
    cycles: int
    """One all-reduce of every group at once, simulated (the task's cycles)."""
    noc_bytes: int
    """Payload bytes all groups send in one all-reduce."""
    alternatives: tuple[tuple[str, int], ...] = ()
    """Every pattern's cycles, fastest first."""
    collective: str = "all-reduce"
    """``all-reduce`` (partial sums of a compute op), or ``all-gather``: the chunks of a
    shared load, or a compute op's pieces of a value read whole (slicing's **Gathers**);
    then ``groups`` are its share (gather) groups and nothing is staged. Or ``exchange``:
    the pieces of a compute op's result its readers need from other tiles (a halo;
    slicing's **Exchanges**): one group of every tile of the region, the copies in
    :attr:`moves`."""
    moves: tuple[tuple[int, int, tuple[tuple[int, int], ...]], ...] = ()
    """An exchange's copies: (source tile, tile, window of the value), local indices;
    copy ``k`` is chunk ``k`` of the plan (``collectives.exchange_plan``)."""


@dataclass(frozen=True, slots=True)
class Slot:
    """One task instance in the timeline."""

    task: str
    """The :class:`Task` id."""
    iteration: tuple[int, ...]
    """Index of each enclosing Repeat, outermost first (() outside loops)."""
    engine: Engine
    step: int
    """Time step (a pipeline "frame": ops that run together)."""
    start: int
    end: int
    """Cycles, half-open [start, end)."""


@dataclass(frozen=True)
class Timeline:
    """The expanded software pipeline (seed ``pipelineReal`` / ``enginsBase`` list)."""

    group_id: int
    slots: tuple[Slot, ...]
    steps: int
    makespan: int
    """Cycles from the first start to the last end."""
    retracted: int = 0
    """Task instances moved into the previous step by retraction."""
    tasks: Mapping[str, Task] = field(default_factory=dict)
    multi_buffer: int = 2
    """Buffers per looping value the pipeline assumed (buffer-life reads it back)."""


@dataclass(frozen=True, slots=True)
class Lifetime:
    """A buffer's live interval for the allocator (MiniMalloc's row)."""

    id: str
    lower: int
    upper: int
    """Half-open [lower, upper) in time steps."""
    size: int
    buffer: str = ""
    """The :class:`Buffer` id (several lifetimes may share one: psum intervals, multi-buffers)."""


__all__ = [
    "ENGINES",
    "Buffer",
    "BufferKind",
    "Engine",
    "Lifetime",
    "NocReduce",
    "Node",
    "OpStrategy",
    "Repeat",
    "ScheduleInput",
    "Slot",
    "Strategy",
    "Task",
    "Timeline",
]
