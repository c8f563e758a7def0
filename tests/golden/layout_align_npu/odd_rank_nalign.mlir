// RUN: tx8lab opt %s -p 'layout-align-npu{compare=false odd_rank=nalign}' | filecheck %s
// Rule odd_rank, reading "nalign": seed 000's "an output of rank 1 or 3 can only be NALIGN"
// read literally, before the ALIGN-only list: the [1,8,32] @ [32,16] MatMul is NALIGN and
// reads x and the weight as they are; no ChannelNorm, no Reshape.
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<1x8x32xf16>):
    %0 = "tx8be.Constant"() {dtype = "f16", shape = array<i64: 32, 16>, value = #tx8be.random<seed = 1 : i64, distribution = "normal", scale = 0.25 : f64, offset = 0.0 : f64>} : () -> tensor<32x16xf16>
    %1 = "tx8be.MatMul"(%arg0, %0) : (tensor<1x8x32xf16>, tensor<32x16xf16>) -> tensor<1x8x16xf16>
    "func.return"(%1) : (tensor<1x8x16xf16>) -> ()
  }) {function_type = (tensor<1x8x32xf16>) -> tensor<1x8x16xf16>, sym_name = "main"} : () -> ()
}) {tx8.next_id = 2 : i64} : () -> ()


// CHECK: %0 = "tx8be.Constant"() {dev_info = {{.*}}layout_mode<NTensor>
// CHECK-NOT: ChannelNorm
// CHECK: %1 = "tx8be.MatMul"(%arg0, %0) {dev_info = {{.*}}layout_mode<Tensor>
// CHECK-NEXT: "func.return"(%1)
