"""main.c from the scheduled IR: one C function per group, then the module's ``main``.

Spec: seed 001 ("TX8 Compiler": BEIR calls the op library's ``genOpCode`` to write
``main.c``; the BatchNorm ``main.c``: load -> compute -> store in a loop over the temporal
slices; ``TSR`` / ``L_SHAPE`` / ``G_SHAPE``; the AddVS example's cycle accumulation). The IR
after group-cost, opt-barrier and opt-ddr holds everything: each group's strategy
(``tile_shard`` / ``tile_split`` / ``chip_cut`` on its body ops, ``multi_buffer``,
``retract``), its SPM allocation (``spm_offsets``, by lifetime id), ``need_barrier`` and the
loads' and stores' ``ddr_addr``. :func:`group_c` prints a group from its
:class:`~tx8lab.core.program.GroupCode` (the init pipeline, timeline and buffer versions,
built once by ``program.group_code``: the rolled form of the Program's commands, which
the Program holds in ``Program.code``), writing the loop nest of the Repeat nodes with one
op-library call per task; :func:`main_c` puts the groups in order under the DDR address
table. Executed, main.c's call trace equals the Program command for command
(``tx8lab.core.execute``).

Readings chosen where the seed is vague:

- **One function per group**, ``uint64_t group_<id>(int32_t tile_id)``, returning the
  cycles its calls report; every tile runs the same code on its shard (the tiles outside
  the group's ``dev_region`` return at once), as the seed's main.c is "the program of one
  tile". ``main`` calls the groups in module order and ``tsm_barrier()`` after each group
  that opt-barrier marked ``need_barrier``.
- **Loops** are the init pipeline's Repeat nodes (``for (int32_t i<depth> ...)`` with the
  Repeat's stage in a comment). Calls are in program order, which is the timeline's engine
  order within one iteration; the engines run them asynchronously, so the overlap of
  iterations that sw-pipeline's retraction found is the hardware queues' and is not
  unrolled into prologue / kernel / epilogue. Each call's comment gives its task id,
  engine and the timeline steps of its instances, so the C can be read beside the
  timeline.
- **Addresses.** A buffer's TSR address is the SPM offset of the lifetime its current
  version belongs to (``spm_offsets``). A buffer written once has one address. A buffer
  written fresh several times (multi-buffering) takes its next address from a table at
  each fresh write; when the table repeats with period ``multi_buffer`` it is cut to
  ``multi_buffer`` entries indexed ``n % multi_buffer`` (the rotation), else it lists
  every generation's offset (the allocator gave later generations other places). A
  psum accumulator takes a new one when its reduction loop restarts (``i == 0``), a
  buffer that holds a loop's chunks side by side (``Buffer.chunk_loops``) when each of
  those loops is at 0; an
  in-place result takes its source's current address; a task's scratch (``imm``) takes
  one per run.
- **Reloads.** A load inside a loop whose buffer a later call overwrites (the op
  library's ``clobbered_operands``, seed 001's BatchNorm variance) says so in its comment:
  that is why a loop-invariant tensor is loaded in every iteration, as in the seed's
  ``while (!input_done)``.
- **DMA**: ``op_dma_load`` / ``op_dma_load_const`` / ``op_dma_store`` take the TSR (slice
  shape in its ``L_SHAPE``), the DDR address (a ``DDR_<op id>`` macro of main.c, from
  opt-ddr) and a ``G_SHAPE`` of the whole DDR tensor whose tile window
  ``tsm_tile_window`` sets from the tile id and the value's cut per dim; the library
  advances ``shape_start`` over the window, as in the seed's ``while (!input_done)``.
  A ``bypasscodegen`` constant (read in place) has no load: its TSR points at DDR. A
  table a Gather picks only some rows of is loaded by ``op_dma_gather``, which also takes
  the TSR of the indices (seed rdmaGather).
- **NoC reductions** (a ``noc:%7`` task, ``program`` **NoC reductions**): file-scope
  tables give each tile id its position and reduction group (``noc_pos_7``,
  ``noc_team_7``), each group's tile ids (``noc_tiles_7``) and each position's steps of
  the all-reduce plan in order (``noc_plan_7``: ``NOC_STEP`` s, per round its sends then
  its receives); the task is a loop over this tile's steps calling ``dte_send`` /
  ``dte_recv`` and, after a receive into staging slot ``k`` (``%7.noc`` + ``k`` slot
  sizes), ``op_noc_add``. A tile's receive blocks until its peer's send has run, so a
  host runs the tiles of such a group side by side (``tx8lab.core.execute``).
- **Top-level ops** outside groups need no code when they are a ``Tuple`` (names values),
  a ``Constant`` or a ``LoadConst`` (a constant the function returns: its data is in DDR);
  any other is an error naming it.
- **Speed**: groups with one structure (same body kinds, attributes, types and wiring,
  ids and DDR addresses aside) and the same schedule attributes give the same text up
  to ids; :class:`CodegenCache` keeps the first one's text and renames the ids of the
  others (llama's 32 layers repeat ~20 group structures).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tx8lab.core.codegen_c import MAX_SHAPE_DIM, CCall, c_at, c_format
from tx8lab.core.grouping import is_compute
from tx8lab.core.ir import TERMINATORS, Module, Op
from tx8lab.core.ops import get_op_def
from tx8lab.core.ops.registry import SliceShape
from tx8lab.core.program import (
    GroupCode,
    Program,
    collective_plan,
    group_code,
    group_schedule,
    lifetime_label,
    lifetime_labels,
    region_tiles,
    strategy_of,
)
from tx8lab.core.schedule.sw_pipeline import Instance
from tx8lab.core.schedule.tasks import (
    Buffer,
    Node,
    Repeat,
    ScheduleInput,
    Strategy,
    Task,
)
from tx8lab.errors import Tx8labError
from tx8lab.hw.config import ChipConfig

_LOADS = frozenset({"tx8be.LoadVar", "tx8be.LoadConst"})
_STORE = "tx8be.StoreVar"
#: Top-level ops that need no code: a Tuple names values; a Constant's or a top-level
#: LoadConst's data (a constant the function returns) sits in DDR already.
_NO_CODE = frozenset({"tx8be.Tuple", "tx8be.Constant", "tx8be.LoadConst"})
_INDENT = "    "
#: What the cache must see besides the body: the group attributes that shape the text.
_GROUP_ATTRS = (
    "multi_buffer",
    "noc_share",
    "retract",
    "cycles",
    "plan_cycles",
    "spm_peak_bytes",
    "dev_region",
)
#: Op attributes that name data, not structure (the cache renames or ignores them).
_DATA_ATTRS = frozenset({"const_id", "value", "ddr_addr"})
_ID = re.compile(r"(?:(?<=[%_])|(?<=\.op = ))(\d+)(?![0-9])")


@dataclass(frozen=True)
class GroupC:
    """The C of one group."""

    group_id: int
    function: str
    """``group_<id>``: the function main.c calls."""
    text: str
    """Its tables and function definition."""
    calls: int
    """Op-library calls in the text (one per task; a NoC task has three: send, receive, add)."""
    need_barrier: bool
    """main.c calls ``tsm_barrier()`` after it."""
    cycles: int
    """The group's ``cycles`` attribute (group-cost's estimate)."""
    template: int | None = None
    """The group whose text this one renamed (a :class:`CodegenCache` hit), else None."""


def c_name(buffer_id: str) -> str:
    """The C suffix of a buffer id.

    Examples:
        >>> c_name("%26"), c_name("%26.psum"), c_name("%7:1"), c_name("%6.imm")
        ('26', '26_psum', '7r1', '6_imm')
    """
    return buffer_id.lstrip("%").replace(":", "r").replace(".", "_")


def _c_array(values: Iterable[int]) -> str:
    items = [str(int(v)) for v in values]
    return "{" + (", ".join(items) if items else "0") + "}"


def _dims(shape: Sequence[int]) -> str:
    return "x".join(str(d) for d in shape) or "scalar"


@dataclass
class _Ctx:
    """What the emitter of one group needs while walking its nodes."""

    group: Op
    ops: dict[int, Op]
    strategy: Strategy
    si: ScheduleInput
    slices: dict[int, SliceShape]
    names: dict[tuple[int, int, bool], str]
    steps: dict[str, list[int]]
    tables: dict[str, tuple[list[int], int]]
    """Root/imm buffer id -> (address table, rotation modulus; 0 = index directly)."""
    lines: list[str] = field(default_factory=list)
    calls: int = 0
    overwritten: dict[str, list[int]] = field(default_factory=dict)
    """Value buffer -> ids of the ops whose kernel overwrites it (see :func:`_overwriters`)."""
    tiles: Sequence[int] = ()
    """The region's tile ids by local index (``slicing.region_tiles``)."""
    num_tiles: int = 16
    """Tiles of the chip (a NoC table has one entry per tile id)."""
    statics: list[str] = field(default_factory=list)
    """File-scope tables the calls use (a NoC reduction's plan)."""


