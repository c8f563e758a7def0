// RUN: tx8lab opt %s -p 'layout-align-opt' | filecheck %s
// ConstChannelNormErase: the rank-1 scale's only user is a ChannelNorm(true), so the Mul
// reads the constant, now stored Cx, and the ChannelNorm goes. The weight (rank 4) keeps its.
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<1x4x4x8xf16>):
    %4 = "tx8be.ChannelNorm"(%arg0) {dev_info = #tx8be.dev_info<imm_size = 0 : i64, mem_layout = #tx8be.layout_mode<Cx>, multi_buf_en = false, multi_buf_num = 1 : i64, out_shape_buf_idx = [], temporal_mem_slice = [], source_type = 0 : i64, imm_addr = 0 : i64, mem_addr = []>, direction = true, tx8.created_by = "layout-align-npu"} : (tensor<1x4x4x8xf16>) -> tensor<1x4x4x8xf16>
    %0 = "tx8be.Constant"() {dev_info = #tx8be.dev_info<imm_size = 0 : i64, mem_layout = #tx8be.layout_mode<NTensor>, multi_buf_en = false, multi_buf_num = 1 : i64, out_shape_buf_idx = [], temporal_mem_slice = [], source_type = 0 : i64, imm_addr = 0 : i64, mem_addr = []>, dtype = "f16", shape = array<i64: 16, 1, 1, 8>, value = #tx8be.random<seed = 1 : i64, distribution = "normal", scale = 0.35355339059327373 : f64, offset = 0.0 : f64>} : () -> tensor<16x1x1x8xf16>
    %5 = "tx8be.ChannelNorm"(%0) {dev_info = #tx8be.dev_info<imm_size = 0 : i64, mem_layout = #tx8be.layout_mode<NCx>, multi_buf_en = false, multi_buf_num = 1 : i64, out_shape_buf_idx = [], temporal_mem_slice = [], source_type = 0 : i64, imm_addr = 0 : i64, mem_addr = []>, direction = true, tx8.created_by = "layout-align-npu"} : (tensor<16x1x1x8xf16>) -> tensor<16x1x1x8xf16>
    %1 = "tx8be.Conv2d"(%4, %5) {dev_info = #tx8be.dev_info<imm_size = 0 : i64, mem_layout = #tx8be.layout_mode<Cx>, multi_buf_en = false, multi_buf_num = 1 : i64, out_shape_buf_idx = [], temporal_mem_slice = [], source_type = 0 : i64, imm_addr = 0 : i64, mem_addr = []>} : (tensor<1x4x4x8xf16>, tensor<16x1x1x8xf16>) -> tensor<1x4x4x16xf16>
    %2 = "tx8be.Constant"() {dev_info = #tx8be.dev_info<imm_size = 0 : i64, mem_layout = #tx8be.layout_mode<Tensor>, multi_buf_en = false, multi_buf_num = 1 : i64, out_shape_buf_idx = [], temporal_mem_slice = [], source_type = 0 : i64, imm_addr = 0 : i64, mem_addr = []>, dtype = "f16", shape = array<i64: 16>, value = #tx8be.random<seed = 2 : i64, distribution = "normal", scale = 0.25 : f64, offset = 0.0 : f64>} : () -> tensor<16xf16>
    %6 = "tx8be.ChannelNorm"(%2) {dev_info = #tx8be.dev_info<imm_size = 0 : i64, mem_layout = #tx8be.layout_mode<Cx>, multi_buf_en = false, multi_buf_num = 1 : i64, out_shape_buf_idx = [], temporal_mem_slice = [], source_type = 0 : i64, imm_addr = 0 : i64, mem_addr = []>, direction = true, tx8.created_by = "layout-align-npu"} : (tensor<16xf16>) -> tensor<16xf16>
    %3 = "tx8be.Mul"(%1, %6) {dev_info = #tx8be.dev_info<imm_size = 0 : i64, mem_layout = #tx8be.layout_mode<Cx>, multi_buf_en = false, multi_buf_num = 1 : i64, out_shape_buf_idx = [], temporal_mem_slice = [], source_type = 0 : i64, imm_addr = 0 : i64, mem_addr = []>} : (tensor<1x4x4x16xf16>, tensor<16xf16>) -> tensor<1x4x4x16xf16>
    %7 = "tx8be.ChannelNorm"(%3) {dev_info = #tx8be.dev_info<imm_size = 0 : i64, mem_layout = #tx8be.layout_mode<Tensor>, multi_buf_en = false, multi_buf_num = 1 : i64, out_shape_buf_idx = [], temporal_mem_slice = [], source_type = 0 : i64, imm_addr = 0 : i64, mem_addr = []>, direction = false, tx8.created_by = "layout-align-npu"} : (tensor<1x4x4x16xf16>) -> tensor<1x4x4x16xf16>
    "func.return"(%7) : (tensor<1x4x4x16xf16>) -> ()
  }) {function_type = (tensor<1x4x4x8xf16>) -> tensor<1x4x4x16xf16>, sym_name = "main"} : () -> ()
}) {tx8.next_id = 8 : i64} : () -> ()

// CHECK: %5 = "tx8be.ChannelNorm"(%0) {dev_info = {{.*}}layout_mode<NCx>{{.*}}direction = true
// CHECK: %1 = "tx8be.Conv2d"(%4, %5) {dev_info = {{.*}}layout_mode<Cx>
// CHECK: %2 = "tx8be.Constant"() {dev_info = {{.*}}layout_mode<Cx>
// CHECK-NOT: ChannelNorm"(%2)
// CHECK: %3 = "tx8be.Mul"(%1, %2) {dev_info = {{.*}}layout_mode<Cx>
// CHECK: %7 = "tx8be.ChannelNorm"(%3) {dev_info = {{.*}}layout_mode<Tensor>{{.*}}direction = false
