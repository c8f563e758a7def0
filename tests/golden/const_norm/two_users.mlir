// RUN: tx8lab opt %s -p 'const-norm' | filecheck %s
// Not the only user: the shared LoadConst (move-constant per_use=false) feeds a ChannelNorm
// and the Add, so the seed's users.size() == 1 fails and nothing changes.
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<16x16xf16>):
    %0 = "tx8be.ChannelNorm"(%arg0) {dev_info = #tx8be.dev_info<imm_size = 0 : i64, mem_layout = #tx8be.layout_mode<NCx>, multi_buf_en = false, multi_buf_num = 1 : i64, out_shape_buf_idx = [], temporal_mem_slice = [], source_type = 0 : i64, imm_addr = 0 : i64, mem_addr = []>, direction = true} : (tensor<16x16xf16>) -> tensor<16x16xf16>
    %1 = "tx8be.LoadConst"() {const_id = 0 : i64, dev_info = #tx8be.dev_info<imm_size = 0 : i64, mem_layout = #tx8be.layout_mode<NTensor>, multi_buf_en = false, multi_buf_num = 1 : i64, out_shape_buf_idx = [], temporal_mem_slice = [], source_type = 0 : i64, imm_addr = 0 : i64, mem_addr = []>, dtype = "f16", shape = array<i64: 16, 16>, value = #tx8be.random<seed = 1 : i64, distribution = "normal", scale = 0.25 : f64, offset = 0.0 : f64>} : () -> tensor<16x16xf16>
    %2 = "tx8be.ChannelNorm"(%1) {dev_info = #tx8be.dev_info<imm_size = 0 : i64, mem_layout = #tx8be.layout_mode<NCx>, multi_buf_en = false, multi_buf_num = 1 : i64, out_shape_buf_idx = [], temporal_mem_slice = [], source_type = 0 : i64, imm_addr = 0 : i64, mem_addr = []>, direction = true} : (tensor<16x16xf16>) -> tensor<16x16xf16>
    %3 = "tx8be.Gemm"(%0, %2) {dev_info = #tx8be.dev_info<imm_size = 0 : i64, mem_layout = #tx8be.layout_mode<NCx>, multi_buf_en = false, multi_buf_num = 1 : i64, out_shape_buf_idx = [], temporal_mem_slice = [], source_type = 0 : i64, imm_addr = 0 : i64, mem_addr = []>} : (tensor<16x16xf16>, tensor<16x16xf16>) -> tensor<16x16xf16>
    %4 = "tx8be.ChannelNorm"(%3) {dev_info = #tx8be.dev_info<imm_size = 0 : i64, mem_layout = #tx8be.layout_mode<NTensor>, multi_buf_en = false, multi_buf_num = 1 : i64, out_shape_buf_idx = [], temporal_mem_slice = [], source_type = 0 : i64, imm_addr = 0 : i64, mem_addr = []>, direction = false} : (tensor<16x16xf16>) -> tensor<16x16xf16>
    %5 = "tx8be.Add"(%4, %1) {dev_info = #tx8be.dev_info<imm_size = 0 : i64, mem_layout = #tx8be.layout_mode<NTensor>, multi_buf_en = false, multi_buf_num = 1 : i64, out_shape_buf_idx = [], temporal_mem_slice = [], source_type = 0 : i64, imm_addr = 0 : i64, mem_addr = []>} : (tensor<16x16xf16>, tensor<16x16xf16>) -> tensor<16x16xf16>
    "func.return"(%5) : (tensor<16x16xf16>) -> ()
  }) {function_type = (tensor<16x16xf16>) -> tensor<16x16xf16>, sym_name = "main"} : () -> ()
}) {tx8.next_id = 6 : i64} : () -> ()


// CHECK:      %1 = "tx8be.LoadConst"() {const_id = 0 : i64, dev_info = {{.*}}layout_mode<NTensor>
// CHECK-NEXT: %2 = "tx8be.ChannelNorm"(%1) {{.*}}direction = true
// CHECK-NEXT: %3 = "tx8be.Gemm"(%0, %2)
// CHECK:      %5 = "tx8be.Add"(%4, %1)