def _overwriters(si: ScheduleInput) -> dict[str, list[int]]:
    """Value buffers a compute task writes in place of what it read (its kernel's scratch).

    Slicing lists an operand the op library's ``clobbered_operands`` names among the task's
    writes, and reloads it in the task's loop; its load's comment says why.
    """
    out: dict[str, list[int]] = {}

    def walk(nodes: Sequence[Node]) -> None:
        for node in nodes:
            if isinstance(node, Repeat):
                walk(node.body)
                continue
            if node.engine in ("ld", "st"):
                continue
            for b in node.writes:
                buf = si.buffers[b]
                if buf.kind == "value" and buf.in_place_of is None and b in node.reads:
                    out.setdefault(b, []).append(node.op_id)

    walk(si.nodes)
    return out


def _tables(
    group: Op,
    offsets: Mapping[str, tuple[int, int]],
    instances: Sequence[Instance],
    multi_buffer: int,
) -> dict[str, tuple[list[int], int]]:
    """Each root and imm buffer's addresses (see the module docstring, **Addresses**)."""
    generations, runs = lifetime_labels(instances)

    def offset(label: str, buffer: str) -> int:
        if label not in offsets:
            raise Tx8labError(
                f"codegen: group %{group.id}: spm_offsets has no lifetime {label!r} for buffer "
                f"{buffer!r}; the allocation does not match the schedule, re-run group-cost"
            )
        return offsets[label][0]

    tables: dict[str, tuple[list[int], int]] = {}
    for name, count in (*generations.items(), *runs.items()):
        labels = [lifetime_label(name, k, count) for k in range(count)]
        tables[name] = _rotation([offset(label, name) for label in labels], multi_buffer)
    return tables


