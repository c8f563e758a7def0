// RUN: tx8lab opt %s -p 'const-norm{multi_use=false}' | filecheck %s
// processMultiUse off: the erase still makes %0 NCx, but %6 keeps NTensor, so the two
// LoadConsts of const id 0 disagree (and no ChannelNorm is needed for the Add).
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<16x16xf16>):
    %0 = "tx8be.LoadConst"() {const_id = 0 : i64, dev_info = #tx8be.dev_info<imm_size = 0 : i64, mem_layout = #tx8be.layout_mode<NTensor>, multi_buf_en = false, multi_buf_num = 1 : i64, out_shape_buf_idx = [], temporal_mem_slice = [], source_type = 0 : i64, imm_addr = 0 : i64, mem_addr = []>, dtype = "f16", layout_str = "NTensor", shape = array<i64: 16, 16>, value = #tx8be.random<seed = 1 : i64, distribution = "normal", scale = 0.25 : f64, offset = 0.0 : f64>} : () -> tensor<16x16xf16>
    %6 = "tx8be.LoadConst"() {const_id = 0 : i64, dev_info = #tx8be.dev_info<imm_size = 0 : i64, mem_layout = #tx8be.layout_mode<NTensor>, multi_buf_en = false, multi_buf_num = 1 : i64, out_shape_buf_idx = [], temporal_mem_slice = [], source_type = 0 : i64, imm_addr = 0 : i64, mem_addr = []>, dtype = "f16", layout_str = "NTensor", shape = array<i64: 16, 16>, tx8.created_by = "move-constant", value = #tx8be.random<seed = 1 : i64, distribution = "normal", scale = 0.25 : f64, offset = 0.0 : f64>} : () -> tensor<16x16xf16>
    %3 = "tx8be.ChannelNorm"(%0) {dev_info = #tx8be.dev_info<imm_size = 0 : i64, mem_layout = #tx8be.layout_mode<NCx>, multi_buf_en = false, multi_buf_num = 1 : i64, out_shape_buf_idx = [], temporal_mem_slice = [], source_type = 0 : i64, imm_addr = 0 : i64, mem_addr = []>, direction = true, layout_str = "NTensor-NTensor", tx8.created_by = "layout-align-npu"} : (tensor<16x16xf16>) -> tensor<16x16xf16>
    %1 = "tx8be.Add"(%arg0, %6) {dev_info = #tx8be.dev_info<imm_size = 0 : i64, mem_layout = #tx8be.layout_mode<NTensor>, multi_buf_en = false, multi_buf_num = 1 : i64, out_shape_buf_idx = [], temporal_mem_slice = [], source_type = 0 : i64, imm_addr = 0 : i64, mem_addr = []>, layout_str = "NTensor-NTensor-NTensor"} : (tensor<16x16xf16>, tensor<16x16xf16>) -> tensor<16x16xf16>
    %4 = "tx8be.ChannelNorm"(%1) {dev_info = #tx8be.dev_info<imm_size = 0 : i64, mem_layout = #tx8be.layout_mode<NCx>, multi_buf_en = false, multi_buf_num = 1 : i64, out_shape_buf_idx = [], temporal_mem_slice = [], source_type = 0 : i64, imm_addr = 0 : i64, mem_addr = []>, direction = true, layout_str = "NTensor-NTensor", tx8.created_by = "layout-align-npu"} : (tensor<16x16xf16>) -> tensor<16x16xf16>
    %2 = "tx8be.Gemm"(%4, %3) {dev_info = #tx8be.dev_info<imm_size = 0 : i64, mem_layout = #tx8be.layout_mode<NCx>, multi_buf_en = false, multi_buf_num = 1 : i64, out_shape_buf_idx = [], temporal_mem_slice = [], source_type = 0 : i64, imm_addr = 0 : i64, mem_addr = []>, layout_str = "NTensor-NTensor-NTensor"} : (tensor<16x16xf16>, tensor<16x16xf16>) -> tensor<16x16xf16>
    %5 = "tx8be.ChannelNorm"(%2) {dev_info = #tx8be.dev_info<imm_size = 0 : i64, mem_layout = #tx8be.layout_mode<NTensor>, multi_buf_en = false, multi_buf_num = 1 : i64, out_shape_buf_idx = [], temporal_mem_slice = [], source_type = 0 : i64, imm_addr = 0 : i64, mem_addr = []>, direction = false, layout_str = "NTensor-NTensor", tx8.created_by = "layout-align-npu"} : (tensor<16x16xf16>) -> tensor<16x16xf16>
    "func.return"(%5) : (tensor<16x16xf16>) -> ()
  }) {function_type = (tensor<16x16xf16>) -> tensor<16x16xf16>, sym_name = "main"} : () -> ()
}) {tx8.const_threshold_bytes = 65536 : i64, tx8.next_id = 7 : i64} : () -> ()


// CHECK:      %0 = "tx8be.LoadConst"() {const_id = 0 : i64, dev_info = {{.*}}layout_mode<NCx>
// CHECK-NEXT: %6 = "tx8be.LoadConst"() {const_id = 0 : i64, dev_info = {{.*}}layout_mode<NTensor>
// CHECK-NEXT: %1 = "tx8be.Add"(%arg0, %6)
// CHECK:      %2 = "tx8be.Gemm"(%4, %0)
