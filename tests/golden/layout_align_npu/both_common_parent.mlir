// RUN: tx8lab opt %s -p 'layout-align-npu{compare=false}' | filecheck %s
// Rule both (parents agree): the Add of two Conv results (both ALIGN) is ALIGN;
// one ChannelNorm(false) before the output.
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<1x4x4x8xf16>):
    %0 = "tx8be.Constant"() {dtype = "f16", shape = array<i64: 8, 1, 1, 8>, value = #tx8be.random<seed = 1 : i64, distribution = "normal", scale = 0.35355339059327373 : f64, offset = 0.0 : f64>} : () -> tensor<8x1x1x8xf16>
    %1 = "tx8be.Conv2d"(%arg0, %0) : (tensor<1x4x4x8xf16>, tensor<8x1x1x8xf16>) -> tensor<1x4x4x8xf16>
    %2 = "tx8be.Constant"() {dtype = "f16", shape = array<i64: 8, 1, 1, 8>, value = #tx8be.random<seed = 2 : i64, distribution = "normal", scale = 0.35355339059327373 : f64, offset = 0.0 : f64>} : () -> tensor<8x1x1x8xf16>
    %3 = "tx8be.Conv2d"(%arg0, %2) : (tensor<1x4x4x8xf16>, tensor<8x1x1x8xf16>) -> tensor<1x4x4x8xf16>
    %4 = "tx8be.Add"(%1, %3) : (tensor<1x4x4x8xf16>, tensor<1x4x4x8xf16>) -> tensor<1x4x4x8xf16>
    "func.return"(%4) : (tensor<1x4x4x8xf16>) -> ()
  }) {function_type = (tensor<1x4x4x8xf16>) -> tensor<1x4x4x8xf16>, sym_name = "main"} : () -> ()
}) {tx8.next_id = 5 : i64} : () -> ()

// CHECK: %5 = "tx8be.ChannelNorm"(%arg0) {dev_info = {{.*}}layout_mode<Cx>{{.*}}direction = true
// CHECK: %1 = "tx8be.Conv2d"(%5, %6) {dev_info = {{.*}}layout_mode<Cx>
// CHECK: %3 = "tx8be.Conv2d"(%5, %7) {dev_info = {{.*}}layout_mode<Cx>
// CHECK: %4 = "tx8be.Add"(%1, %3) {dev_info = {{.*}}layout_mode<Cx>
// CHECK: %8 = "tx8be.ChannelNorm"(%4) {dev_info = {{.*}}layout_mode<Tensor>{{.*}}direction = false
// CHECK-NEXT: "func.return"(%8)