def _rotation(table: list[int], multi_buffer: int) -> tuple[list[int], int]:
    """``(table, 0)``, or the table cut to its period (1 or ``multi_buffer``) and that period."""
    for period in sorted({1, multi_buffer}):
        if len(table) > period and all(a == table[i % period] for i, a in enumerate(table)):
            return table[:period], period
    return table, 0


def _buffer_shape(ctx: _Ctx, buf: Buffer) -> tuple[tuple[int, ...], tuple[int, ...], str]:
    """(whole shape, slice shape, Data_Format) of a buffer."""
    op = ctx.ops[buf.op_id]
    if buf.kind == "imm":
        return (buf.bytes,), (buf.bytes,), "Fmt_INT8"
    if buf.kind == "psum":
        sl = ctx.slices[op.id].results[0]
        return tuple(op.results[0].type.shape), tuple(sl), "Fmt_FP32"
    index = int(buf.id.split(":")[1]) if ":" in buf.id else 0
    ttype = op.results[index].type
    fmt = c_format(ttype.dtype, f"{op.label} result {index}")
    if op.id in ctx.slices:
        return tuple(ttype.shape), tuple(ctx.slices[op.id].results[index]), fmt
    # a load: the largest slice a compute consumer reads
    key = op.results[index].key
    shape: tuple[int, ...] | None = None
    for user in ctx.ops.values():
        if user.id not in ctx.slices:
            continue
        for j, v in enumerate(user.operands):
            if ctx.names.get(v.key) == buf.id or v.key == key:
                sl = ctx.slices[user.id].operands[j]
                shape = sl if shape is None else tuple(map(max, shape, sl))
    return tuple(ttype.shape), tuple(shape or ttype.shape), fmt


def _cuts(ctx: _Ctx, op: Op) -> tuple[int, ...]:
    """Tiles per dim of the DDR tensor a load or store moves (its compute neighbour's cut)."""
    value = op.results[0] if op.kind in _LOADS else op.operands[0]
    rank = value.type.rank
    for user in ctx.ops.values():
        s = ctx.strategy.ops.get(user.id)
        if s is None:
            continue
        entry = get_op_def(user.kind)
        maps: list[tuple[int | None, ...]] = []
        if op.kind in _LOADS:
            maps = [
                m
                for v, m in zip(user.operands, entry.operand_dims(user), strict=True)
                if v.key == value.key
            ]
        elif value.owner == user.id and not value.is_arg:
            maps = [entry.result_dims(user)[value.index]]
        if maps:
            per_tile = s.per_tile()
            return tuple(1 if m is None else per_tile[m] for m in maps[0])
    return (1,) * rank


