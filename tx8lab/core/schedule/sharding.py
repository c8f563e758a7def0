"""DataSplitNew for one group: factor spaces, split tries and slice propagation.

Spec: seed 001 "DataSplitNewPass": ``DS_SpaceInitPass`` (``ShardingLevel::init``,
``getShardings``, ``getFactor``, ``ShardingSpace`` ordering, the levels of a store op of
shape ``[3, 4, 128, 4096]``), ``DS_TileSplitPass`` (``reduceSplit`` first, then
``getNextSplit`` on the first dim not at ``sliceShapeMin``, from the back or from the front
with ``nFirst``; every try recorded), ``DS_SlicePropagatePass`` (from the group's outputs
backwards, each op's ``tileShardingSplit`` gives its operands' factors; the ``tile_parallel``
attribute when it cannot), and ``SecsInfo`` (``sharding``, ``splitTry``, ``sliceShapeMin``).

Three pure stages a search (or a notebook) calls on their own:

1. :func:`sharding_levels` / :func:`op_sharding_levels`: every sharding vector whose
   product is the tile count, plus the no-shard vector, grouped into
   :class:`ShardingLevel` s best first.
2. :func:`split_tries`: the sequence of :class:`SplitTry` s DS_TileSplit walks for one op
   under one sharding.
3. :func:`propagate`: a group's output factors -> a :class:`~tx8lab.core.schedule.tasks.Strategy`
   (what ``slicing.schedule_input`` takes) and a record per op (:class:`PropagationRecord`).

The op library's ``tile_sharding_split`` (seed ``tileShardingSplit``, the default of
``OpDef`` in ``tx8lab.core.ops.registry``) serves every op family: an operand dim takes the
factors of the iteration dim it follows (``operand_dims``), a dim it takes whole gets 1, and
the operand's sharding (split) is cleared — the seed's "no valid factors" — when the op is
asked to shard (split) an iteration dim it forbids. BatchNorm keeps the seed's own code.

Readings chosen where the seed is vague:

- **getFactor returns inside its loop** (after dim 0) and ``ShardingSpace::operator<``
  compares two ``uint8_t[4]`` arrays, i.e. their addresses. We read what they mean: the
  product over *all* dims of ``min(sharding[i], ceil(shape[i] / alignBase_i))`` (the
  effective tile count), and levels ordered by that value, best first.
- **Level = floor(log2(effective tiles))**, not the ceil the seed's text says: the seed's
  own example puts ``[1, 16, 1, 1]`` (4 useful tiles) at factor 4 and ``[16, 1, 1, 1]``
  (3 useful tiles: dim 0 is 3) at factor 2, one level lower; ceil would merge them into
  one level and credit 3 tiles as 4. Floor never claims more tiles than are used. A
  level's label is ``2 ** level`` tiles, as in the example ("factor=16").
- **Order within a level** is the order ``getShardings`` generates the vectors (dim 0 the
  outer loop, 1 upwards), which is the example's order (``[1, 1, 1, 16], [1, 1, 2, 8],
  [1, 1, 4, 4] ...``); the ``std::set`` keyed by the factor holds one entry per level with
  the list of its vectors. The no-shard vector is added last.
- **Align base** (seed ``GetAlignBase``): only the last dim is aligned, to its Cx channel
  block (64 elements, 128 for 8-bit types) when it is wider than the first padding group
  (32, 64 for 8-bit); a narrower channel is padded as one group (4/8/16/32), so its base
  is the whole channel (one useful piece). Types without a Cx layout (i64, i1) align to 1.
  Invalid vectors (sharding a dim the op forbids, ``isValid`` in the seed) are left out.
- **getNextSplit** doubles the current split (the seed's "2 -> 4"), capped at the
  per-tile size and brought down to the chunks that hold data (96 split by 64 is 48
  chunks of 2: :func:`~tx8lab.core.ops.registry.effective_split`; an empty chunk would
  run an iteration over nothing, and a split reduction's last partial sum would land on
  it, so ``check_strategy`` refuses such splits); a dim is at
  ``sliceShapeMin`` when doubling would make its slice (``ceil(ceil(size / shard) /
  split)``) smaller than its minimum: the align base for the channel and for reduction
  dims (they are the last dim of an operand), 1 otherwise. Reduction dims (Gemm K, conv
  IC, reduced axes) come first (``reduceSplit``, ``rfinish``), then the first non-reduction
  dim not at its minimum from the back, or from the front with ``n_first``. Every step is
  one :class:`SplitTry`; a search stops the walk when the group fits in SPM.
- **Factor vectors** (:class:`~tx8lab.core.ops.registry.ShardingSplitParam`) index the
  output's dims; an op with iteration dims beyond its result (reduction dims) takes one
  more factor per such dim after them, or 1 when the vector has only the output's rank.
- **Fallback**: when every request a producer gets is cleared, it reads its
  ``tile_parallel`` attribute (``ParallelAttr.shape_spatial_sharding`` of its rank, no
  split); without one it is not sharded nor split (the seed's no-shard vector). Both are
  recorded.
- **Conflict** (two users asking different factors of one producer): per dim the producer
  shards by the gcd of the requests (each user's tile piece then lies inside one producer
  piece) and splits by the common split, or 1 when the requests differ (it computes that
  dim whole, which every user can read chunk by chunk — slicing's "split 1 takes the dim
  whole"). Cleared requests are ignored when a valid one exists. Each conflict is recorded.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from tx8lab.core.attrs import ParallelAttr
from tx8lab.core.dtypes import bits_of
from tx8lab.core.grouping import is_compute
from tx8lab.core.ir import TERMINATORS, Op
from tx8lab.core.layouts import ALIGNED_DTYPES
from tx8lab.core.ops import OPS, get_op_def
from tx8lab.core.ops.registry import (
    ShardingSplitParam,
    effective_split,
    iteration_vector,
    slice_extent,
)
from tx8lab.core.schedule.tasks import OpStrategy, Strategy
from tx8lab.errors import Tx8labError

# ---------------------------------------------------------------- 1. factor spaces


def align_base(size: int, dtype: str) -> int:
    """Seed ``GetAlignBase`` for the last dim: its Cx channel block (module docstring).

    Examples:
        >>> align_base(4096, "f16"), align_base(4096, "i8"), align_base(24, "f16")
        (64, 128, 24)
        >>> align_base(4096, "i64")
        1
    """
    if dtype not in ALIGNED_DTYPES:
        return 1
    eight = bits_of(dtype) == 8
    block, small = (128, 64) if eight else (64, 32)
    if size <= small:
        return max(size, 1)
    return block


def max_sharding_dims(shape: Sequence[int], dtype: str) -> tuple[int, ...]:
    """Seed ``maxShardingDim`` per dim: ``ceil(size / alignBase)``, only the last dim aligned."""
    rank = len(shape)
    return tuple(
        -(-d // (align_base(d, dtype) if i == rank - 1 else 1)) if d > 0 else 1
        for i, d in enumerate(shape)
    )


def effective_tiles(shape: Sequence[int], dtype: str, sharding: Sequence[int]) -> int:
    """Seed ``getFactor`` before the log: ``prod(min(sharding[i], maxShardingDim[i]))``.

    Examples:
        >>> effective_tiles((3, 4, 128, 4096), "f16", (16, 1, 1, 1))
        3
        >>> effective_tiles((3, 4, 128, 4096), "f16", (1, 8, 1, 2))
        8
    """
    if len(sharding) != len(shape):
        raise Tx8labError(
            f"sharding {tuple(sharding)} has {len(sharding)} entries for shape {tuple(shape)}"
            f" of rank {len(shape)}: give one factor per dim"
        )
    return math.prod(
        min(s, m) for s, m in zip(sharding, max_sharding_dims(shape, dtype), strict=True)
    )


def get_shardings(rank: int, tiles: int) -> list[tuple[int, ...]]:
    """Seed ``getShardings``: all vectors of ``rank`` positive ints whose product is ``tiles``.

    In the seed's order (dim 0 the outer loop, each factor from 1 upwards).

    Examples:
        >>> get_shardings(2, 4)
        [(1, 4), (2, 2), (4, 1)]
    """
    if tiles < 1:
        raise Tx8labError(f"the tile count must be >= 1, got {tiles}")
    out: list[tuple[int, ...]] = []
    _shardings((), tiles, rank, out)
    return out


def _shardings(prefix: tuple[int, ...], left: int, rank: int, out: list[tuple[int, ...]]) -> None:
    # module level, not a closure: a recursive closure is a reference cycle (tx8lab._bulk)
    if len(prefix) == rank:
        if left == 1:
            out.append(prefix)
        return
    for i in range(1, left + 1):
        if left % i == 0:
            _shardings((*prefix, i), left // i, rank, out)


@dataclass(frozen=True)
class ShardingLevel:
    """One entry of the seed's ``std::set<ShardingSpace>``: the vectors of one factor."""

    factor: int
    """``floor(log2(effective tiles))`` (the seed's ``factor``)."""
    shardings: tuple[tuple[int, ...], ...]
    """Sharding vectors, in getShardings order (the no-shard vector last)."""
    effective: tuple[int, ...]
    """Effective tile count of each vector."""

    @property
    def tiles(self) -> int:
        """The level's label in the seed's example: ``2 ** factor`` tiles."""
        return 1 << self.factor


