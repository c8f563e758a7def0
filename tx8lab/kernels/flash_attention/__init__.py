"""FlashAttention on the TX8 tile model (seed 004).

- :mod:`.numerics` - tiled forward (online softmax) and backward in numpy, with the naive
  reference and its analytic gradients;
- :mod:`.templates` - the seed's FA / FAG templates, the tiling each names, and the tiling
  key (``GET_TILINGKEY``);
- :mod:`.timeline` - the template's tiling first (:func:`~.timeline.resolve`), then C/V
  tiling, ping-pong, cube double issue, layout moves, core split over the 16 tiles: each
  tile's command stream timed by the tile simulator; calibration against the board and
  the block-size search;
- :mod:`.backward` - the same for the backward pass (FAG);
- :mod:`.stream` - what both share: SPM layout, law-timed commands, running the tiles.

On TX8 the seed's Cube is the NE, its Vector the CGRA (CT), and its UB/L1 the SPM.
"""

from tx8lab.kernels.flash_attention.backward import FagModel, fag_model
from tx8lab.kernels.flash_attention.numerics import (
    Attention,
    ForwardResult,
    GradResult,
    block_pairs,
    dropout_mask,
    flash_backward,
    flash_forward,
    reference_backward,
    reference_forward,
    round_to,
)
from tx8lab.kernels.flash_attention.templates import (
    TilingKey,
    backward_template,
    choose_backward_template,
    choose_forward_template,
    decode_tiling_key,
    encode_tiling_key,
    forward_template,
)
from tx8lab.kernels.flash_attention.timeline import (
    FaConfig,
    FaModel,
    board_config,
    calibration,
    model,
    resolve,
    search,
)

__all__ = [
    "Attention",
    "FaConfig",
    "FaModel",
    "FagModel",
    "ForwardResult",
    "GradResult",
    "TilingKey",
    "backward_template",
    "block_pairs",
    "board_config",
    "calibration",
    "choose_backward_template",
    "choose_forward_template",
    "decode_tiling_key",
    "dropout_mask",
    "encode_tiling_key",
    "fag_model",
    "flash_backward",
    "flash_forward",
    "forward_template",
    "model",
    "reference_backward",
    "reference_forward",
    "resolve",
    "round_to",
    "search",
]