def _declare(ctx: _Ctx, used: Sequence[str]) -> list[str]:
    """File-scope address tables and the function's L_SHAPE / TSR / G_SHAPE declarations."""
    tables: list[str] = []
    body: list[str] = []
    for bid in used:
        buf = ctx.si.buffers[bid]
        n = c_name(bid)
        whole, sl, fmt = _buffer_shape(ctx, buf)
        if len(whole) > MAX_SHAPE_DIM:
            raise Tx8labError(f"codegen: buffer {bid} has rank {len(whole)} > {MAX_SHAPE_DIM}")
        addr = 0
        note = ""
        if buf.in_place_of is not None:
            note = f", in place of {buf.in_place_of}"
        else:
            table, period = ctx.tables.get(bid, ([0], 1))
            if len(table) == 1:
                addr = table[0]
            else:
                how = (
                    f"rotates over {period} (multi_buffer)"
                    if period
                    else f"one per generation ({len(table)})"
                )
                tables.append(
                    f"static const uint32_t spm_{n}[{len(table)}] = {_c_array(table)};  "
                    f"/* {bid}: SPM offsets, {how} */"
                )
                body.append(f"int32_t n_{n} = 0;")
                note = f", {len(table)} addresses"
        op = ctx.ops[buf.op_id]
        body.append(
            f"L_SHAPE ls_{n} = {{{_c_array(whole)}, {_c_array((0,) * len(whole))}, "
            f"{_c_array(sl)}, {_c_array(sl)}, {len(whole)}}};"
        )
        body.append(
            f"TSR t_{n} = {{{fmt}, 0x{addr:06x}, &ls_{n}}};  /* {bid} {buf.kind} of "
            f"{op.kind.split('.')[-1]}: slice {_dims(sl)}, {buf.bytes} B{note} */"
        )
    for op in ctx.ops.values():
        if op.kind not in _LOADS and op.kind != _STORE:
            continue
        value = op.results[0] if op.kind in _LOADS else op.operands[0]
        shape = value.type.shape
        if op.attrs.get("bypasscodegen"):
            n = f"d_{op.id}"
            fmt = c_format(value.type.dtype, op.label)
            body.append(
                f"L_SHAPE ls_{n} = {{{_c_array(shape)}, {_c_array((0,) * len(shape))}, "
                f"{_c_array(shape)}, {_c_array(shape)}, {len(shape)}}};"
            )
            body.append(
                f"TSR {n} = {{{fmt}, DDR_{op.id}, &ls_{n}}};  /* %{op.id} read in place "
                "from DDR (bypasscodegen) */"
            )
            continue
        ends = [d - 1 for d in shape]
        body.append(
            f"G_SHAPE gs_{op.id} = {{.spatial_start = {_c_array((0,) * len(shape))}, "
            f".spatial_end = {_c_array(ends)}, .shape = {_c_array(shape)}, "
            f".dim = {len(shape)}, .done = 0}};"
        )
        body.append(
            f"tsm_tile_window(&gs_{op.id}, (const int32_t[]){_c_array(_cuts(ctx, op))}, tile_id);"
        )
    return tables + body


def _steps_note(steps: list[int]) -> str:
    if len(steps) == 1:
        return f"step {steps[0]}"
    return f"steps {steps[0]}..{steps[-1]} ({len(steps)}x)"


def _emit_task(ctx: _Ctx, task: Task, loops: Sequence[tuple[str, int]], depth: int) -> None:
    pad = _INDENT * depth
    buffers = ctx.si.buffers
    op = ctx.ops[task.op_id]
    entry = get_op_def(op.kind)
    reads = set(task.reads)
    psum_init = psum_last = "1"
    if loops:
        var, times = loops[-1]
        psum_init, psum_last = f"({var} == 0)", f"({var} == {times - 1})"
    # the addresses this task's writes take (pipeline.expand's versions)
    for b in task.writes:
        buf = buffers[b]
        n = c_name(b)
        if buf.in_place_of is not None:
            ctx.lines.append(f"{pad}t_{n}.addr = t_{c_name(buf.in_place_of)}.addr;")
            continue
        if b in reads and buf.kind != "psum":
            continue
        table, period = ctx.tables.get(b, ([0], 1))
        if len(table) == 1:
            continue
        index = f"n_{n}++ % {period}" if period else f"n_{n}++"
        assign = f"t_{n}.addr = spm_{n}[{index}];"
        if buf.kind == "psum" and loops:
            assign = f"if {psum_init} {assign}"
        elif buf.chunk_loops and loops:
            first = " && ".join(f"{var} == 0" for var, _ in loops[-buf.chunk_loops :])
            assign = f"if ({first}) {assign}"
        ctx.lines.append(pad + assign)
    if task.id.startswith("noc:"):
        _emit_noc(ctx, task, loops, depth)
        return
    imm = f"%{op.id}.imm"
    psum = f"%{op.id}.psum"
    call = CCall(
        slice=ctx.slices.get(op.id) or SliceShape((), (), ()),
        # a load's operand is the DDR value itself (its address is the DDR_ macro)
        ins=()
        if op.kind in _LOADS
        else tuple(_operand(ctx, op, j) for j in range(len(op.operands))),
        outs=tuple(f"&t_{c_name(ctx.names[r.key])}" for r in op.results if r.key in ctx.names),
        imm=f"&t_{c_name(imm)}" if imm in task.writes else "NULL",
        psum=f"&t_{c_name(psum)}" if psum in task.writes else "NULL",
        psum_init=psum_init if psum in task.writes else "1",
        psum_last=psum_last if psum in task.writes else "1",
        ddr=f"DDR_{op.id}",
        g_shape=f"&gs_{op.id}",
        # a load that reads a buffer reads a Gather's indices (slicing's gather load)
        gather=f"&t_{c_name(task.reads[0])}" if op.kind in _LOADS and task.reads else "",
        op=op.id,
        at=tuple(var for var, _ in loops),
        share=(f"noc_pos_{op.id}[tile_id]", ctx.si.reductions[op.id].ways)
        if op.kind in _LOADS and op.id in ctx.si.reductions
        else None,
    )
    if (op.kind in _LOADS or op.kind == _STORE) and "ddr_addr" not in op.attrs:
        raise Tx8labError(
            f"codegen: {op.label} in group %{ctx.group.id} has no ddr_addr; run opt-ddr "
            "(the default pipeline) before codegen"
        )
    text = entry.codegen(op, call)
    ctx.calls += 1
    why = ""
    if task.engine == "ld" and loops:
        by = [ctx.ops[i] for b in task.writes for i in ctx.overwritten.get(b, [])]
        if by:
            names = ", ".join(f"%{o.id} ({o.kind.split('.')[-1]})" for o in by)
            why = f"; reloaded every iteration: {names} overwrites it"
    ctx.lines.append(
        f"{pad}cycles += {text};  /* {task.id} {task.engine}, "
        f"{_steps_note(ctx.steps.get(task.id, [0]))}{why} */"
    )


