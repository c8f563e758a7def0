/* group %71: MatMul, Mul, Softmax, MatMul
 * tiles (0, 0) + 4x4; 39976 cycles (group-cost); SPM 8192 B allocated; multi_buffer 2; retract true
 * loops: Repeat x16 STAGEOC2NH; 99 task instances in 39 steps
 * main() calls tsm_barrier() after it (opt-barrier need_barrier)
 */
static const uint32_t spm_86[16] = {6400, 6400, 6656, 6656, 6656, 6656, 6656, 6656, 6656, 6656, 6656, 6656, 6656, 6656, 6656, 6656};  /* %86: SPM offsets, one per generation (16) */
static const uint32_t spm_21[16] = {6656, 6912, 7168, 6912, 7168, 6912, 7168, 6912, 7168, 6912, 7168, 6912, 7168, 6912, 7168, 6912};  /* %21: SPM offsets, one per generation (16) */
static const uint32_t spm_24[16] = {7680, 7936, 7936, 7936, 7936, 7936, 7936, 7936, 7936, 7936, 7936, 7936, 7936, 7936, 7936, 768};  /* %24: SPM offsets, one per generation (16) */
static const uint32_t spm_24_imm[16] = {7168, 7424, 7424, 7424, 7424, 7424, 7424, 7424, 7424, 7424, 7424, 7424, 7424, 7424, 7424, 256};  /* %24.imm: SPM offsets, one per generation (16) */
static const uint32_t spm_25[16] = {6400, 6400, 6400, 6400, 6400, 6400, 6400, 6400, 6400, 6400, 6400, 6400, 6400, 6400, 0, 0};  /* %25: SPM offsets, one per generation (16) */
static uint64_t group_71(int32_t tile_id) {
    uint64_t cycles = 0;
    if (!tsm_tile_in_region(tile_id, 0, 0, 4, 4)) return 0;
    L_SHAPE ls_87 = {{1, 2, 32, 64}, {0, 0, 0, 0}, {1, 1, 32, 64}, {1, 1, 32, 64}, 4};
    TSR t_87 = {Fmt_FP16, 0x000000, &ls_87};  /* %87 value of LoadVar: slice 1x1x32x64, 4096 B */
    L_SHAPE ls_88 = {{1, 2, 64, 32}, {0, 0, 0, 0}, {1, 1, 64, 16}, {1, 1, 64, 16}, 4};
    TSR t_88 = {Fmt_FP16, 0x001000, &ls_88};  /* %88 value of LoadVar: slice 1x1x64x16, 2048 B */
    L_SHAPE ls_22 = {{0}, {0}, {0}, {0}, 0};
    TSR t_22 = {Fmt_FP16, 0x001800, &ls_22};  /* %22 value of LoadConst: slice scalar, 256 B */
    int32_t n_86 = 0;
    L_SHAPE ls_86 = {{1, 2, 64, 32}, {0, 0, 0, 0}, {1, 1, 1, 32}, {1, 1, 1, 32}, 4};
    TSR t_86 = {Fmt_FP16, 0x000000, &ls_86};  /* %86 value of LoadVar: slice 1x1x1x32, 256 B, 16 addresses */
    int32_t n_21 = 0;
    L_SHAPE ls_21 = {{1, 2, 64, 64}, {0, 0, 0, 0}, {1, 1, 1, 64}, {1, 1, 1, 64}, 4};
    TSR t_21 = {Fmt_FP16, 0x000000, &ls_21};  /* %21 value of MatMul: slice 1x1x1x64, 256 B, 16 addresses */
    L_SHAPE ls_23 = {{1, 2, 64, 64}, {0, 0, 0, 0}, {1, 1, 1, 64}, {1, 1, 1, 64}, 4};
    TSR t_23 = {Fmt_FP16, 0x000000, &ls_23};  /* %23 value of Mul: slice 1x1x1x64, 256 B, in place of %21 */
    int32_t n_24 = 0;
    L_SHAPE ls_24 = {{1, 2, 64, 64}, {0, 0, 0, 0}, {1, 1, 1, 64}, {1, 1, 1, 64}, 4};
    TSR t_24 = {Fmt_FP16, 0x000000, &ls_24};  /* %24 value of Softmax: slice 1x1x1x64, 256 B, 16 addresses */
    int32_t n_24_imm = 0;
    L_SHAPE ls_24_imm = {{512}, {0}, {512}, {512}, 1};
    TSR t_24_imm = {Fmt_INT8, 0x000000, &ls_24_imm};  /* %24.imm imm of Softmax: slice 512, 512 B, 16 addresses */
    int32_t n_25 = 0;
    L_SHAPE ls_25 = {{1, 2, 64, 32}, {0, 0, 0, 0}, {1, 1, 1, 16}, {1, 1, 1, 16}, 4};
    TSR t_25 = {Fmt_FP16, 0x000000, &ls_25};  /* %25 value of MatMul: slice 1x1x1x16, 256 B, 16 addresses */
    G_SHAPE gs_86 = {.spatial_start = {0, 0, 0, 0}, .spatial_end = {0, 1, 63, 31}, .shape = {1, 2, 64, 32}, .dim = 4, .done = 0};
    tsm_tile_window(&gs_86, (const int32_t[]){1, 2, 4, 1}, tile_id);
    G_SHAPE gs_87 = {.spatial_start = {0, 0, 0, 0}, .spatial_end = {0, 1, 31, 63}, .shape = {1, 2, 32, 64}, .dim = 4, .done = 0};
    tsm_tile_window(&gs_87, (const int32_t[]){1, 2, 1, 1}, tile_id);
    G_SHAPE gs_88 = {.spatial_start = {0, 0, 0, 0}, .spatial_end = {0, 1, 63, 31}, .shape = {1, 2, 64, 32}, .dim = 4, .done = 0};
    tsm_tile_window(&gs_88, (const int32_t[]){1, 2, 1, 2}, tile_id);
    G_SHAPE gs_22 = {.spatial_start = {0}, .spatial_end = {0}, .shape = {0}, .dim = 0, .done = 0};
    tsm_tile_window(&gs_22, (const int32_t[]){0}, tile_id);
    G_SHAPE gs_89 = {.spatial_start = {0, 0, 0, 0}, .spatial_end = {0, 1, 63, 31}, .shape = {1, 2, 64, 32}, .dim = 4, .done = 0};
    tsm_tile_window(&gs_89, (const int32_t[]){1, 2, 4, 2}, tile_id);
    cycles += op_dma_load(&t_87, DDR_87, &gs_87);  /* ld:%87 ld, step 0 */
    cycles += op_dma_load(&t_88, DDR_88, &gs_88);  /* ld:%88 ld, step 1 */
    cycles += op_dma_load_const(&t_22, DDR_22, &gs_22);  /* ld:%22 ld, step 2 */
    for (int32_t i0 = 0; i0 < 16; ++i0) {  /* Repeat x16 STAGEOC2NH */
        t_86.addr = spm_86[n_86++];
        cycles += op_dma_load(&t_86, DDR_86, &gs_86);  /* ld:%86 ld, steps 3..33 (16x) */
        t_21.addr = spm_21[n_21++];
        cycles += op_matmul(&(MATMUL_PARAM){.fmt = Fmt_FP16, .dim = 5, .slice = {1, 1, 1, 64, 32}, .psum_init = 1, .psum_last = 1, .batch = 1, .m = 1, .k = 32, .n = 64, .trans_a = 0, .trans_b = 0}, &t_86, &t_87, NULL, NULL, &t_21);  /* ne:%21 ne, steps 4..34 (16x) */
        t_23.addr = t_21.addr;
        cycles += op_mul(&(ELTWISE_PARAM){.fmt = Fmt_FP16, .dim = 4, .slice = {1, 1, 1, 64}, .psum_init = 1, .psum_last = 1}, &t_21, &t_22, NULL, NULL, &t_23);  /* ct:%23 ct, steps 5..35 (16x) */
        t_24.addr = spm_24[n_24++];
        t_24_imm.addr = spm_24_imm[n_24_imm++];
        cycles += op_softmax(&(NORM_PARAM){.fmt = Fmt_FP16, .dim = 4, .slice = {1, 1, 1, 64}, .psum_init = 1, .psum_last = 1, .axis = 3, .epsilon = 0.0f}, &t_23, &t_24_imm, NULL, &t_24);  /* ct:%24 ct, steps 6..36 (16x) */
        t_25.addr = spm_25[n_25++];
        cycles += op_matmul(&(MATMUL_PARAM){.fmt = Fmt_FP16, .dim = 5, .slice = {1, 1, 1, 16, 64}, .psum_init = 1, .psum_last = 1, .batch = 1, .m = 1, .k = 64, .n = 16, .trans_a = 0, .trans_b = 0}, &t_24, &t_88, NULL, NULL, &t_25);  /* ne:%25 ne, steps 7..37 (16x) */
        cycles += op_dma_store(&t_25, DDR_89, &gs_89);  /* st:%89 st, steps 8..38 (16x) */
    }
    return cycles;
}
