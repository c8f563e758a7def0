// RUN: tx8lab opt %s -p 'layout-init' | filecheck %s
// Conv2d: NHWC features, OHWI weight ([Cout, KH, KW, Cin/group], as ops/conv.py computes),
// the rank-1 bias Tensor, NHWC output.
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<1x4x4x3xf32>, %arg1: tensor<8x3x3x3xf32>, %arg2: tensor<8xf32>):
    %0 = "tx8be.Conv2d"(%arg0, %arg1, %arg2) {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x4x4x3xf32>, tensor<8x3x3x3xf32>, tensor<8xf32>) -> tensor<1x4x4x8xf32>
    "func.return"(%0) : (tensor<1x4x4x8xf32>) -> ()
  }) {function_type = (tensor<1x4x4x3xf32>, tensor<8x3x3x3xf32>, tensor<8xf32>) -> tensor<1x4x4x8xf32>, sym_name = "main"} : () -> ()
}) {tx8.next_id = 1 : i64} : () -> ()

// CHECK: %0 = "tx8be.Conv2d"(%arg0, %arg1, %arg2) {layout_str = "NHWC-OHWI-Tensor-NHWC", pads = array<i64: 1, 1, 1, 1>}