def _emit_noc(ctx: _Ctx, task: Task, loops: Sequence[tuple[str, int]], depth: int) -> None:
    """A ``noc:%7`` task: this tile's steps of the op's all-reduce plan (module docstring)."""
    op = ctx.ops[task.op_id]
    red = ctx.si.reductions.get(op.id)
    if red is None:
        raise Tx8labError(
            f"codegen: group %{ctx.group.id} has the NoC task {task.id} but no reduction for "
            f"{op.label}; re-run group-cost"
        )
    plan = collective_plan(red)
    n = c_name(f"%{op.id}")
    pos = [-1] * ctx.num_tiles
    team = [-1] * ctx.num_tiles
    members = []
    for g, locals_ in enumerate(red.groups):
        members.append([ctx.tiles[local] for local in locals_])
        for p, local in enumerate(locals_):
            pos[ctx.tiles[local]], team[ctx.tiles[local]] = p, g
    rows = []
    for p in range(red.ways):
        rows.append(
            [
                (k, int(t.src == p), t.dst if t.src == p else t.src, t.chunk, t.slot)
                for k, t in plan.steps(p)
            ]
        )
    width = max(len(r) for r in rows)
    count = [len(r) for r in rows]
    plan_rows = ", ".join(
        "{" + ", ".join(_c_array(s) for s in r + [(0, 0, 0, 0, 0)] * (width - len(r))) + "}"
        for r in rows
    )
    ctx.statics += [
        f"/* noc:%{n}: {red.pattern} {red.collective} of %{n}"
        + (
            (
                f" (a shared load), {red.ways} tiles per share group"
                if op.kind in _LOADS
                else f"'s pieces (read whole), {red.ways} tiles per gather group"
            )
            if red.collective == "all-gather"
            else f"'s pieces other tiles read (a halo), {len(red.moves)} copies"
            if red.collective == "exchange"
            else f"'s partial sums, {red.ways} tiles per reduction group"
        )
        + f", {len(red.groups)} groups; chunks {red.chunks} along dim {red.chunk_dim}; "
        f"staging {red.slots} x {red.slot_bytes} B (NocReduce) */",
        f"static const int32_t noc_pos_{n}[{ctx.num_tiles}] = {_c_array(pos)};  "
        "/* tile id -> its position in its group (-1: none) */",
        f"static const int32_t noc_team_{n}[{ctx.num_tiles}] = {_c_array(team)};  "
        "/* tile id -> its group (reduction or share) */",
        f"static const int32_t noc_tiles_{n}[{len(members)}][{red.ways}] = "
        f"{{{', '.join(_c_array(m) for m in members)}}};  /* each group's tile ids by position */",
        f"static const int32_t noc_count_{n}[{red.ways}] = {_c_array(count)};",
        f"static const NOC_STEP noc_plan_{n}[{red.ways}][{width}] = {{{plan_rows}}};  "
        "/* per position, in order: per round its sends, then its receives */",
    ]
    pad = _INDENT * depth
    inner = pad + _INDENT * 2
    result = f"t_{c_name(ctx.names[op.results[0].key])}"
    fmt = c_format(op.results[0].type.dtype, op.label)
    at = c_at(tuple(var for var, _ in loops))
    gather = red.collective in ("all-gather", "exchange")
    ctx.calls += 2 if gather else 3
    if gather:  # every chunk lands in place
        land = [f"{inner}TSR *land = &{result};"]
        add = []
    else:
        staging = f"t_{c_name(f'%{op.id}.noc')}"
        land = [
            f"{inner}TSR slot = {staging};",
            f"{inner}slot.addr += (uint64_t)(st->slot > 0 ? st->slot : 0) * {red.slot_bytes}u;",
            f"{inner}TSR *land = st->slot >= 0 ? &slot : &{result};  /* -1: onto the sum */",
        ]
        add = [
            f"{inner}{_INDENT}if (st->slot >= 0) cycles += op_noc_add(&p, land, &{result}, "
            f"&{result});"
        ]
    ctx.lines += [
        f"{pad}{{  /* {task.id} {task.engine}, {_steps_note(ctx.steps.get(task.id, [0]))}: "
        f"this tile's sends and receives of the {red.pattern} {red.collective} */",
        f"{pad}{_INDENT}const int32_t pos = noc_pos_{n}[tile_id];",
        f"{pad}{_INDENT}for (int32_t s = 0; s < noc_count_{n}[pos]; ++s) {{",
        f"{inner}const NOC_STEP *st = &noc_plan_{n}[pos][s];",
        f"{inner}NOC_PARAM p = {{.op = {op.id}, .at = {at}, .fmt = {fmt}, .psum_init = 1, "
        ".psum_last = 1, .transfer = st->transfer, .chunk = st->chunk, "
        f".peer = noc_tiles_{n}[noc_team_{n}[tile_id]][st->peer]}};",
        *land,
        f"{inner}if (st->send) {{",
        f"{inner}{_INDENT}cycles += dte_send(&p, &{result}, land);",
        f"{inner}}} else {{",
        f"{inner}{_INDENT}cycles += dte_recv(&p, land);",
        *add,
        f"{inner}}}",
        f"{pad}{_INDENT}}}",
        f"{pad}}}",
    ]


