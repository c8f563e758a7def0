// RUN: tx8lab opt %s -p 'layout-align-npu{compare=false}' | filecheck %s
// Rule odd_rank, reading "view" (the default): seed 000 says an output of rank 1 or 3 can
// only be NALIGN because Cx needs rank 2 or 4, and lists MatMul (Gemm) as ALIGN only. A
// [1,8,32] @ [32,16] MatMul runs as a frontend emits it: Reshape x to [1,1,8,32] (compact,
// no byte moves) -> ChannelNorm(true) -> MatMul on the rank-4 view (ALIGN, Cx) ->
// ChannelNorm(false) -> Reshape back to [1,8,16] (NALIGN). No rank-3 value is Cx.
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<1x8x32xf16>):
    %0 = "tx8be.Constant"() {dtype = "f16", shape = array<i64: 32, 16>, value = #tx8be.random<seed = 1 : i64, distribution = "normal", scale = 0.25 : f64, offset = 0.0 : f64>} : () -> tensor<32x16xf16>
    %1 = "tx8be.MatMul"(%arg0, %0) : (tensor<1x8x32xf16>, tensor<32x16xf16>) -> tensor<1x8x16xf16>
    "func.return"(%1) : (tensor<1x8x16xf16>) -> ()
  }) {function_type = (tensor<1x8x32xf16>) -> tensor<1x8x16xf16>, sym_name = "main"} : () -> ()
}) {tx8.next_id = 2 : i64} : () -> ()


// CHECK: %0 = "tx8be.Constant"() {dev_info = {{.*}}layout_mode<NTensor>
// CHECK: %4 = "tx8be.ChannelNorm"(%0) {dev_info = {{.*}}layout_mode<NCx>{{.*}}direction = true
// CHECK: %2 = "tx8be.Reshape"(%arg0) {dev_info = {{.*}}layout_mode<Tensor>{{.*}}shape = array<i64: 1, 1, 8, 32>
// CHECK: %5 = "tx8be.ChannelNorm"(%2) {dev_info = {{.*}}layout_mode<Cx>{{.*}}direction = true
// CHECK: %1 = "tx8be.MatMul"(%5, %4) {dev_info = {{.*}}layout_mode<Cx>{{.*}} -> tensor<1x1x8x16xf16>
// CHECK: %6 = "tx8be.ChannelNorm"(%1) {dev_info = {{.*}}layout_mode<Tensor>{{.*}}direction = false
// CHECK: %3 = "tx8be.Reshape"(%6) {dev_info = {{.*}}layout_mode<Tensor>{{.*}} -> tensor<1x8x16xf16>
// CHECK-NEXT: "func.return"(%3)
