// RUN: tx8lab opt %s -p 'layout-transmit' | filecheck %s
// Two users of one function argument reach each other through it: the Relu reads %arg0,
// which the Conv made NHWC.
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<1x4x4x8xf32>, %arg1: tensor<8x1x1x8xf32>):
    %0 = "tx8be.Conv2d"(%arg0, %arg1) {layout_str = "NHWC-OHWI-NHWC"} : (tensor<1x4x4x8xf32>, tensor<8x1x1x8xf32>) -> tensor<1x4x4x8xf32>
    %1 = "tx8be.Relu"(%arg0) : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
    "func.return"(%0, %1) : (tensor<1x4x4x8xf32>, tensor<1x4x4x8xf32>) -> ()
  }) {function_type = (tensor<1x4x4x8xf32>, tensor<8x1x1x8xf32>) -> (tensor<1x4x4x8xf32>, tensor<1x4x4x8xf32>), sym_name = "main"} : () -> ()
}) {tx8.next_id = 2 : i64} : () -> ()

// CHECK: %1 = "tx8be.Relu"(%arg0) {layout_str = "NHWC-NHWC"}