def _operand(ctx: _Ctx, op: Op, index: int) -> str:
    v = op.operands[index]
    name = ctx.names.get(v.key)
    if name is not None:
        return f"&t_{c_name(name)}"
    owner = None if v.is_arg else ctx.ops.get(v.owner)
    if owner is not None and owner.kind in _LOADS and owner.attrs.get("bypasscodegen"):
        return f"&d_{owner.id}"
    if op.kind == _STORE and owner is not None:
        raise Tx8labError(
            f"codegen: {op.label} stores %{owner.id}, which has no SPM buffer in group "
            f"%{ctx.group.id}"
        )
    raise Tx8labError(
        f"codegen: {op.label} operand {index} in group %{ctx.group.id} is neither in SPM nor a "
        "bypasscodegen constant; run group-ldst (the default pipeline) so every input is loaded"
    )


def _emit_nodes(ctx: _Ctx, nodes: Sequence[Node], loops: list[tuple[str, int]], depth: int) -> None:
    for node in nodes:
        if isinstance(node, Task):
            _emit_task(ctx, node, loops, depth)
            continue
        var = f"i{len(loops)}"
        pad = _INDENT * depth
        ctx.lines.append(
            f"{pad}for (int32_t {var} = 0; {var} < {node.times}; ++{var}) {{  "
            f"/* Repeat x{node.times} {node.stage} */"
        )
        _emit_nodes(ctx, node.body, [*loops, (var, node.times)], depth + 1)
        ctx.lines.append(pad + "}")


def _loop_summary(nodes: Sequence[Node]) -> str:
    parts = []
    for node in nodes:
        if isinstance(node, Repeat):
            inner = _loop_summary(node.body)
            parts.append(f"Repeat x{node.times} {node.stage}" + (f" {{{inner}}}" if inner else ""))
    return ", ".join(parts)


def group_c(group: Op, hw: ChipConfig, code: GroupCode | None = None) -> GroupC:
    """The C of one scheduled group (module docstring).

    Printed from the group's :class:`~tx8lab.core.program.GroupCode` (``code``: a
    Program's, else built here), the rolled form of the commands the Program unrolls.
    """
    code = code if code is not None else group_code(group, hw)
    strategy, si, timeline = code.strategy, code.schedule, code.timeline
    instances = code.instances
    ops = {op.id: op for op in group.regions[0].ops if op.kind not in TERMINATORS}
    slices = {
        op_id: get_op_def(ops[op_id].kind).temporal_slice_shape(ops[op_id], s)
        for op_id, s in strategy.ops.items()
        if op_id in ops and is_compute(ops[op_id])
    }
    steps: dict[str, list[int]] = {}
    for slot in sorted(timeline.slots, key=lambda s: (s.step, s.task)):
        steps.setdefault(slot.task, []).append(slot.step)
    ctx = _Ctx(
        group,
        ops,
        strategy,
        si,
        slices,
        dict(code.names),
        steps,
        _tables(group, code.offsets, instances, strategy.multi_buffer),
        overwritten=_overwriters(si),
        tiles=region_tiles(group, hw),
        num_tiles=hw.tiles_per_chip,
    )
    used = sorted(si.buffers, key=_buffer_order(si))
    decls = _declare(ctx, used)
    _emit_nodes(ctx, si.nodes, [], 1)
    tables = [d for d in decls if d.startswith("static const")] + ctx.statics
    local = [d for d in decls if not d.startswith("static const")]
    x, y, dx, dy = tuple(group.attrs.get("dev_region", (0, 0, 1, 1)))[:4]
    kinds = ", ".join(o.kind.split(".")[-1] for o in ops.values() if is_compute(o))
    cycles = int(group.attrs.get("cycles", 0))
    plan = group.attrs.get("plan_cycles")
    timed = f"{cycles} cycles" + (
        f" simulated, plan {int(plan)} (group-cost)" if plan is not None else " (group-cost)"
    )
    barrier = bool(group.attrs.get("need_barrier", False))
    loops = _loop_summary(si.nodes) or "no loop"
    head = [
        f"/* group %{group.id}: {kinds or 'no compute op'}",
        f" * tiles ({x}, {y}) + {dx}x{dy}; {timed}; SPM "
        f"{group.attrs.get('spm_alloc_size', 0)} B allocated; multi_buffer "
        f"{strategy.multi_buffer}; retract {str(bool(group.attrs.get('retract', True))).lower()}",
        f" * loops: {loops}; {len(timeline.slots)} task instances in {timeline.steps} steps",
    ]
    if barrier:
        head.append(" * main() calls tsm_barrier() after it (opt-barrier need_barrier)")
    head.append(" */")
    fn = f"group_{group.id}"
    lines = [
        *head,
        *tables,
        f"static uint64_t {fn}(int32_t tile_id) {{",
        f"{_INDENT}uint64_t cycles = 0;",
        f"{_INDENT}if (!tsm_tile_in_region(tile_id, {x}, {y}, {dx}, {dy})) return 0;",
        *(_INDENT + d for d in local),
        *ctx.lines,
        f"{_INDENT}return cycles;",
        "}",
    ]
    return GroupC(group.id, fn, "\n".join(lines) + "\n", ctx.calls, barrier, cycles)


