// RUN: tx8lab opt %s -p 'layout-align-npu{compare=false}' | filecheck %s
// Rule odd_rank: a Relu with a rank-3 output is NALIGN even after an ALIGN Gemm, so it reads
// a ChannelNorm(false); the rank-2 Relu before the Gemm follows the argument (NALIGN).
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<4x16xf16>):
    %0 = "tx8be.Constant"() {dtype = "f16", shape = array<i64: 16, 32>, value = #tx8be.random<seed = 1 : i64, distribution = "normal", scale = 0.17677669529663687 : f64, offset = 0.0 : f64>} : () -> tensor<16x32xf16>
    %1 = "tx8be.Relu"(%arg0) : (tensor<4x16xf16>) -> tensor<4x16xf16>
    %2 = "tx8be.Gemm"(%1, %0) : (tensor<4x16xf16>, tensor<16x32xf16>) -> tensor<4x32xf16>
    %3 = "tx8be.Reshape"(%2) {shape = array<i64: 1, 4, 32>} : (tensor<4x32xf16>) -> tensor<1x4x32xf16>
    %4 = "tx8be.Relu"(%3) : (tensor<1x4x32xf16>) -> tensor<1x4x32xf16>
    "func.return"(%4) : (tensor<1x4x32xf16>) -> ()
  }) {function_type = (tensor<4x16xf16>) -> tensor<1x4x32xf16>, sym_name = "main"} : () -> ()
}) {tx8.next_id = 5 : i64} : () -> ()

// CHECK: %0 = "tx8be.Constant"() {dev_info = {{.*}}layout_mode<NTensor>
// CHECK: %5 = "tx8be.ChannelNorm"(%0) {dev_info = {{.*}}layout_mode<NCx>{{.*}}direction = true
// CHECK: %1 = "tx8be.Relu"(%arg0) {dev_info = {{.*}}layout_mode<NTensor>
// CHECK: %6 = "tx8be.ChannelNorm"(%1) {dev_info = {{.*}}layout_mode<NCx>{{.*}}direction = true
// CHECK: %2 = "tx8be.Gemm"(%6, %5) {dev_info = {{.*}}layout_mode<NCx>
// CHECK: %7 = "tx8be.ChannelNorm"(%2) {dev_info = {{.*}}layout_mode<NTensor>{{.*}}direction = false
// CHECK: %3 = "tx8be.Reshape"(%7) {dev_info = {{.*}}layout_mode<Tensor>
// CHECK: %4 = "tx8be.Relu"(%3) {dev_info = {{.*}}layout_mode<Tensor>
// CHECK-NEXT: "func.return"(%4)
