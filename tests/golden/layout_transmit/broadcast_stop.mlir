// RUN: tx8lab opt %s -p 'layout-transmit' | filecheck %s
// Broadcast stops the spread backward: its output is NHWC (the Conv reads it), its input and
// the Neg before it are defaulted by shape ([1, 1, 1, 8]: Tensor).
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<1x1x1x8xf32>, %arg1: tensor<8x1x1x8xf32>):
    %0 = "tx8be.Neg"(%arg0) : (tensor<1x1x1x8xf32>) -> tensor<1x1x1x8xf32>
    %1 = "tx8be.Broadcast"(%0) {shape = array<i64: 1, 4, 4, 8>} : (tensor<1x1x1x8xf32>) -> tensor<1x4x4x8xf32>
    %2 = "tx8be.Conv2d"(%1, %arg1) {layout_str = "NHWC-OHWI-NHWC"} : (tensor<1x4x4x8xf32>, tensor<8x1x1x8xf32>) -> tensor<1x4x4x8xf32>
    "func.return"(%2) : (tensor<1x4x4x8xf32>) -> ()
  }) {function_type = (tensor<1x1x1x8xf32>, tensor<8x1x1x8xf32>) -> tensor<1x4x4x8xf32>, sym_name = "main"} : () -> ()
}) {tx8.next_id = 3 : i64} : () -> ()

// CHECK:      %0 = "tx8be.Neg"(%arg0) {layout_str = "Tensor-Tensor"}
// CHECK-NEXT: %1 = "tx8be.Broadcast"(%0) {layout_str = "Tensor-NHWC"