def _buffer_order(si: ScheduleInput) -> Any:
    first: dict[str, int] = {}

    def walk(nodes: Sequence[Node]) -> None:
        for node in nodes:
            if isinstance(node, Task):
                for b in (*node.writes, *node.reads):
                    first.setdefault(b, len(first))
            else:
                walk(node.body)

    walk(si.nodes)
    return lambda b: (first.get(b, len(first)), b)


# ---------------------------------------------------------------------- the cache


def structure_key(group: Op) -> tuple[Any, ...]:
    """The group's text up to ids: body structure and the schedule attributes.

    Like ``tx8lab.core.schedule.template_cache.template_key`` but without DDR addresses, plus the
    group attributes the text shows and ``spm_offsets`` with op ids replaced by positions.
    """
    body = list(group.regions[0].ops)
    pos = {op.id: i for i, op in enumerate(body)}
    external: dict[tuple[int, int, bool], int] = {}
    items: list[Any] = []
    for op in body:
        wiring = tuple(
            ("op", pos[v.owner], v.index)
            if not v.is_arg and v.owner in pos
            else ("in", external.setdefault(v.key, len(external)), v.index)
            for v in op.operands
        )
        attrs = tuple(sorted((k, repr(a)) for k, a in op.attrs.items() if k not in _DATA_ATTRS))
        items.append(
            (
                op.kind,
                attrs,
                "ddr_addr" in op.attrs,
                tuple((v.type.shape, v.type.dtype) for v in op.operands),
                tuple((v.type.shape, v.type.dtype) for v in op.results),
                wiring,
            )
        )

    def positional(lid: str) -> str:
        return _ID.sub(lambda m: f"p{pos.get(int(m.group(1)), m.group(1))}", lid)

    offsets = tuple((positional(str(i)), o, n) for i, o, n in group.attrs.get("spm_offsets", ()))
    extra = tuple(repr(group.attrs.get(k)) for k in _GROUP_ATTRS)
    barrier = bool(group.attrs.get("need_barrier", False))
    return (tuple(items), offsets, extra, barrier)


@dataclass
class CodegenCache:
    """Group texts by :func:`structure_key` (one per hardware config)."""

    entries: dict[Any, tuple[GroupC, tuple[int, ...]]] = field(default_factory=dict)
    hits: int = 0
    misses: int = 0

    def group(self, group: Op, hw: ChipConfig, code: GroupCode | None = None) -> GroupC:
        """:func:`group_c`, or a cached group's text with this group's ids."""
        key = (structure_key(group), hw)
        ids = (group.id, *(op.id for op in group.regions[0].ops if op.kind not in TERMINATORS))
        hit = self.entries.get(key)
        if hit is None:
            self.misses += 1
            out = group_c(group, hw, code)
            self.entries[key] = (out, ids)
            return out
        self.hits += 1
        template, old_ids = hit
        rename = {str(a): str(b) for a, b in zip(old_ids, ids, strict=True)}
        text = _ID.sub(lambda m: rename.get(m.group(1), m.group(1)), template.text)
        return GroupC(
            group.id,
            f"group_{group.id}",
            text,
            template.calls,
            template.need_barrier,
            template.cycles,
            template.group_id,
        )


# ---------------------------------------------------------------------- the module


