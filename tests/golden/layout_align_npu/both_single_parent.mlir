// RUN: tx8lab opt %s -p 'layout-align-npu{compare=false}' | filecheck %s
// Rule both (one parent): Relu and Sigmoid follow the Conv (ALIGN), so the only
// ChannelNorms are at the argument, the weight and the output.
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<1x4x4x8xf16>):
    %0 = "tx8be.Constant"() {dtype = "f16", shape = array<i64: 8, 1, 1, 8>, value = #tx8be.random<seed = 1 : i64, distribution = "normal", scale = 0.35355339059327373 : f64, offset = 0.0 : f64>} : () -> tensor<8x1x1x8xf16>
    %1 = "tx8be.Conv2d"(%arg0, %0) : (tensor<1x4x4x8xf16>, tensor<8x1x1x8xf16>) -> tensor<1x4x4x8xf16>
    %2 = "tx8be.Relu"(%1) : (tensor<1x4x4x8xf16>) -> tensor<1x4x4x8xf16>
    %3 = "tx8be.Sigmoid"(%2) : (tensor<1x4x4x8xf16>) -> tensor<1x4x4x8xf16>
    "func.return"(%3) : (tensor<1x4x4x8xf16>) -> ()
  }) {function_type = (tensor<1x4x4x8xf16>) -> tensor<1x4x4x8xf16>, sym_name = "main"} : () -> ()
}) {tx8.next_id = 4 : i64} : () -> ()

// CHECK: %1 = "tx8be.Conv2d"(%4, %5) {dev_info = {{.*}}layout_mode<Cx>
// CHECK: %2 = "tx8be.Relu"(%1) {dev_info = {{.*}}layout_mode<Cx>
// CHECK: %3 = "tx8be.Sigmoid"(%2) {dev_info = {{.*}}layout_mode<Cx>
// CHECK: %6 = "tx8be.ChannelNorm"(%3) {dev_info = {{.*}}layout_mode<Tensor>{{.*}}direction = false
// CHECK-NEXT: "func.return"(%6)
