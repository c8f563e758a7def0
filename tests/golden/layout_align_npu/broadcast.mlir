// RUN: tx8lab opt %s -p 'layout-align-npu{compare=false}' | filecheck %s
// Rule broadcast: a V_VS Mul follows its complete input (the Conv, ALIGN), not the [16]
// constant; the constant (rank 1: NALIGN) gets a ChannelNorm(true) that
// layout-align-opt would erase.
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<1x4x4x8xf16>):
    %0 = "tx8be.Constant"() {dtype = "f16", shape = array<i64: 16, 1, 1, 8>, value = #tx8be.random<seed = 1 : i64, distribution = "normal", scale = 0.35355339059327373 : f64, offset = 0.0 : f64>} : () -> tensor<16x1x1x8xf16>
    %1 = "tx8be.Conv2d"(%arg0, %0) : (tensor<1x4x4x8xf16>, tensor<16x1x1x8xf16>) -> tensor<1x4x4x16xf16>
    %2 = "tx8be.Constant"() {dtype = "f16", shape = array<i64: 16>, value = #tx8be.random<seed = 2 : i64, distribution = "normal", scale = 0.25 : f64, offset = 0.0 : f64>} : () -> tensor<16xf16>
    %3 = "tx8be.Mul"(%1, %2) : (tensor<1x4x4x16xf16>, tensor<16xf16>) -> tensor<1x4x4x16xf16>
    "func.return"(%3) : (tensor<1x4x4x16xf16>) -> ()
  }) {function_type = (tensor<1x4x4x8xf16>) -> tensor<1x4x4x16xf16>, sym_name = "main"} : () -> ()
}) {tx8.next_id = 4 : i64} : () -> ()

// CHECK: %4 = "tx8be.ChannelNorm"(%arg0) {dev_info = {{.*}}layout_mode<Cx>{{.*}}direction = true
// CHECK: %1 = "tx8be.Conv2d"(%4, %5) {dev_info = {{.*}}layout_mode<Cx>
// CHECK: %2 = "tx8be.Constant"() {dev_info = {{.*}}layout_mode<Tensor>
// CHECK: %6 = "tx8be.ChannelNorm"(%2) {dev_info = {{.*}}layout_mode<Cx>{{.*}}direction = true
// CHECK: %3 = "tx8be.Mul"(%1, %6) {dev_info = {{.*}}layout_mode<Cx>
// CHECK: %7 = "tx8be.ChannelNorm"(%3) {dev_info = {{.*}}layout_mode<Tensor>{{.*}}direction = false