def sharding_levels(
    shape: Sequence[int],
    dtype: str,
    tiles: int = 16,
    *,
    shardable: Sequence[bool] | None = None,
) -> list[ShardingLevel]:
    """Seed ``ShardingLevel::init``: the factor space of one op's output, best level first.

    ``shardable`` (one flag per dim) drops vectors that shard a dim the op forbids.

    Examples:
        >>> [lv.tiles for lv in sharding_levels((3, 4, 128, 4096), "f16", 16)]
        [16, 8, 4, 2, 1]
    """
    rank = len(shape)
    if shardable is not None and len(shardable) != rank:
        raise Tx8labError(
            f"shardable has {len(shardable)} flags for shape {tuple(shape)} of rank {rank}"
        )
    vectors = [*get_shardings(rank, tiles), (1,) * rank]
    seen: set[tuple[int, ...]] = set()
    by_factor: dict[int, list[tuple[tuple[int, ...], int]]] = {}
    for vec in vectors:
        if vec in seen:
            continue
        seen.add(vec)
        if shardable is not None and any(
            f > 1 and not ok for f, ok in zip(vec, shardable, strict=True)
        ):
            continue
        eff = effective_tiles(shape, dtype, vec)
        by_factor.setdefault(eff.bit_length() - 1, []).append((vec, eff))
    return [
        ShardingLevel(f, tuple(v for v, _ in got), tuple(e for _, e in got))
        for f, got in sorted(by_factor.items(), reverse=True)
    ]


