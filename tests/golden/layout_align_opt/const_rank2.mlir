// RUN: tx8lab opt %s -p 'layout-align-opt' | filecheck %s
// ConstChannelNormErase does not fire: the Gemm weight has rank 2.
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<4x16xf16>):
    %2 = "tx8be.ChannelNorm"(%arg0) {dev_info = #tx8be.dev_info<imm_size = 0 : i64, mem_layout = #tx8be.layout_mode<NCx>, multi_buf_en = false, multi_buf_num = 1 : i64, out_shape_buf_idx = [], temporal_mem_slice = [], source_type = 0 : i64, imm_addr = 0 : i64, mem_addr = []>, direction = true, tx8.created_by = "layout-align-npu"} : (tensor<4x16xf16>) -> tensor<4x16xf16>
    %0 = "tx8be.Constant"() {dev_info = #tx8be.dev_info<imm_size = 0 : i64, mem_layout = #tx8be.layout_mode<NTensor>, multi_buf_en = false, multi_buf_num = 1 : i64, out_shape_buf_idx = [], temporal_mem_slice = [], source_type = 0 : i64, imm_addr = 0 : i64, mem_addr = []>, dtype = "f16", shape = array<i64: 16, 32>, value = #tx8be.random<seed = 1 : i64, distribution = "normal", scale = 0.17677669529663687 : f64, offset = 0.0 : f64>} : () -> tensor<16x32xf16>
    %3 = "tx8be.ChannelNorm"(%0) {dev_info = #tx8be.dev_info<imm_size = 0 : i64, mem_layout = #tx8be.layout_mode<NCx>, multi_buf_en = false, multi_buf_num = 1 : i64, out_shape_buf_idx = [], temporal_mem_slice = [], source_type = 0 : i64, imm_addr = 0 : i64, mem_addr = []>, direction = true, tx8.created_by = "layout-align-npu"} : (tensor<16x32xf16>) -> tensor<16x32xf16>
    %1 = "tx8be.Gemm"(%2, %3) {dev_info = #tx8be.dev_info<imm_size = 0 : i64, mem_layout = #tx8be.layout_mode<NCx>, multi_buf_en = false, multi_buf_num = 1 : i64, out_shape_buf_idx = [], temporal_mem_slice = [], source_type = 0 : i64, imm_addr = 0 : i64, mem_addr = []>} : (tensor<4x16xf16>, tensor<16x32xf16>) -> tensor<4x32xf16>
    %4 = "tx8be.ChannelNorm"(%1) {dev_info = #tx8be.dev_info<imm_size = 0 : i64, mem_layout = #tx8be.layout_mode<NTensor>, multi_buf_en = false, multi_buf_num = 1 : i64, out_shape_buf_idx = [], temporal_mem_slice = [], source_type = 0 : i64, imm_addr = 0 : i64, mem_addr = []>, direction = false, tx8.created_by = "layout-align-npu"} : (tensor<4x32xf16>) -> tensor<4x32xf16>
    "func.return"(%4) : (tensor<4x32xf16>) -> ()
  }) {function_type = (tensor<4x16xf16>) -> tensor<4x32xf16>, sym_name = "main"} : () -> ()
}) {tx8.next_id = 5 : i64} : () -> ()

// CHECK: %0 = "tx8be.Constant"() {dev_info = {{.*}}layout_mode<NTensor>
// CHECK: %3 = "tx8be.ChannelNorm"(%0) {dev_info = {{.*}}layout_mode<NCx>{{.*}}direction = true
// CHECK: %1 = "tx8be.Gemm"(%2, %3) {dev_info = {{.*}}layout_mode<NCx>
