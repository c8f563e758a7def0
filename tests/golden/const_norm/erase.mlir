// RUN: tx8lab opt %s -p 'const-norm' | filecheck %s
// constChannelNormErase: the conv weight's LoadConst has one user, a ChannelNorm to ALIGN.
// The Conv2d reads the LoadConst directly, which is stored NCx (its NTensor made aligned);
// the ChannelNorm goes. layout_str stays as it was.
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<1x4x4x8xf16>):
    %2 = "tx8be.ChannelNorm"(%arg0) {dev_info = #tx8be.dev_info<imm_size = 0 : i64, mem_layout = #tx8be.layout_mode<Cx>, multi_buf_en = false, multi_buf_num = 1 : i64, out_shape_buf_idx = [], temporal_mem_slice = [], source_type = 0 : i64, imm_addr = 0 : i64, mem_addr = []>, direction = true, tx8.created_by = "layout-align-npu"} : (tensor<1x4x4x8xf16>) -> tensor<1x4x4x8xf16>
    %0 = "tx8be.LoadConst"() {const_id = 0 : i64, dev_info = #tx8be.dev_info<imm_size = 0 : i64, mem_layout = #tx8be.layout_mode<NTensor>, multi_buf_en = false, multi_buf_num = 1 : i64, out_shape_buf_idx = [], temporal_mem_slice = [], source_type = 0 : i64, imm_addr = 0 : i64, mem_addr = []>, dtype = "f16", layout_str = "OHWI", shape = array<i64: 16, 1, 1, 8>, value = #tx8be.random<seed = 1 : i64, distribution = "normal", scale = 0.35355339059327373 : f64, offset = 0.0 : f64>} : () -> tensor<16x1x1x8xf16>
    %3 = "tx8be.ChannelNorm"(%0) {dev_info = #tx8be.dev_info<imm_size = 0 : i64, mem_layout = #tx8be.layout_mode<NCx>, multi_buf_en = false, multi_buf_num = 1 : i64, out_shape_buf_idx = [], temporal_mem_slice = [], source_type = 0 : i64, imm_addr = 0 : i64, mem_addr = []>, direction = true, layout_str = "OHWI-OHWI", tx8.created_by = "layout-align-npu"} : (tensor<16x1x1x8xf16>) -> tensor<16x1x1x8xf16>
    %1 = "tx8be.Conv2d"(%2, %3) {dev_info = #tx8be.dev_info<imm_size = 0 : i64, mem_layout = #tx8be.layout_mode<Cx>, multi_buf_en = false, multi_buf_num = 1 : i64, out_shape_buf_idx = [], temporal_mem_slice = [], source_type = 0 : i64, imm_addr = 0 : i64, mem_addr = []>, layout_str = "NHWC-OHWI-NHWC"} : (tensor<1x4x4x8xf16>, tensor<16x1x1x8xf16>) -> tensor<1x4x4x16xf16>
    %4 = "tx8be.ChannelNorm"(%1) {dev_info = #tx8be.dev_info<imm_size = 0 : i64, mem_layout = #tx8be.layout_mode<Tensor>, multi_buf_en = false, multi_buf_num = 1 : i64, out_shape_buf_idx = [], temporal_mem_slice = [], source_type = 0 : i64, imm_addr = 0 : i64, mem_addr = []>, direction = false, layout_str = "NHWC-NHWC", tx8.created_by = "layout-align-npu"} : (tensor<1x4x4x16xf16>) -> tensor<1x4x4x16xf16>
    "func.return"(%4) : (tensor<1x4x4x16xf16>) -> ()
  }) {function_type = (tensor<1x4x4x8xf16>) -> tensor<1x4x4x16xf16>, sym_name = "main"} : () -> ()
}) {tx8.const_threshold_bytes = 65536 : i64, tx8.next_id = 5 : i64} : () -> ()


// CHECK:      %0 = "tx8be.LoadConst"() {const_id = 0 : i64, dev_info = {{.*}}layout_mode<NCx>{{.*}}layout_str = "OHWI"
// CHECK-NOT:  ChannelNorm"(%0)
// CHECK-NEXT: %1 = "tx8be.Conv2d"(%2, %0)
