"""group-mapping: give every group the tile region it runs on (``dev_region``).

Spec: seed 001 ("GroupMappingPass", ``simpleGroupMapping``): read the module's tile
dimensions (``ModuleAttr::TileDx`` / ``TileDy``) and set ``dev_region`` from them on every
GroupOp of ``main`` and of the subgraphs it calls. One walk over each function's top level.

Readings chosen where the seed is vague:

- **Where the dimensions come from.** The seed reads module attributes that an earlier
  stage set; here the module attributes ``tx8be.tile_dx`` / ``tx8be.tile_dy`` win when
  present (they must fit the chip's mesh), otherwise they come from the hardware: x is
  the mesh's columns, y its rows (``hw.mesh_shape`` is (rows, columns)); the pass then
  records them on the module, as the seed's module carries them.
- **What a region is.** The seed's ``Tx8e_RegionAttr`` is not spelled out; ``dev_region``
  is the tuple ``(x0, y0, x_dim, y_dim)``: the origin tile, then the extent. The simple
  mapping gives every group the whole mesh from tile (0, 0), so a later mapping that puts
  groups on sub-meshes only changes the numbers.
- Every top-level group of every function is mapped (tx8lab has no CallOp; functions
  stand for the seed's subgraphs). Groups nested in a group body are not (the seed walks
  only the top level of ``main``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from tx8lab.core.ir import Module
from tx8lab.core.passes.base import Decision, Pass, PassResult
from tx8lab.errors import Tx8labError
from tx8lab.hw.config import ChipConfig

#: Module attribute names of the tile dimensions (seed ``ModuleAttr::TileDx`` / ``TileDy``).
TILE_DX = "tx8be.tile_dx"
TILE_DY = "tx8be.tile_dy"


def tile_dims(module: Module, hw: ChipConfig) -> tuple[int, int]:
    """(x_dim, y_dim): the module's ``tx8be.tile_dx``/``tile_dy``, else the hw mesh.

    Examples:
        >>> from tx8lab.core.builder import Builder
        >>> from tx8lab.hw import TX81
        >>> b = Builder(); b.output(b.op("Relu", b.input((2,))))
        >>> tile_dims(b.finish(), TX81.with_overrides({"mesh_shape": "2x4"}))
        (4, 2)
    """
    limits = {TILE_DX: hw.mesh_cols, TILE_DY: hw.mesh_rows}
    dims = []
    for key, limit in limits.items():
        value: Any = module.attrs.get(key, limit)
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= limit:
            raise Tx8labError(
                f"module attribute {key} = {value!r}: must be an integer in 1..{limit} "
                f"(the {hw.name} mesh is {hw.mesh_rows}x{hw.mesh_cols}); fix or remove it"
            )
        dims.append(value)
    return dims[0], dims[1]


def region_for(x_dim: int, y_dim: int) -> tuple[int, int, int, int]:
    """``dev_region`` of a group on the whole ``x_dim`` x ``y_dim`` mesh from tile (0, 0)."""
    return (0, 0, x_dim, y_dim)


@dataclass(frozen=True)
class GroupMapping(Pass):
    """Set ``dev_region`` on every group from the module's tile dimensions."""

    name: ClassVar[str] = "group-mapping"
    summary: ClassVar[str] = "dev_region of every group from the module's x/y tile dims"

    def run(self, module: Module, hw: ChipConfig) -> PassResult:
        x_dim, y_dim = tile_dims(module, hw)
        region = region_for(x_dim, y_dim)
        decisions: list[Decision] = []
        functions = []
        for func in module.functions:
            ops = []
            for op in func.ops:
                if op.kind == "tx8be.Group":
                    decisions.append(
                        self.decide(
                            op.id,
                            "mapped",
                            f"simpleGroupMapping: the whole {x_dim}x{y_dim} tile mesh "
                            f"from tile (0, 0)",
                            dev_region=list(region),
                        )
                    )
                    if op.attrs.get("dev_region") != region:
                        op = op.with_attrs(dev_region=region)
                ops.append(op)
            same = all(a is b for a, b in zip(ops, func.ops, strict=True))
            functions.append(func if same else func.with_ops(ops))
        attrs = {**module.attrs, TILE_DX: x_dim, TILE_DY: y_dim}
        stats: dict[str, int | float | str] = {
            "groups": len(decisions),
            "x_dim": x_dim,
            "y_dim": y_dim,
        }
        unchanged = dict(module.attrs) == attrs and all(
            a is b for a, b in zip(functions, module.functions, strict=True)
        )
        if unchanged:
            return PassResult(module, tuple(decisions), stats)
        return PassResult(Module(tuple(functions), attrs, module.next_id), tuple(decisions), stats)

    def check(self, module: Module) -> list[str]:
        """Post-condition: every top-level group has the module's ``dev_region``."""
        x_dim = module.attrs.get(TILE_DX)
        y_dim = module.attrs.get(TILE_DY)
        if not isinstance(x_dim, int) or not isinstance(y_dim, int):
            return [f"module: {TILE_DX}/{TILE_DY} not set after group-mapping"]
        region = region_for(x_dim, y_dim)
        return [
            f"{op.label}: dev_region {op.attrs.get('dev_region')!r}, expected {region}"
            for func in module.functions
            for op in func.ops
            if op.kind == "tx8be.Group" and op.attrs.get("dev_region") != region
        ]


__all__ = ["TILE_DX", "TILE_DY", "GroupMapping", "region_for", "tile_dims"]
