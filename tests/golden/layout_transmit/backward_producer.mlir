// RUN: tx8lab opt %s -p 'layout-transmit' | filecheck %s
// Backward: the Conv's operands fix their producers: the Sigmoid becomes NHWC-NHWC and the
// weight Constant OHWI.
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<1x4x4x4xf32>):
    %0 = "tx8be.Constant"() {dtype = "f32", value = dense<"0x0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F"> : tensor<2x1x1x4xf32>} : () -> tensor<2x1x1x4xf32>
    %1 = "tx8be.Sigmoid"(%arg0) : (tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
    %2 = "tx8be.Conv2d"(%1, %0) {layout_str = "NHWC-OHWI-NHWC"} : (tensor<1x4x4x4xf32>, tensor<2x1x1x4xf32>) -> tensor<1x4x4x2xf32>
    "func.return"(%2) : (tensor<1x4x4x2xf32>) -> ()
  }) {function_type = (tensor<1x4x4x4xf32>) -> tensor<1x4x4x2xf32>, sym_name = "main"} : () -> ()
}) {tx8.next_id = 3 : i64} : () -> ()

// CHECK:      %0 = "tx8be.Constant"() {dtype = "f32", layout_str = "OHWI"
// CHECK-NEXT: %1 = "tx8be.Sigmoid"(%arg0) {layout_str = "NHWC-NHWC"}
// CHECK-NEXT: %2 = "tx8be.Conv2d"(%1, %0) {layout_str = "NHWC-OHWI-NHWC"}