def op_sharding_levels(op: Op, tiles: int = 16) -> list[ShardingLevel]:
    """:func:`sharding_levels` of an op's result 0, without vectors its op forbids."""
    if not op.results:
        raise Tx8labError(f"{op.label} has no result: it has no sharding space")
    entry = get_op_def(op.kind)
    res = op.results[0].type
    dims = entry.iter_dims(op)
    rmap = entry.result_dims(op)[0]
    flags = [d is not None and d < len(dims) and dims[d].shardable for d in rmap]
    return sharding_levels(res.shape, res.dtype, tiles, shardable=flags)


# ---------------------------------------------------------------- 2. split tries


@dataclass(frozen=True)
class SplitTry:
    """One step of DS_TileSplit (seed ``splitRecord.update``)."""

    op_id: int
    step: int
    dim: str
    """The iteration dim whose split changed."""
    index: int
    split: tuple[int, ...]
    """The op's ``splitTry`` after this step (iteration dims)."""
    slice: tuple[int, ...]
    """One tile's slice per iteration dim under it."""
    reduce: bool
    """True for a reduceSplit step."""


def min_slices(op: Op) -> tuple[int, ...]:
    """Seed ``sliceShapeMin`` bound per iteration dim (module docstring)."""
    entry = get_op_def(op.kind)
    dims = entry.iter_dims(op)
    dtype = entry.compute_dtype(op)
    return tuple(
        min(d.size, align_base(d.size, dtype)) if d.loop in ("oc", "ic") else 1 for d in dims
    )