def groups_c(
    module: Module,
    hw: ChipConfig,
    cache: CodegenCache | None = None,
    program: Program | None = None,
) -> list[GroupC]:
    """:class:`GroupC` of every top-level group of ``main``, in order.

    Given the module's ``program``, each group is printed from its ``Program.code`` (no
    schedule is rebuilt); otherwise each group's code is built here.
    """
    cache = cache if cache is not None else CodegenCache()
    codes = program.code if program is not None else {}
    out = []
    for op in module.main.ops:
        if op.kind == "tx8be.Group":
            out.append(cache.group(op, hw, codes.get(op.id)))
        elif op.kind not in TERMINATORS and op.kind not in _NO_CODE:
            raise Tx8labError(
                f"codegen: {op.label} is outside every group; main.c runs groups only "
                "(run the group pass, the default pipeline, before codegen)"
            )
    return out


def _ddr_table(module: Module) -> list[str]:
    consts: list[str] = []
    variables: list[str] = []
    for group in module.main.ops:
        if group.kind != "tx8be.Group":
            continue
        for op in group.regions[0].ops:
            if op.kind not in _LOADS and op.kind != _STORE:
                continue
            value = op.results[0] if op.kind in _LOADS else op.operands[0]
            addr = op.attrs.get("ddr_addr")
            if addr is None:
                raise Tx8labError(
                    f"codegen: {op.label} in group %{group.id} has no ddr_addr; run opt-ddr "
                    "(the default pipeline) before codegen"
                )
            what = op.kind.split(".")[-1]
            if "const_id" in op.attrs:
                what += f" const_id {op.attrs['const_id']}"
            if op.attrs.get("bypasscodegen"):
                what += ", read in place"
            line = (
                f"#define DDR_{op.id} 0x{int(addr):010x}ULL  /* %{op.id} {what}: "
                f"{_dims(value.type.shape)} {value.type.dtype} */"
            )
            (consts if op.kind == "tx8be.LoadConst" else variables).append(line)
    return [
        "/* DDR addresses (opt-ddr): constants */",
        *consts,
        "/* DDR addresses (opt-ddr): variables (loads and stores) */",
        *variables,
    ]


def main_c(module: Module, hw: ChipConfig, groups: Sequence[GroupC]) -> str:
    """The whole main.c: header comment, DDR table, the group functions, ``main``."""
    model = module.attrs.get("tx8.model", "unnamed model")
    total = sum(g.cycles for g in groups)
    lines = [
        f"/* main.c of {model}, generated by tx8lab codegen (seed 001 genOpCode)",
        f" * hardware preset: {hw.name}",
        f" * estimated cycles: {total} (sum of the {len(groups)} groups' group-cost cycles)",
        " * every tile runs this program on its shard: tsm_tile_id() says which",
        " */",
        "#include <stdint.h>",
        "",
        '#include "tx8_oplib.h"',
        "",
        *_ddr_table(module),
        "",
    ]
    for g in groups:
        lines.append(g.text)
    lines += [
        "/* the groups in order and whether a barrier follows each, for a host that runs",
        " * them tile by tile (tx8lab.core.execute) */",
        "const tx8_group_fn tx8_groups[] = {"
        + ", ".join(g.function for g in groups or ())
        + ("" if groups else "0")
        + "};",
        "const int32_t tx8_group_barrier[] = {"
        + (", ".join("1" if g.need_barrier else "0" for g in groups) or "0")
        + "};",
        f"const int32_t tx8_num_groups = {len(groups)};",
        "",
        "int main(void) {",
        f"{_INDENT}int32_t tile_id = tsm_tile_id();",
        f"{_INDENT}uint64_t cycles = 0;",
    ]
    for g in groups:
        lines.append(f"{_INDENT}cycles += {g.function}(tile_id);")
        if g.need_barrier:
            lines.append(f"{_INDENT}cycles += tsm_barrier();  /* need_barrier (opt-barrier) */")
    lines += [f"{_INDENT}(void)cycles;", f"{_INDENT}return 0;", "}", ""]
    return "\n".join(lines)


def group_ir_text(module: Module, group_id: int, elide_bytes: int | None = 1024) -> str:
    """The printed IR of one top-level group (its lines of ``print_module``).

    Views show it beside the group's C.

    Raises:
        Tx8labError: no top-level group ``%group_id`` in ``main``.
    """
    from tx8lab.core.text import print_module

    lines = print_module(module, elide_bytes=elide_bytes).splitlines()
    head = re.compile(rf'^(\s*)%{group_id}(:\d+)? = "tx8be\.Group"')
    for start, line in enumerate(lines):
        match = head.match(line)
        if match is None:
            continue
        pad = match.group(1)
        for end in range(start + 1, len(lines)):
            if lines[end].startswith(pad + "})"):
                return "\n".join(line[len(pad) :] for line in lines[start : end + 1]) + "\n"
    groups = ", ".join(f"%{op.id}" for op in module.main.ops if op.kind == "tx8be.Group")
    raise Tx8labError(f"no top-level group %{group_id} in the module (groups: {groups or 'none'})")


__all__ = [
    "CodegenCache",
    "GroupC",
    "c_name",
    "group_c",
    "group_ir_text",
    "group_schedule",
    "groups_c",
    "main_c",
    "strategy_of",
    "structure_key",
]
