// RUN: tx8lab opt %s -p 'layout-transmit' | filecheck %s
// The Add infers NHWC from its first operand, which implies NHWC for %1 too; but the MatMul
// already made %1 Tensor, so Tensor stays (first wins) and a conflict decision names both.
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<1x4x4x8xf32>, %arg1: tensor<8x1x1x8xf32>, %arg2: tensor<1x4x4x2xf32>, %arg3: tensor<2x8xf32>):
    %0 = "tx8be.Conv2d"(%arg0, %arg1) {layout_str = "NHWC-OHWI-NHWC"} : (tensor<1x4x4x8xf32>, tensor<8x1x1x8xf32>) -> tensor<1x4x4x8xf32>
    %1 = "tx8be.MatMul"(%arg2, %arg3) {layout_str = "Tensor-NTensor-Tensor"} : (tensor<1x4x4x2xf32>, tensor<2x8xf32>) -> tensor<1x4x4x8xf32>
    %2 = "tx8be.Add"(%0, %1) : (tensor<1x4x4x8xf32>, tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
    "func.return"(%2) : (tensor<1x4x4x8xf32>) -> ()
  }) {function_type = (tensor<1x4x4x8xf32>, tensor<8x1x1x8xf32>, tensor<1x4x4x2xf32>, tensor<2x8xf32>) -> tensor<1x4x4x8xf32>, sym_name = "main"} : () -> ()
}) {tx8.next_id = 3 : i64} : () -> ()

// CHECK:      %1 = "tx8be.MatMul"(%arg2, %arg3) {layout_str = "Tensor-NTensor-Tensor"}
// CHECK-NEXT: %2 = "tx8be.Add"(%0, %1) {layout_str = "NHWC-Tensor-NHWC"}
