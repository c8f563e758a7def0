// RUN: tx8lab opt %s -p 'layout-transmit' | filecheck %s
// Tensor and NTensor are one family, re-derived from each tensor's shape: the Add keeps the
// Gemm's NTensor, its rank-1 bias is defaulted (Tensor), and the Split along dim 0 gives a
// [1, 6] Tensor and a [3, 6] NTensor.
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<4x8xf32>, %arg1: tensor<8x6xf32>, %arg2: tensor<6xf32>):
    %0 = "tx8be.Gemm"(%arg0, %arg1) {layout_str = "NTensor-NTensor-NTensor"} : (tensor<4x8xf32>, tensor<8x6xf32>) -> tensor<4x6xf32>
    %1 = "tx8be.Add"(%0, %arg2) : (tensor<4x6xf32>, tensor<6xf32>) -> tensor<4x6xf32>
    %2:2 = "tx8be.Split"(%1) {axis = 0 : i64, sizes = array<i64: 1, 3>} : (tensor<4x6xf32>) -> (tensor<1x6xf32>, tensor<3x6xf32>)
    "func.return"(%2#0, %2#1) : (tensor<1x6xf32>, tensor<3x6xf32>) -> ()
  }) {function_type = (tensor<4x8xf32>, tensor<8x6xf32>, tensor<6xf32>) -> (tensor<1x6xf32>, tensor<3x6xf32>), sym_name = "main"} : () -> ()
}) {tx8.next_id = 3 : i64} : () -> ()

// CHECK:      %1 = "tx8be.Add"(%0, %arg2) {layout_str = "NTensor-Tensor-NTensor"}
// CHECK-NEXT: %2:2 = "tx8be.Split"(%1) {axis = 0 : i64, layout_str = "NTensor-Tensor-NTensor"
