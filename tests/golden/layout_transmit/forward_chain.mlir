// RUN: tx8lab opt %s -p 'layout-transmit' | filecheck %s
// Forward: the Conv's NHWC output flows through the Relu and the MaxPool (pools keep NHWC).
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<1x8x8x4xf32>, %arg1: tensor<8x3x3x4xf32>):
    %0 = "tx8be.Conv2d"(%arg0, %arg1) {layout_str = "NHWC-OHWI-NHWC", pads = array<i64: 1, 1, 1, 1>} : (tensor<1x8x8x4xf32>, tensor<8x3x3x4xf32>) -> tensor<1x8x8x8xf32>
    %1 = "tx8be.Relu"(%0) : (tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32>
    %2 = "tx8be.MaxPool2d"(%1) {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x8x8x8xf32>) -> tensor<1x4x4x8xf32>
    "func.return"(%2) : (tensor<1x4x4x8xf32>) -> ()
  }) {function_type = (tensor<1x8x8x4xf32>, tensor<8x3x3x4xf32>) -> tensor<1x4x4x8xf32>, sym_name = "main"} : () -> ()
}) {tx8.next_id = 3 : i64} : () -> ()

// CHECK:      %0 = "tx8be.Conv2d"(%arg0, %arg1) {layout_str = "NHWC-OHWI-NHWC"
// CHECK-NEXT: %1 = "tx8be.Relu"(%0) {layout_str = "NHWC-NHWC"}
// CHECK-NEXT: %2 = "tx8be.MaxPool2d"(%1) {kernel = array<i64: 2, 2>, layout_str = "NHWC-NHWC"
