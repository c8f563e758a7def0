// RUN: tx8lab opt %s -p 'layout-transmit' | filecheck %s
// Transpose permutes a dimension-named layout: NHWC with perm (0, 3, 1, 2) is NCHW, which
// the Abs after it carries on.
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<1x4x4x8xf32>, %arg1: tensor<8x1x1x8xf32>):
    %0 = "tx8be.Conv2d"(%arg0, %arg1) {layout_str = "NHWC-OHWI-NHWC"} : (tensor<1x4x4x8xf32>, tensor<8x1x1x8xf32>) -> tensor<1x4x4x8xf32>
    %1 = "tx8be.Transpose"(%0) {perm = array<i64: 0, 3, 1, 2>} : (tensor<1x4x4x8xf32>) -> tensor<1x8x4x4xf32>
    %2 = "tx8be.Abs"(%1) : (tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
    "func.return"(%2) : (tensor<1x8x4x4xf32>) -> ()
  }) {function_type = (tensor<1x4x4x8xf32>, tensor<8x1x1x8xf32>) -> tensor<1x8x4x4xf32>, sym_name = "main"} : () -> ()
}) {tx8.next_id = 3 : i64} : () -> ()

// CHECK:      %1 = "tx8be.Transpose"(%0) {layout_str = "NHWC-NCHW", perm = array<i64: 0, 3, 1, 2>}
// CHECK-NEXT: %2 = "tx8be.Abs"(%1) {layout_str = "NCHW-NCHW"}
