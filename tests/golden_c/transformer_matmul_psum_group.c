/* group %68: MatMul, ChannelNorm, Add, Reshape, ChannelNorm, Transpose
 * tiles (0, 0) + 4x4; 6072 cycles simulated, plan 17844 (group-cost); SPM 6400 B allocated; multi_buffer 2; retract true
 * loops: Repeat x4 STAGEIC2IC; 19 task instances in 16 steps
 */
static const uint32_t spm_80[4] = {256, 6144, 4352, 6144};  /* %80: SPM offsets, one per generation (4) */
static const uint32_t spm_3[4] = {512, 256, 256, 256};  /* %3: SPM offsets, one per generation (4) */
static uint64_t group_68(int32_t tile_id) {
    uint64_t cycles = 0;
    if (!tsm_tile_in_region(tile_id, 0, 0, 4, 4)) return 0;
    L_SHAPE ls_5 = {{64}, {0}, {64}, {64}, 1};
    TSR t_5 = {Fmt_FP16, 0x000000, &ls_5};  /* %5 value of LoadConst: slice 64, 256 B */
    int32_t n_80 = 0;
    L_SHAPE ls_80 = {{1, 64, 64}, {0, 0, 0}, {1, 4, 16}, {1, 4, 16}, 3};
    TSR t_80 = {Fmt_FP16, 0x000000, &ls_80};  /* %80 value of LoadVar: slice 1x4x16, 256 B, 4 addresses */
    int32_t n_3 = 0;
    L_SHAPE ls_3 = {{64, 64}, {0, 0}, {16, 64}, {16, 64}, 2};
    TSR t_3 = {Fmt_FP16, 0x000000, &ls_3};  /* %3 value of LoadConst: slice 16x64, 4096 B, 4 addresses */
    L_SHAPE ls_4 = {{1, 64, 64}, {0, 0, 0}, {1, 4, 64}, {1, 4, 64}, 3};
    TSR t_4 = {Fmt_FP16, 0x001600, &ls_4};  /* %4 value of MatMul: slice 1x4x64, 512 B */
    L_SHAPE ls_4_psum = {{1, 64, 64}, {0, 0, 0}, {1, 4, 64}, {1, 4, 64}, 3};
    TSR t_4_psum = {Fmt_FP32, 0x001200, &ls_4_psum};  /* %4.psum psum of MatMul: slice 1x4x64, 1024 B */
    L_SHAPE ls_48 = {{1, 64, 64}, {0, 0, 0}, {1, 4, 64}, {1, 4, 64}, 3};
    TSR t_48 = {Fmt_FP16, 0x000100, &ls_48};  /* %48 value of ChannelNorm: slice 1x4x64, 512 B */
    L_SHAPE ls_6 = {{1, 64, 64}, {0, 0, 0}, {1, 4, 64}, {1, 4, 64}, 3};
    TSR t_6 = {Fmt_FP16, 0x000000, &ls_6};  /* %6 value of Add: slice 1x4x64, 512 B, in place of %48 */
    L_SHAPE ls_7 = {{1, 64, 2, 32}, {0, 0, 0, 0}, {1, 4, 2, 32}, {1, 4, 2, 32}, 4};
    TSR t_7 = {Fmt_FP16, 0x000300, &ls_7};  /* %7 value of Reshape: slice 1x4x2x32, 512 B */
    L_SHAPE ls_49 = {{1, 64, 2, 32}, {0, 0, 0, 0}, {1, 4, 2, 32}, {1, 4, 2, 32}, 4};
    TSR t_49 = {Fmt_FP16, 0x000000, &ls_49};  /* %49 value of ChannelNorm: slice 1x4x2x32, 512 B */
    L_SHAPE ls_8 = {{1, 2, 64, 32}, {0, 0, 0, 0}, {1, 2, 4, 32}, {1, 2, 4, 32}, 4};
    TSR t_8 = {Fmt_FP16, 0x000200, &ls_8};  /* %8 value of Transpose: slice 1x2x4x32, 512 B */
    G_SHAPE gs_80 = {.spatial_start = {0, 0, 0}, .spatial_end = {0, 63, 63}, .shape = {1, 64, 64}, .dim = 3, .done = 0};
    tsm_tile_window(&gs_80, (const int32_t[]){1, 16, 1}, tile_id);
    G_SHAPE gs_3 = {.spatial_start = {0, 0}, .spatial_end = {63, 63}, .shape = {64, 64}, .dim = 2, .done = 0};
    tsm_tile_window(&gs_3, (const int32_t[]){1, 1}, tile_id);
    G_SHAPE gs_5 = {.spatial_start = {0}, .spatial_end = {63}, .shape = {64}, .dim = 1, .done = 0};
    tsm_tile_window(&gs_5, (const int32_t[]){1}, tile_id);
    G_SHAPE gs_81 = {.spatial_start = {0, 0, 0, 0}, .spatial_end = {0, 1, 63, 31}, .shape = {1, 2, 64, 32}, .dim = 4, .done = 0};
    tsm_tile_window(&gs_81, (const int32_t[]){1, 1, 16, 1}, tile_id);
    cycles += op_dma_load_const(&(DMA_PARAM){.op = 5, .at = {0}}, &t_5, DDR_5, &gs_5);  /* ld:%5 ld, step 0 */
    for (int32_t i0 = 0; i0 < 4; ++i0) {  /* Repeat x4 STAGEIC2IC */
        t_80.addr = spm_80[n_80++];
        cycles += op_dma_load(&(DMA_PARAM){.op = 80, .at = {i0}}, &t_80, DDR_80, &gs_80);  /* ld:%80 ld, steps 1..7 (4x) */
        t_3.addr = spm_3[n_3++];
        cycles += op_dma_load_const(&(DMA_PARAM){.op = 3, .at = {i0}}, &t_3, DDR_3, &gs_3);  /* ld:%3 ld, steps 2..8 (4x) */
        cycles += op_matmul(&(MATMUL_PARAM){.op = 4, .at = {i0}, .fmt = Fmt_FP16, .dim = 4, .slice = {1, 4, 64, 16}, .psum_init = (i0 == 0), .psum_last = (i0 == 3), .batch = 1, .m = 4, .k = 16, .n = 64, .trans_a = 0, .trans_b = 0}, &t_80, &t_3, NULL, &t_4_psum, &t_4);  /* ne:%4 ne, steps 3..9 (4x) */
    }
    cycles += op_channel_norm(&(CHANNEL_NORM_PARAM){.op = 48, .at = {0}, .fmt = Fmt_FP16, .dim = 3, .slice = {1, 4, 64}, .psum_init = 1, .psum_last = 1, .direction = 0}, &t_4, NULL, NULL, &t_48);  /* ct:%48 ct, step 10 */
    t_6.addr = t_48.addr;
    cycles += op_add(&(ELTWISE_PARAM){.op = 6, .at = {0}, .fmt = Fmt_FP16, .dim = 3, .slice = {1, 4, 64}, .psum_init = 1, .psum_last = 1}, &t_48, &t_5, NULL, NULL, &t_6);  /* ct:%6 ct, step 11 */
    cycles += op_reshape(&(DATA_PARAM){.op = 7, .at = {0}, .fmt = Fmt_FP16, .dim = 4, .slice = {1, 4, 2, 32}, .psum_init = 1, .psum_last = 1, .axis = -1}, &t_6, NULL, NULL, &t_7);  /* ct:%7 ct, step 12 */
    cycles += op_channel_norm(&(CHANNEL_NORM_PARAM){.op = 49, .at = {0}, .fmt = Fmt_FP16, .dim = 4, .slice = {1, 4, 2, 32}, .psum_init = 1, .psum_last = 1, .direction = 1}, &t_7, NULL, NULL, &t_49);  /* ct:%49 ct, step 13 */
    cycles += op_transpose(&(DATA_PARAM){.op = 8, .at = {0}, .fmt = Fmt_FP16, .dim = 4, .slice = {1, 2, 4, 32}, .psum_init = 1, .psum_last = 1, .axis = -1}, &t_49, NULL, NULL, &t_8);  /* ct:%8 ct, step 14 */
    cycles += op_dma_store(&(DMA_PARAM){.op = 81, .at = {0}}, &t_8, DDR_81, &gs_81);  /* st:%81 st, step 15 */
    return cycles;
}
