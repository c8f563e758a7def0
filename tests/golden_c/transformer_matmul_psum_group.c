/* group %75: MatMul, ChannelNorm, Reshape, Add, Reshape, ChannelNorm, Transpose
 * tiles (0, 0) + 4x4; 6119 cycles simulated, plan 18844 (group-cost); SPM 6400 B allocated; multi_buffer 2; retract true
 * loops: Repeat x4 STAGEIC2IC; 20 task instances in 17 steps
 */
static const uint32_t spm_86[4] = {256, 6144, 4352, 6144};  /* %86: SPM offsets, one per generation (4) */
static const uint32_t spm_3[4] = {512, 256, 256, 256};  /* %3: SPM offsets, one per generation (4) */
static uint64_t group_75(int32_t tile_id) {
    uint64_t cycles = 0;
    if (!tsm_tile_in_region(tile_id, 0, 0, 4, 4)) return 0;
    L_SHAPE ls_5 = {{64}, {0}, {64}, {64}, 1};
    TSR t_5 = {Fmt_FP16, 0x000000, &ls_5};  /* %5 value of LoadConst: slice 64, 256 B */
    int32_t n_86 = 0;
    L_SHAPE ls_86 = {{1, 1, 64, 64}, {0, 0, 0, 0}, {1, 1, 4, 16}, {1, 1, 4, 16}, 4};
    TSR t_86 = {Fmt_FP16, 0x000000, &ls_86};  /* %86 value of LoadVar: slice 1x1x4x16, 256 B, 4 addresses */
    int32_t n_3 = 0;
    L_SHAPE ls_3 = {{64, 64}, {0, 0}, {16, 64}, {16, 64}, 2};
    TSR t_3 = {Fmt_FP16, 0x000000, &ls_3};  /* %3 value of LoadConst: slice 16x64, 4096 B, 4 addresses */
    L_SHAPE ls_4 = {{1, 1, 64, 64}, {0, 0, 0, 0}, {1, 1, 4, 64}, {1, 1, 4, 64}, 4};
    TSR t_4 = {Fmt_FP16, 0x001600, &ls_4};  /* %4 value of MatMul: slice 1x1x4x64, 512 B */
    L_SHAPE ls_4_psum = {{1, 1, 64, 64}, {0, 0, 0, 0}, {1, 1, 4, 64}, {1, 1, 4, 64}, 4};
    TSR t_4_psum = {Fmt_FP32, 0x001200, &ls_4_psum};  /* %4.psum psum of MatMul: slice 1x1x4x64, 1024 B */
    L_SHAPE ls_57 = {{1, 1, 64, 64}, {0, 0, 0, 0}, {1, 1, 4, 64}, {1, 1, 4, 64}, 4};
    TSR t_57 = {Fmt_FP16, 0x000100, &ls_57};  /* %57 value of ChannelNorm: slice 1x1x4x64, 512 B */
    L_SHAPE ls_47 = {{1, 64, 64}, {0, 0, 0}, {1, 4, 64}, {1, 4, 64}, 3};
    TSR t_47 = {Fmt_FP16, 0x000300, &ls_47};  /* %47 value of Reshape: slice 1x4x64, 512 B */
    L_SHAPE ls_6 = {{1, 64, 64}, {0, 0, 0}, {1, 4, 64}, {1, 4, 64}, 3};
    TSR t_6 = {Fmt_FP16, 0x000000, &ls_6};  /* %6 value of Add: slice 1x4x64, 512 B, in place of %47 */
    L_SHAPE ls_7 = {{1, 64, 2, 32}, {0, 0, 0, 0}, {1, 4, 2, 32}, {1, 4, 2, 32}, 4};
    TSR t_7 = {Fmt_FP16, 0x000000, &ls_7};  /* %7 value of Reshape: slice 1x4x2x32, 512 B */
    L_SHAPE ls_58 = {{1, 64, 2, 32}, {0, 0, 0, 0}, {1, 4, 2, 32}, {1, 4, 2, 32}, 4};
    TSR t_58 = {Fmt_FP16, 0x000200, &ls_58};  /* %58 value of ChannelNorm: slice 1x4x2x32, 512 B */
    L_SHAPE ls_8 = {{1, 2, 64, 32}, {0, 0, 0, 0}, {1, 2, 4, 32}, {1, 2, 4, 32}, 4};
    TSR t_8 = {Fmt_FP16, 0x000000, &ls_8};  /* %8 value of Transpose: slice 1x2x4x32, 512 B */
    G_SHAPE gs_86 = {.spatial_start = {0, 0, 0, 0}, .spatial_end = {0, 0, 63, 63}, .shape = {1, 1, 64, 64}, .dim = 4, .done = 0};
    tsm_tile_window(&gs_86, (const int32_t[]){1, 1, 16, 1}, tile_id);
    G_SHAPE gs_3 = {.spatial_start = {0, 0}, .spatial_end = {63, 63}, .shape = {64, 64}, .dim = 2, .done = 0};
    tsm_tile_window(&gs_3, (const int32_t[]){1, 1}, tile_id);
    G_SHAPE gs_5 = {.spatial_start = {0}, .spatial_end = {63}, .shape = {64}, .dim = 1, .done = 0};
    tsm_tile_window(&gs_5, (const int32_t[]){1}, tile_id);
    G_SHAPE gs_87 = {.spatial_start = {0, 0, 0, 0}, .spatial_end = {0, 1, 63, 31}, .shape = {1, 2, 64, 32}, .dim = 4, .done = 0};
    tsm_tile_window(&gs_87, (const int32_t[]){1, 1, 16, 1}, tile_id);
    cycles += op_dma_load_const(&(DMA_PARAM){.op = 5, .at = {0}}, &t_5, DDR_5, &gs_5);  /* ld:%5 ld, step 0 */
    for (int32_t i0 = 0; i0 < 4; ++i0) {  /* Repeat x4 STAGEIC2IC */
        t_86.addr = spm_86[n_86++];
        cycles += op_dma_load(&(DMA_PARAM){.op = 86, .at = {i0}}, &t_86, DDR_86, &gs_86);  /* ld:%86 ld, steps 1..7 (4x) */
        t_3.addr = spm_3[n_3++];
        cycles += op_dma_load_const(&(DMA_PARAM){.op = 3, .at = {i0}}, &t_3, DDR_3, &gs_3);  /* ld:%3 ld, steps 2..8 (4x) */
        cycles += op_matmul(&(MATMUL_PARAM){.op = 4, .at = {i0}, .fmt = Fmt_FP16, .dim = 5, .slice = {1, 1, 4, 64, 16}, .psum_init = (i0 == 0), .psum_last = (i0 == 3), .batch = 1, .m = 4, .k = 16, .n = 64, .trans_a = 0, .trans_b = 0}, &t_86, &t_3, NULL, &t_4_psum, &t_4);  /* ne:%4 ne, steps 3..9 (4x) */
    }
    cycles += op_channel_norm(&(CHANNEL_NORM_PARAM){.op = 57, .at = {0}, .fmt = Fmt_FP16, .dim = 4, .slice = {1, 1, 4, 64}, .psum_init = 1, .psum_last = 1, .direction = 0}, &t_4, NULL, NULL, &t_57);  /* ct:%57 ct, step 10 */
    cycles += op_reshape(&(DATA_PARAM){.op = 47, .at = {0}, .fmt = Fmt_FP16, .dim = 3, .slice = {1, 4, 64}, .psum_init = 1, .psum_last = 1, .axis = -1}, &t_57, NULL, NULL, &t_47);  /* ct:%47 ct, step 11 */
    t_6.addr = t_47.addr;
    cycles += op_add(&(ELTWISE_PARAM){.op = 6, .at = {0}, .fmt = Fmt_FP16, .dim = 3, .slice = {1, 4, 64}, .psum_init = 1, .psum_last = 1}, &t_47, &t_5, NULL, NULL, &t_6);  /* ct:%6 ct, step 12 */
    cycles += op_reshape(&(DATA_PARAM){.op = 7, .at = {0}, .fmt = Fmt_FP16, .dim = 4, .slice = {1, 4, 2, 32}, .psum_init = 1, .psum_last = 1, .axis = -1}, &t_6, NULL, NULL, &t_7);  /* ct:%7 ct, step 13 */
    cycles += op_channel_norm(&(CHANNEL_NORM_PARAM){.op = 58, .at = {0}, .fmt = Fmt_FP16, .dim = 4, .slice = {1, 4, 2, 32}, .psum_init = 1, .psum_last = 1, .direction = 1}, &t_7, NULL, NULL, &t_58);  /* ct:%58 ct, step 14 */
    cycles += op_transpose(&(DATA_PARAM){.op = 8, .at = {0}, .fmt = Fmt_FP16, .dim = 4, .slice = {1, 2, 4, 32}, .psum_init = 1, .psum_last = 1, .axis = -1}, &t_58, NULL, NULL, &t_8);  /* ct:%8 ct, step 15 */
    cycles += op_dma_store(&(DMA_PARAM){.op = 87, .at = {0}}, &t_8, DDR_87, &gs_87);  /* st:%87 st, step 16 */
    return cycles;
}