def next_split(size: int, shard: int, split: int, minimum: int) -> int | None:
    """Seed ``getNextSplit``: double ``split``; None when the slice would drop below ``minimum``.

    Examples:
        >>> next_split(512, 1, 2, 64), next_split(512, 1, 8, 64), next_split(5, 1, 4, 1)
        (4, None, 5)
    """
    nxt = effective_split(size, shard, min(split * 2, -(-size // shard)))
    before = slice_extent(size, shard, split)
    after = slice_extent(size, shard, nxt)
    if after < minimum or after >= before:
        return None
    return nxt


def split_tries(
    op: Op,
    shard: Sequence[int],
    *,
    n_first: bool = False,
    limit: int = 256,
    whole: Collection[int] = (),
) -> list[SplitTry]:
    """DS_TileSplit's walk for ``op`` sharded by ``shard`` (over its iteration dims).

    Reduction dims first (seed ``reduceSplit``), then the first dim not at its minimum,
    from the back (from the front with ``n_first``); at most ``limit`` tries. The dims of
    ``whole`` are passed over (kept whole in time).

    Raises:
        Tx8labError: ``shard`` does not fit the op's iteration dims.
    """
    entry = get_op_def(op.kind)
    dims = entry.iter_dims(op)
    entry.check_strategy(op, OpStrategy(tuple(shard), (1,) * len(dims)))
    mins = min_slices(op)
    split = [1] * len(dims)
    order = list(range(len(dims)))
    if not n_first:
        order.reverse()
    reduce_first = [i for i in order if dims[i].reduce]
    others = [i for i in order if not dims[i].reduce]
    tries: list[SplitTry] = []
    for group in (reduce_first, others):
        while len(tries) < limit:
            pick: tuple[int, int] | None = None
            for i in group:
                if not dims[i].splittable or i in whole:
                    continue
                nxt = next_split(dims[i].size, shard[i], split[i], mins[i])
                if nxt is not None:
                    pick = (i, nxt)
                    break
            if pick is None:
                break
            i, nxt = pick
            split[i] = nxt
            tries.append(
                SplitTry(
                    op.id,
                    len(tries) + 1,
                    dims[i].name,
                    i,
                    tuple(split),
                    tuple(
                        slice_extent(d.size, s, p)
                        for d, s, p in zip(dims, shard, split, strict=True)
                    ),
                    dims[i].reduce,
                )
            )
    return tries


# ---------------------------------------------------------------- 3. propagation


@dataclass(frozen=True)
class PropagationRecord:
    """How one op's factors were decided (seed DS_SlicePropagate, one line per op)."""

    op_id: int
    label: str
    source: str
    """``output`` (given), ``users`` (tileShardingSplit of its users), ``conflict``
    (users disagreed: the documented rule), ``tile_parallel`` or ``no-shard`` (fallbacks)."""
    param: ShardingSplitParam
    """The op's own factors (output dims, plus its extra iteration dims when given)."""
    strategy: OpStrategy
    detail: str = ""


@dataclass(frozen=True)
class Propagation:
    """The result of :func:`propagate`."""

    strategy: Strategy
    records: tuple[PropagationRecord, ...]

    @property
    def conflicts(self) -> tuple[PropagationRecord, ...]:
        """The records of producers whose users disagreed."""
        return tuple(r for r in self.records if r.source == "conflict")


def _resolve(requests: Sequence[ShardingSplitParam]) -> tuple[ShardingSplitParam, bool]:
    """The conflict rule: gcd of shards, common split or 1 (module docstring)."""
    shards = [r.out_sharding for r in requests if r.out_sharding]
    splits = [r.out_split for r in requests if r.out_split]
    conflict = len(set(shards)) > 1 or len(set(splits)) > 1
    shard = tuple(math.gcd(*col) for col in zip(*shards, strict=True)) if shards else ()
    split = (
        tuple(col[0] if len(set(col)) == 1 else 1 for col in zip(*splits, strict=True))
        if splits
        else ()
    )
    return ShardingSplitParam(shard, split), conflict


def _fallback(op: Op, rank: int) -> tuple[ShardingSplitParam, str, str]:
    attr = op.attrs.get("tile_parallel")
    if isinstance(attr, ParallelAttr) and len(attr.shape_spatial_sharding) == rank:
        vec = tuple(int(x) for x in attr.shape_spatial_sharding)
        return ShardingSplitParam(vec, (1,) * rank), "tile_parallel", "from tile_parallel"
    return ShardingSplitParam((1,) * rank, (1,) * rank), "no-shard", "not sharded, not split"


def op_strategy(op: Op, param: ShardingSplitParam) -> OpStrategy | None:
    """The op's :class:`OpStrategy` for ``param``, None when the op rejects it."""
    defn = get_op_def(op.kind)
    dims = defn.iter_dims(op)
    shard = iteration_vector(defn, op, dims, param.out_sharding, "outSharding")
    split = iteration_vector(defn, op, dims, param.out_split, "outSplit")
    if not shard or not split:
        return None
    st = OpStrategy(tuple(shard), tuple(split))
    try:
        defn.check_strategy(op, st)
    except Tx8labError:
        return None
    return st


_Key = tuple[int, int, bool]


def group_body(
    group_op: Op,
) -> tuple[list[Op], dict[_Key, Op], dict[_Key, _Key], list[Op]]:
    """Compute ops, value producers, Tuple aliases and the output compute ops of a body."""
    body = [op for op in group_op.regions[0].ops if op.kind not in TERMINATORS]
    alias: dict[_Key, _Key] = {}
    producer: dict[_Key, Op] = {}
    for op in body:
        if op.kind == "tx8be.Tuple":
            for res, v in zip(op.results, op.operands, strict=True):
                alias[res.key] = alias.get(v.key, v.key)
        for r in op.results:
            producer[r.key] = op
    compute = [op for op in body if is_compute(op) and op.kind != "tx8be.Tuple"]
    has_compute_user: set[int] = set()
    for op in compute:
        for v in op.operands:
            prod = producer.get(alias.get(v.key, v.key))
            if prod is not None and is_compute(prod):
                has_compute_user.add(prod.id)
    outs = [op for op in compute if op.id not in has_compute_user]
    return compute, producer, alias, outs


def output_ops(group_op: Op) -> list[Op]:
    """The output compute ops of a group's body (no compute op of the body reads them).

    What :func:`propagate` starts from (they feed the group's stores), in program order.

    Raises:
        Tx8labError: ``group_op`` is not a group.
    """
    if group_op.kind != "tx8be.Group" or not group_op.regions:
        raise Tx8labError(f"output_ops needs a tx8be.Group op with a body, got {group_op.label}")
    return group_body(group_op)[3]


def param_for(op: Op, strategy: OpStrategy) -> ShardingSplitParam:
    """The :class:`ShardingSplitParam` of an op's :class:`OpStrategy`.

    Iteration dims -> output dims, then the extra iteration dims when any is cut: what
    :func:`propagate` takes for an output op.

    Raises:
        Tx8labError: the strategy does not fit the op's iteration dims.
    """
    defn = get_op_def(op.kind)
    dims = defn.check_strategy(op, strategy)
    rmap = defn.result_dims(op)[0] if op.results else ()
    extra = [i for i in range(len(dims)) if i not in rmap]

    cut = any(v[i] != 1 for v in (strategy.shard, strategy.split) for i in extra)

    def pick(values: tuple[int, ...]) -> tuple[int, ...]:
        head = tuple(1 if d is None else values[d] for d in rmap)
        return (*head, *(values[i] for i in extra)) if cut else head

    return ShardingSplitParam(pick(strategy.shard), pick(strategy.split))


class PropagateCache:
    """What :func:`propagate` keeps about one group across many calls.

    The body's compute ops, producers and outputs, and each op's answers to the factors it
    is asked (its strategy, what it asks of its operands): a search propagates hundreds of
    candidates that ask most ops the same. Make one per search (it assumes the op library
    does not change meanwhile) and hand it to :func:`propagate` with that group.

    Raises:
        Tx8labError: ``group_op`` is not a group.
    """

    def __init__(self, group_op: Op) -> None:
        if group_op.kind != "tx8be.Group" or not group_op.regions:
            raise Tx8labError(
                f"PropagateCache needs a tx8be.Group op with a body, got {group_op.label}"
            )
        self.group = group_op
        self.body = group_body(group_op)
        self._strategies: dict[tuple[int, ShardingSplitParam], OpStrategy | None] = {}
        self._asks: dict[
            tuple[int, ShardingSplitParam, OpStrategy], tuple[ShardingSplitParam, ...]
        ] = {}

    def op_strategy(self, op: Op, param: ShardingSplitParam) -> OpStrategy | None:
        """:func:`op_strategy`, kept."""
        if not _whole_numbers(param):
            return op_strategy(op, param)  # a factor that only equals an int: not kept
        key = (op.id, param)
        if key not in self._strategies:
            self._strategies[key] = op_strategy(op, param)
        return self._strategies[key]

    def asks(
        self, op: Op, param: ShardingSplitParam, st: OpStrategy
    ) -> Sequence[ShardingSplitParam]:
        """What ``op`` under ``param`` (its strategy ``st``) asks of its operands, kept."""
        if not _whole_numbers(param):
            return _asks(op, param, st)
        key = (op.id, param, st)
        got = self._asks.get(key)
        if got is None:
            got = self._asks[key] = tuple(_asks(op, param, st))
        return got


def _whole_numbers(param: ShardingSplitParam) -> bool:
    return all(type(f) is int for f in (*param.out_sharding, *param.out_split))


def _asks(op: Op, param: ShardingSplitParam, st: OpStrategy) -> Sequence[ShardingSplitParam]:
    """The op's ``tile_sharding_split`` of its own factors (extra dims included)."""
    rank = op.results[0].type.rank if op.results else 0
    own = (
        _with_extra(op, param, st)
        if len(param.out_sharding) == rank and len(param.out_split) == rank
        else param
    )
    return OPS[op.kind].tile_sharding_split(op, own)


def propagate(
    group_op: Op,
    outputs: Mapping[int, ShardingSplitParam],
    *,
    multi_buffer: int = 2,
    anywhere: bool = False,
    cache: PropagateCache | None = None,
) -> Propagation:
    """Seed DS_SlicePropagate: the group's strategy from its output ops' factors.

    ``outputs`` maps the id of each compute op whose result leaves the group (no compute
    user in the body) to its factors; one left out is not sharded (recorded). Ops are
    visited from the last to the first, so every user of a producer is done first.
    ``anywhere=True`` accepts factors for any compute op of the body (a chip cut seeds
    the producers of a matmul's reduction operand); ops after it get no request.
    ``cache``: the group's :class:`PropagateCache` when it is propagated many times (the
    same result).

    Raises:
        Tx8labError: ``group_op`` is not a group, ``outputs`` names an op that is not an
            output compute op of its body, a given vector does not fit its op, or
            ``cache`` is another group's.
    """
    if group_op.kind != "tx8be.Group" or not group_op.regions:
        raise Tx8labError(
            f"propagate needs a tx8be.Group op with a body, got {group_op.label} "
            "(outline ops with tx8lab.core.grouping.outline or run the group pass)"
        )
    if cache is not None and cache.group is not group_op:
        raise Tx8labError(
            f"propagate: a cache of group %{cache.group.id} was given for {group_op.label}; "
            "make one per group"
        )
    compute, producer, alias, outs = cache.body if cache is not None else group_body(group_op)
    strategy_of = cache.op_strategy if cache is not None else op_strategy
    asks_of = cache.asks if cache is not None else _asks
    out_ids = {op.id for op in (compute if anywhere else outs)}
    wrong = sorted(set(outputs) - out_ids)
    if wrong:
        raise Tx8labError(
            f"propagate: group %{group_op.id} ops {wrong} are not output compute ops of its "
            f"body (outputs: {sorted(out_ids)}); give factors for those only"
        )
    requests: dict[int, list[tuple[str, ShardingSplitParam]]] = {}
    records: list[PropagationRecord] = []
    ops: dict[int, OpStrategy] = {}
    for op in reversed(compute):
        rank = op.results[0].type.rank if op.results else 0
        label = f"%{op.id} ({op.name})"
        if op.id in outputs:
            param, source, detail = outputs[op.id], "output", "given"
            st = strategy_of(op, param)
            if st is None:
                raise Tx8labError(
                    f"propagate: {label} cannot take sharding {param.out_sharding} and split "
                    f"{param.out_split} (check its iteration dims: "
                    f"{', '.join(d.name for d in get_op_def(op.kind).iter_dims(op))})"
                )
        else:
            asked = requests.get(op.id, [])
            valid = [p for _, p in asked if p.out_sharding or p.out_split or rank == 0]
            if asked and valid:
                param, conflict = _resolve(valid)
                who = ", ".join(f"{u}: {p.out_sharding}/{p.out_split}" for u, p in asked)
                source = "conflict" if conflict else "users"
                detail = who
                if not param.out_sharding:
                    param = ShardingSplitParam((1,) * rank, param.out_split)
                if not param.out_split:
                    param = ShardingSplitParam(param.out_sharding, (1,) * rank)
            else:
                param, source, detail = _fallback(op, rank)
                if not asked:
                    detail = "no user in the group asked"
            st = strategy_of(op, param)
            if st is None:
                rejected = f"{param.out_sharding}/{param.out_split}"
                param, source, detail = _fallback(op, rank)
                detail = f"the op cannot take its users' {rejected}; {detail}"
                st = strategy_of(op, param)
                if st is None:
                    param = ShardingSplitParam((1,) * rank, (1,) * rank)
                    source, detail = "no-shard", "tile_parallel does not fit the op"
                    st = strategy_of(op, param)
                    assert st is not None
        ops[op.id] = st
        records.append(PropagationRecord(op.id, label, source, param, st, detail))
        for v, ask in zip(op.operands, asks_of(op, param, st), strict=True):
            key = alias.get(v.key, v.key)
            prod = producer.get(key)
            # a request indexes result 0's dims; a later result's user asks nothing
            if prod is not None and is_compute(prod) and key[1] == 0:
                requests.setdefault(prod.id, []).append((label, ask))
    records.reverse()
    return Propagation(Strategy(ops, multi_buffer), tuple(records))


def _with_extra(op: Op, param: ShardingSplitParam, st: OpStrategy) -> ShardingSplitParam:
    """``param`` extended by the op's own factors of its extra iteration dims."""
    defn = get_op_def(op.kind)
    rmap = defn.result_dims(op)[0]
    extra = [i for i in range(len(st.shard)) if i not in rmap]
    return ShardingSplitParam(
        (*param.out_sharding, *(st.shard[i] for i in extra)),
        (*param.out_split, *(st.split[i] for i in extra)),
    )


# ---------------------------------------------------------------- rows for tables


def level_rows(levels: Sequence[ShardingLevel]) -> list[dict[str, object]]:
    """One row per sharding vector, best level first (``pandas.DataFrame(rows)`` shows it).

    Examples:
        >>> rows = level_rows(sharding_levels((3, 4), "f16", 4))
        >>> rows[1]
        {'level': 0, 'tiles': 2, 'factor': 1, 'sharding': (4, 1), 'effective': 3}
        >>> [r["sharding"] for r in rows]  # 4 channels are one Cx group: (1, 4) uses 1 tile
        [(2, 2), (4, 1), (1, 4), (1, 1)]
    """
    return [
        {"level": n, "tiles": lv.tiles, "factor": lv.factor, "sharding": vec, "effective": eff}
        for n, lv in enumerate(levels)
        for vec, eff in zip(lv.shardings, lv.effective, strict=True)
    ]


def split_try_rows(tries: Sequence[SplitTry]) -> list[dict[str, object]]:
    """One row per :class:`SplitTry` (seed ``splitRecord``)."""
    return [
        {
            "op": f"%{t.op_id}",
            "step": t.step,
            "dim": t.dim,
            "reduce": t.reduce,
            "split": t.split,
            "slice": t.slice,
        }
        for t in tries
    ]


def propagation_rows(result: Propagation) -> list[dict[str, object]]:
    """One row per op of a :class:`Propagation`, in program order."""
    return [
        {
            "op": r.label,
            "source": r.source,
            "sharding": r.param.out_sharding,
            "split": r.param.out_split,
            "shard (iter dims)": r.strategy.shard,
            "split (iter dims)": r.strategy.split,
            "detail": r.detail,
        }
        for r in result.records
    ]


__all__ = [
    "PropagateCache",
    "Propagation",
    "PropagationRecord",
    "ShardingLevel",
    "SplitTry",
    "align_base",
    "effective_tiles",
    "get_shardings",
    "group_body",
    "level_rows",
    "max_sharding_dims",
    "min_slices",
    "next_split",
    "op_sharding_levels",
    "op_strategy",
    "output_ops",
    "param_for",
    "propagate",
    "propagation_rows",
    "sharding_levels",
    "split_tries",
    "split_try_rows",
]
