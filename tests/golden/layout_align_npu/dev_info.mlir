// RUN: tx8lab opt %s -p 'layout-align-npu{compare=false}' | filecheck %s
// Rule dev_info: a Relu (BOTH) whose dev_info says Cx is fixed ALIGN; the NALIGN argument
// gets a ChannelNorm(true) before it, and the Abs that follows it needs one (false)
// before the output.
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<1x4x4x8xf16>):
    %0 = "tx8be.Relu"(%arg0) {dev_info = #tx8be.dev_info<imm_size = 0 : i64, mem_layout = #tx8be.layout_mode<Cx>, multi_buf_en = false, multi_buf_num = 1 : i64, out_shape_buf_idx = [], temporal_mem_slice = [], source_type = 0 : i64, imm_addr = 0 : i64, mem_addr = []>} : (tensor<1x4x4x8xf16>) -> tensor<1x4x4x8xf16>
    %1 = "tx8be.Abs"(%0) : (tensor<1x4x4x8xf16>) -> tensor<1x4x4x8xf16>
    "func.return"(%1) : (tensor<1x4x4x8xf16>) -> ()
  }) {function_type = (tensor<1x4x4x8xf16>) -> tensor<1x4x4x8xf16>, sym_name = "main"} : () -> ()
}) {tx8.next_id = 2 : i64} : () -> ()

// CHECK: %2 = "tx8be.ChannelNorm"(%arg0) {dev_info = {{.*}}layout_mode<Cx>{{.*}}direction = true
// CHECK: %0 = "tx8be.Relu"(%2) {dev_info = {{.*}}layout_mode<Cx>
// CHECK: %1 = "tx8be.Abs"(%0) {dev_info = {{.*}}layout_mode<Cx>
// CHECK: %3 = "tx8be.ChannelNorm"(%1) {dev_info = {{.*}}layout_mode<Tensor>{{.*}}direction = false
// CHECK-NEXT: "func.return"(%3)
