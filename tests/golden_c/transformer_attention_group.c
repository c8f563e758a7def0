/* group %78: MatMul, Mul, Softmax, MatMul
 * tiles (0, 0) + 4x4; 13121 cycles simulated, plan 32686 (group-cost); SPM 11264 B allocated; multi_buffer 2; retract true
 * loops: Repeat x4 STAGEOC2NH {Repeat x2 STAGEIC2IC}; 45 task instances in 29 steps
 * main() calls tsm_barrier() after it (opt-barrier need_barrier)
 */
static const uint32_t spm_94[2] = {0, 4096};  /* %94: SPM offsets, rotates over 2 (multi_buffer) */
static const uint32_t spm_92[8] = {6656, 7168, 10752, 2560, 10752, 6656, 10752, 2560};  /* %92: SPM offsets, one per generation (8) */
static const uint32_t spm_93[8] = {4096, 4096, 8192, 0, 8192, 4096, 8192, 0};  /* %93: SPM offsets, one per generation (8) */
static const uint32_t spm_21[8] = {6912, 8192, 0, 8192, 4096, 8192, 0, 2816};  /* %21: SPM offsets, one per generation (8) */
static const uint32_t spm_21_psum[2] = {6144, 2048};  /* %21.psum: SPM offsets, rotates over 2 (multi_buffer) */
static const uint32_t spm_23[4] = {8960, 8960, 8960, 768};  /* %23: SPM offsets, one per generation (4) */
static const uint32_t spm_24[4] = {10496, 10496, 10496, 1024};  /* %24: SPM offsets, one per generation (4) */
static const uint32_t spm_24_imm[4] = {8192, 8192, 8192, 0};  /* %24.imm: SPM offsets, one per generation (4) */
static const uint32_t spm_25[4] = {11008, 11008, 11008, 0};  /* %25: SPM offsets, one per generation (4) */
static uint64_t group_78(int32_t tile_id) {
    uint64_t cycles = 0;
    if (!tsm_tile_in_region(tile_id, 0, 0, 4, 4)) return 0;
    L_SHAPE ls_22 = {{0}, {0}, {0}, {0}, 0};
    TSR t_22 = {Fmt_FP16, 0x002800, &ls_22};  /* %22 value of LoadConst: slice scalar, 256 B */
    int32_t n_94 = 0;
    L_SHAPE ls_94 = {{1, 2, 64, 32}, {0, 0, 0, 0}, {1, 1, 64, 32}, {1, 1, 64, 32}, 4};
    TSR t_94 = {Fmt_FP16, 0x000000, &ls_94};  /* %94 value of LoadVar: slice 1x1x64x32, 4096 B, 2 addresses */
    int32_t n_92 = 0;
    L_SHAPE ls_92 = {{1, 2, 64, 32}, {0, 0, 0, 0}, {1, 1, 2, 16}, {1, 1, 2, 16}, 4};
    TSR t_92 = {Fmt_FP16, 0x000000, &ls_92};  /* %92 value of LoadVar: slice 1x1x2x16, 256 B, 8 addresses */
    int32_t n_93 = 0;
    L_SHAPE ls_93 = {{1, 2, 32, 64}, {0, 0, 0, 0}, {1, 1, 16, 64}, {1, 1, 16, 64}, 4};
    TSR t_93 = {Fmt_FP16, 0x000000, &ls_93};  /* %93 value of LoadVar: slice 1x1x16x64, 2048 B, 8 addresses */
    int32_t n_21 = 0;
    L_SHAPE ls_21 = {{1, 2, 64, 64}, {0, 0, 0, 0}, {1, 1, 2, 64}, {1, 1, 2, 64}, 4};
    TSR t_21 = {Fmt_FP16, 0x000000, &ls_21};  /* %21 value of MatMul: slice 1x1x2x64, 256 B, 8 addresses */
    int32_t n_21_psum = 0;
    L_SHAPE ls_21_psum = {{1, 2, 64, 64}, {0, 0, 0, 0}, {1, 1, 2, 64}, {1, 1, 2, 64}, 4};
    TSR t_21_psum = {Fmt_FP32, 0x000000, &ls_21_psum};  /* %21.psum psum of MatMul: slice 1x1x2x64, 512 B, 2 addresses */
    int32_t n_23 = 0;
    L_SHAPE ls_23 = {{1, 2, 64, 64}, {0, 0, 0, 0}, {1, 1, 2, 64}, {1, 1, 2, 64}, 4};
    TSR t_23 = {Fmt_FP16, 0x000000, &ls_23};  /* %23 value of Mul: slice 1x1x2x64, 256 B, 4 addresses */
    int32_t n_24 = 0;
    L_SHAPE ls_24 = {{1, 2, 64, 64}, {0, 0, 0, 0}, {1, 1, 2, 64}, {1, 1, 2, 64}, 4};
    TSR t_24 = {Fmt_FP16, 0x000000, &ls_24};  /* %24 value of Softmax: slice 1x1x2x64, 256 B, 4 addresses */
    int32_t n_24_imm = 0;
    L_SHAPE ls_24_imm = {{768}, {0}, {768}, {768}, 1};
    TSR t_24_imm = {Fmt_INT8, 0x000000, &ls_24_imm};  /* %24.imm imm of Softmax: slice 768, 768 B, 4 addresses */
    int32_t n_25 = 0;
    L_SHAPE ls_25 = {{1, 2, 64, 32}, {0, 0, 0, 0}, {1, 1, 2, 32}, {1, 1, 2, 32}, 4};
    TSR t_25 = {Fmt_FP16, 0x000000, &ls_25};  /* %25 value of MatMul: slice 1x1x2x32, 256 B, 4 addresses */
    G_SHAPE gs_92 = {.spatial_start = {0, 0, 0, 0}, .spatial_end = {0, 1, 63, 31}, .shape = {1, 2, 64, 32}, .dim = 4, .done = 0};
    tsm_tile_window(&gs_92, (const int32_t[]){1, 1, 16, 1}, tile_id);
    G_SHAPE gs_93 = {.spatial_start = {0, 0, 0, 0}, .spatial_end = {0, 1, 31, 63}, .shape = {1, 2, 32, 64}, .dim = 4, .done = 0};
    tsm_tile_window(&gs_93, (const int32_t[]){1, 1, 1, 1}, tile_id);
    G_SHAPE gs_94 = {.spatial_start = {0, 0, 0, 0}, .spatial_end = {0, 1, 63, 31}, .shape = {1, 2, 64, 32}, .dim = 4, .done = 0};
    tsm_tile_window(&gs_94, (const int32_t[]){1, 1, 1, 1}, tile_id);
    G_SHAPE gs_22 = {.spatial_start = {0}, .spatial_end = {0}, .shape = {0}, .dim = 0, .done = 0};
    tsm_tile_window(&gs_22, (const int32_t[]){0}, tile_id);
    G_SHAPE gs_95 = {.spatial_start = {0, 0, 0, 0}, .spatial_end = {0, 1, 63, 31}, .shape = {1, 2, 64, 32}, .dim = 4, .done = 0};
    tsm_tile_window(&gs_95, (const int32_t[]){1, 1, 16, 1}, tile_id);
    cycles += op_dma_load_const(&(DMA_PARAM){.op = 22, .at = {0}}, &t_22, DDR_22, &gs_22);  /* ld:%22 ld, step 0 */
    for (int32_t i0 = 0; i0 < 4; ++i0) {  /* Repeat x4 STAGEOC2NH */
        t_94.addr = spm_94[n_94++ % 2];
        cycles += op_dma_load(&(DMA_PARAM){.op = 94, .at = {i0}}, &t_94, DDR_94, &gs_94);  /* ld:%94 ld, steps 1..19 (4x) */
        for (int32_t i1 = 0; i1 < 2; ++i1) {  /* Repeat x2 STAGEIC2IC */
            t_92.addr = spm_92[n_92++];
            cycles += op_dma_load(&(DMA_PARAM){.op = 92, .at = {i0, i1}}, &t_92, DDR_92, &gs_92);  /* ld:%92 ld, steps 2..22 (8x) */
            t_93.addr = spm_93[n_93++];
            cycles += op_dma_load(&(DMA_PARAM){.op = 93, .at = {i0, i1}}, &t_93, DDR_93, &gs_93);  /* ld:%93 ld, steps 3..23 (8x) */
            t_21.addr = spm_21[n_21++];
            if (i1 == 0) t_21_psum.addr = spm_21_psum[n_21_psum++ % 2];
            cycles += op_matmul(&(MATMUL_PARAM){.op = 21, .at = {i0, i1}, .fmt = Fmt_FP16, .dim = 5, .slice = {1, 1, 2, 64, 16}, .psum_init = (i1 == 0), .psum_last = (i1 == 1), .batch = 1, .m = 2, .k = 16, .n = 64, .trans_a = 0, .trans_b = 0}, &t_92, &t_93, NULL, &t_21_psum, &t_21);  /* ne:%21 ne, steps 4..24 (8x) */
        }
        t_23.addr = spm_23[n_23++];
        cycles += op_mul(&(ELTWISE_PARAM){.op = 23, .at = {i0}, .fmt = Fmt_FP16, .dim = 4, .slice = {1, 1, 2, 64}, .psum_init = 1, .psum_last = 1}, &t_21, &t_22, NULL, NULL, &t_23);  /* ct:%23 ct, steps 7..25 (4x) */
        t_24.addr = spm_24[n_24++];
        t_24_imm.addr = spm_24_imm[n_24_imm++];
        cycles += op_softmax(&(NORM_PARAM){.op = 24, .at = {i0}, .fmt = Fmt_FP16, .dim = 4, .slice = {1, 1, 2, 64}, .psum_init = 1, .psum_last = 1, .axis = 3, .epsilon = 0.0f}, &t_23, &t_24_imm, NULL, &t_24);  /* ct:%24 ct, steps 8..26 (4x) */
        t_25.addr = spm_25[n_25++];
        cycles += op_matmul(&(MATMUL_PARAM){.op = 25, .at = {i0}, .fmt = Fmt_FP16, .dim = 5, .slice = {1, 1, 2, 32, 64}, .psum_init = 1, .psum_last = 1, .batch = 1, .m = 2, .k = 64, .n = 32, .trans_a = 0, .trans_b = 0}, &t_24, &t_94, NULL, NULL, &t_25);  /* ne:%25 ne, steps 9..27 (4x) */
        cycles += op_dma_store(&(DMA_PARAM){.op = 95, .at = {i0}}, &t_25, DDR_95, &gs_95);  /* st:%95 st, steps 10..28 (4x) */
    }
    return cycles;
}
