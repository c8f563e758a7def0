// RUN: tx8lab opt %s -p 'layout-transmit' | filecheck %s
// Reshape stops the spread (seed: "遇到无法推导的节点 (如 Reshape, BroadCast) 则终止推导"):
// it keeps the NHWC its input got from the Conv, its output is defaulted ([2, 128]:
// NTensor), and so is the Relu after it, which no Gemm/Conv layout reaches.
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<2x4x4x8xf32>, %arg1: tensor<8x1x1x8xf32>):
    %0 = "tx8be.Conv2d"(%arg0, %arg1) {layout_str = "NHWC-OHWI-NHWC"} : (tensor<2x4x4x8xf32>, tensor<8x1x1x8xf32>) -> tensor<2x4x4x8xf32>
    %1 = "tx8be.Reshape"(%0) {shape = array<i64: 2, 128>} : (tensor<2x4x4x8xf32>) -> tensor<2x128xf32>
    %2 = "tx8be.Relu"(%1) : (tensor<2x128xf32>) -> tensor<2x128xf32>
    "func.return"(%2) : (tensor<2x128xf32>) -> ()
  }) {function_type = (tensor<2x4x4x8xf32>, tensor<8x1x1x8xf32>) -> tensor<2x128xf32>, sym_name = "main"} : () -> ()
}) {tx8.next_id = 3 : i64} : () -> ()

// CHECK:      %1 = "tx8be.Reshape"(%0) {layout_str = "NHWC-NTensor"
// CHECK-NEXT: %2 = "tx8be.Relu"(%1) {layout_str = "NTensor-NTensor"}
