/* group %30: Conv2d, BatchNorm_Inference, Relu, MaxPool2d
 * tiles (0, 0) + 4x4; 3613 cycles simulated, plan 11850 (group-cost); SPM 3072 B allocated; multi_buffer 2; retract true
 * loops: no loop; 11 task instances in 11 steps
 * main() calls tsm_barrier() after it (opt-barrier need_barrier)
 */
static uint64_t group_30(int32_t tile_id) {
    uint64_t cycles = 0;
    if (!tsm_tile_in_region(tile_id, 0, 0, 4, 4)) return 0;
    L_SHAPE ls_37 = {{1, 8, 8, 3}, {0, 0, 0, 0}, {1, 8, 8, 3}, {1, 8, 8, 3}, 4};
    TSR t_37 = {Fmt_FP16, 0x000000, &ls_37};  /* %37 value of LoadVar: slice 1x8x8x3, 512 B */
    L_SHAPE ls_0 = {{8, 3, 3, 3}, {0, 0, 0, 0}, {1, 3, 3, 3}, {1, 3, 3, 3}, 4};
    TSR t_0 = {Fmt_FP16, 0x000200, &ls_0};  /* %0 value of LoadConst: slice 1x3x3x3, 256 B */
    L_SHAPE ls_2 = {{1, 1, 1, 8}, {0, 0, 0, 0}, {1, 1, 1, 1}, {1, 1, 1, 1}, 4};
    TSR t_2 = {Fmt_FP32, 0x000800, &ls_2};  /* %2 value of LoadConst: slice 1x1x1x1, 256 B */
    L_SHAPE ls_3 = {{1, 1, 1, 8}, {0, 0, 0, 0}, {1, 1, 1, 1}, {1, 1, 1, 1}, 4};
    TSR t_3 = {Fmt_FP32, 0x000900, &ls_3};  /* %3 value of LoadConst: slice 1x1x1x1, 256 B */
    L_SHAPE ls_4 = {{1, 1, 1, 8}, {0, 0, 0, 0}, {1, 1, 1, 1}, {1, 1, 1, 1}, 4};
    TSR t_4 = {Fmt_FP32, 0x000a00, &ls_4};  /* %4 value of LoadConst: slice 1x1x1x1, 256 B */
    L_SHAPE ls_5 = {{1, 1, 1, 8}, {0, 0, 0, 0}, {1, 1, 1, 1}, {1, 1, 1, 1}, 4};
    TSR t_5 = {Fmt_FP32, 0x000b00, &ls_5};  /* %5 value of LoadConst: slice 1x1x1x1, 256 B */
    L_SHAPE ls_1 = {{1, 8, 8, 8}, {0, 0, 0, 0}, {1, 8, 8, 1}, {1, 8, 8, 1}, 4};
    TSR t_1 = {Fmt_FP16, 0x000400, &ls_1};  /* %1 value of Conv2d: slice 1x8x8x1, 512 B */
    L_SHAPE ls_6 = {{1, 8, 8, 8}, {0, 0, 0, 0}, {1, 8, 8, 1}, {1, 8, 8, 1}, 4};
    TSR t_6 = {Fmt_FP16, 0x000600, &ls_6};  /* %6 value of BatchNorm_Inference: slice 1x8x8x1, 512 B */
    L_SHAPE ls_6_imm = {{1024}, {0}, {1024}, {1024}, 1};
    TSR t_6_imm = {Fmt_INT8, 0x000000, &ls_6_imm};  /* %6.imm imm of BatchNorm_Inference: slice 1024, 1024 B */
    L_SHAPE ls_7 = {{1, 8, 8, 8}, {0, 0, 0, 0}, {1, 8, 8, 1}, {1, 8, 8, 1}, 4};
    TSR t_7 = {Fmt_FP16, 0x000000, &ls_7};  /* %7 value of Relu: slice 1x8x8x1, 512 B, in place of %6 */
    L_SHAPE ls_8 = {{1, 4, 4, 8}, {0, 0, 0, 0}, {1, 4, 4, 1}, {1, 4, 4, 1}, 4};
    TSR t_8 = {Fmt_FP16, 0x000000, &ls_8};  /* %8 value of MaxPool2d: slice 1x4x4x1, 256 B */
    G_SHAPE gs_37 = {.spatial_start = {0, 0, 0, 0}, .spatial_end = {0, 7, 7, 2}, .shape = {1, 8, 8, 3}, .dim = 4, .done = 0};
    tsm_tile_window(&gs_37, (const int32_t[]){1, 1, 1, 1}, tile_id);
    G_SHAPE gs_0 = {.spatial_start = {0, 0, 0, 0}, .spatial_end = {7, 2, 2, 2}, .shape = {8, 3, 3, 3}, .dim = 4, .done = 0};
    tsm_tile_window(&gs_0, (const int32_t[]){8, 1, 1, 1}, tile_id);
    G_SHAPE gs_2 = {.spatial_start = {0, 0, 0, 0}, .spatial_end = {0, 0, 0, 7}, .shape = {1, 1, 1, 8}, .dim = 4, .done = 0};
    tsm_tile_window(&gs_2, (const int32_t[]){1, 1, 1, 8}, tile_id);
    G_SHAPE gs_3 = {.spatial_start = {0, 0, 0, 0}, .spatial_end = {0, 0, 0, 7}, .shape = {1, 1, 1, 8}, .dim = 4, .done = 0};
    tsm_tile_window(&gs_3, (const int32_t[]){1, 1, 1, 8}, tile_id);
    G_SHAPE gs_4 = {.spatial_start = {0, 0, 0, 0}, .spatial_end = {0, 0, 0, 7}, .shape = {1, 1, 1, 8}, .dim = 4, .done = 0};
    tsm_tile_window(&gs_4, (const int32_t[]){1, 1, 1, 8}, tile_id);
    G_SHAPE gs_5 = {.spatial_start = {0, 0, 0, 0}, .spatial_end = {0, 0, 0, 7}, .shape = {1, 1, 1, 8}, .dim = 4, .done = 0};
    tsm_tile_window(&gs_5, (const int32_t[]){1, 1, 1, 8}, tile_id);
    G_SHAPE gs_38 = {.spatial_start = {0, 0, 0, 0}, .spatial_end = {0, 3, 3, 7}, .shape = {1, 4, 4, 8}, .dim = 4, .done = 0};
    tsm_tile_window(&gs_38, (const int32_t[]){1, 1, 1, 8}, tile_id);
    cycles += op_dma_load(&(DMA_PARAM){.op = 37, .at = {0}}, &t_37, DDR_37, &gs_37);  /* ld:%37 ld, step 0 */
    cycles += op_dma_load_const(&(DMA_PARAM){.op = 0, .at = {0}}, &t_0, DDR_0, &gs_0);  /* ld:%0 ld, step 1 */
    cycles += op_dma_load_const(&(DMA_PARAM){.op = 2, .at = {0}}, &t_2, DDR_2, &gs_2);  /* ld:%2 ld, step 2 */
    cycles += op_dma_load_const(&(DMA_PARAM){.op = 3, .at = {0}}, &t_3, DDR_3, &gs_3);  /* ld:%3 ld, step 3 */
    cycles += op_dma_load_const(&(DMA_PARAM){.op = 4, .at = {0}}, &t_4, DDR_4, &gs_4);  /* ld:%4 ld, step 4 */
    cycles += op_dma_load_const(&(DMA_PARAM){.op = 5, .at = {0}}, &t_5, DDR_5, &gs_5);  /* ld:%5 ld, step 5 */
    cycles += op_conv2d(&(CONV2D_PARAM){.op = 1, .at = {0}, .fmt = Fmt_FP16, .dim = 5, .slice = {1, 8, 8, 1, 3}, .psum_init = 1, .psum_last = 1, .kernel = {3, 3}, .strides = {1, 1}, .pads = {1, 1, 1, 1}, .dilations = {1, 1}, .group = 1}, (TSR *[]){&t_37, &t_0}, 2, NULL, NULL, &t_1);  /* ne:%1 ne, step 6 */
    cycles += op_batchnorm_inference(&(BATCHNORM_INFER_PARAM){.op = 6, .at = {0}, .fmt = Fmt_FP16, .dim = 4, .slice = {1, 8, 8, 1}, .psum_init = 1, .psum_last = 1, .epsilon = 1e-06f}, &t_1, &t_2, &t_3, &t_4, &t_5, &t_6_imm, NULL, &t_6);  /* ct:%6 ct, step 7 */
    t_7.addr = t_6.addr;
    cycles += op_relu(&(UNARY_PARAM){.op = 7, .at = {0}, .fmt = Fmt_FP16, .dim = 4, .slice = {1, 8, 8, 1}, .psum_init = 1, .psum_last = 1}, &t_6, NULL, NULL, &t_7);  /* ct:%7 ct, step 8 */
    cycles += op_max_pool2d(&(POOL_PARAM){.op = 8, .at = {0}, .fmt = Fmt_FP16, .dim = 4, .slice = {1, 4, 4, 1}, .psum_init = 1, .psum_last = 1, .kernel = {2, 2}, .strides = {2, 2}, .pads = {0, 0, 0, 0}}, &t_7, NULL, NULL, &t_8);  /* ct:%8 ct, step 9 */
    cycles += op_dma_store(&(DMA_PARAM){.op = 38, .at = {0}}, &t_8, DDR_38, &gs_38);  /* st:%38 st, step 10 */
    return cycles;
}
