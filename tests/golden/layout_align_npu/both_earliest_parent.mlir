// RUN: tx8lab opt %s -p 'layout-align-npu{compare=false}' | filecheck %s
// Rule both (parents disagree): the Add's parents are the argument (NALIGN, earliest) and a
// Conv (ALIGN); it takes the earliest parent's color, so the Conv's result is converted.
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<1x4x4x8xf16>):
    %0 = "tx8be.Constant"() {dtype = "f16", shape = array<i64: 8, 1, 1, 8>, value = #tx8be.random<seed = 1 : i64, distribution = "normal", scale = 0.35355339059327373 : f64, offset = 0.0 : f64>} : () -> tensor<8x1x1x8xf16>
    %1 = "tx8be.Conv2d"(%arg0, %0) : (tensor<1x4x4x8xf16>, tensor<8x1x1x8xf16>) -> tensor<1x4x4x8xf16>
    %2 = "tx8be.Add"(%arg0, %1) : (tensor<1x4x4x8xf16>, tensor<1x4x4x8xf16>) -> tensor<1x4x4x8xf16>
    "func.return"(%2) : (tensor<1x4x4x8xf16>) -> ()
  }) {function_type = (tensor<1x4x4x8xf16>) -> tensor<1x4x4x8xf16>, sym_name = "main"} : () -> ()
}) {tx8.next_id = 3 : i64} : () -> ()

// CHECK: %1 = "tx8be.Conv2d"(%3, %4) {dev_info = {{.*}}layout_mode<Cx>
// CHECK: %5 = "tx8be.ChannelNorm"(%1) {dev_info = {{.*}}layout_mode<Tensor>{{.*}}direction = false
// CHECK: %2 = "tx8be.Add"(%arg0, %5) {dev_info = {{.*}}layout_mode<Tensor>
// CHECK-NEXT: "func.return"(%2)
