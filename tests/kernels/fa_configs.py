"""Random FlashAttention configurations, shared by the forward and backward model tests."""

from __future__ import annotations

from hypothesis import strategies as st

from tx8lab.kernels.flash_attention.timeline import FaConfig


@st.composite
def fa_configs(draw: st.DrawFn, forward: bool = True) -> FaConfig:
    """Small shapes over every knob.

    ``forward`` adds the forward-only knobs: one K/V head, the accumulator's layout, K/V
    residency.
    """
    pp = draw(st.booleans())
    extra: dict[str, object] = {}
    if forward:
        extra = {
            "n2": 1,
            "acc_ncx": draw(st.booleans()),
            "kv_resident": draw(st.sampled_from([None, False])),
        }
    return FaConfig(
        b=draw(st.integers(1, 2)),
        n1=draw(st.sampled_from([1, 2])),
        s1=draw(st.integers(1, 300)),
        s2=draw(st.integers(1, 300)),
        d=draw(st.sampled_from([32, 64])),
        causal=draw(st.booleans()),
        block=draw(
            st.one_of(
                st.none(),  # the template's (B passes of several heads on small shapes)
                st.tuples(st.sampled_from([64, 128]), st.sampled_from([64, 128])),
            )
        ),
        pingpong=pp,
        double_issue=pp and draw(st.booleans()),
        sync_issue=draw(st.booleans()),
        split=draw(st.sampled_from(["bn", "bns1", "bn2", "fused", None])),
        cv_ratio=draw(st.booleans()),
        vector_dtype=draw(st.sampled_from(["f32", "bf16"])),
        transpose=draw(st.sampled_from(["tdma", "ct", "ne"])),
        io_layout=draw(st.sampled_from(["nd", "ncx"])),
        **extra,  # type: ignore[arg-type]
    )
