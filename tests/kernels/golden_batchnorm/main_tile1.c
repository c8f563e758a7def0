/* main.c for tx8be.BatchNorm_Inference %0 on tile 1 (seed 001 load -> compute -> store)
 * input 4x112x2x129 f16 NCx, sharding (1, 1, 1, 2), split (4, 2, 1, 1)
 * slice 1x56x2x64 (temporalSliceShape), 8 iterations, channels [65, 129)
 * SPM: imm 28672 bytes = 2 x sizeof(input 14336)
 */
#include "tx8be_oplib.h"

static L_SHAPE in_shape = {{4, 112, 2, 129}, {0, 0, 0, 65}, {1, 56, 2, 64}, {1, 56, 2, 64}, 4};
static L_SHAPE param_shape = {{1, 1, 1, 129}, {0, 0, 0, 65}, {1, 1, 1, 64}, {1, 1, 1, 64}, 4};
static G_SHAPE in_g = {.spatial_start = {0, 0, 0, 65}, .spatial_end = {3, 111, 1, 128}, .shape = {4, 112, 2, 129}, .dim = 4, .done = 0};
static G_SHAPE param_g = {.spatial_start = {0, 0, 0, 65}, .spatial_end = {0, 0, 0, 128}, .shape = {1, 1, 1, 129}, .dim = 4, .done = 0};
static G_SHAPE out_g;

int main(void) {
    TSR input = {Fmt_FP16, 0x00000, &in_shape};
    TSR scale = {Fmt_FP32, 0x03800, &param_shape};
    TSR shift = {Fmt_FP32, 0x03900, &param_shape};
    TSR mean = {Fmt_FP32, 0x03a00, &param_shape};
    TSR varience = {Fmt_FP32, 0x03b00, &param_shape};
    TSR imm = {Fmt_FP32, 0x03c00, &in_shape};
    TSR out = {Fmt_FP16, 0x0ac00, &in_shape};
    BATCHNORM_INFER_PARAM param = {.epsilon = 1e-06f};
    uint64_t cycles = 0;
    int32_t input_done = 0;
    while (!input_done) {  /* 8 slices; op_dma_load advances in_shape.shape_start */
        // load
        cycles += op_dma_load(&input, &in_g);
        input_done = in_g.done;
        cycles += op_dma_load(&scale, &param_g);
        cycles += op_dma_load(&shift, &param_g);
        cycles += op_dma_load(&mean, &param_g);
        cycles += op_dma_load(&varience, &param_g);  /* again: rsqrt overwrote it */
        // compute
        cycles += op_batchnorm_inference(&param, &input, &scale, &shift, &mean, &varience, &imm, &out);
        // store
        cycles += op_store_var_ncx(&out, &out_g);
    }
    return 0;
}
