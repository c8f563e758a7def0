// RUN: tx8lab opt %s -p 'layout-transmit' | filecheck %s
// No op has a known layout (no Gemm/Conv): everything is defaulted by shape, [1, 8] Tensor
// and [3, 8] NTensor.
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<1x8xf32>, %arg1: tensor<3x8xf32>):
    %0 = "tx8be.Relu"(%arg0) : (tensor<1x8xf32>) -> tensor<1x8xf32>
    %1 = "tx8be.Neg"(%arg1) : (tensor<3x8xf32>) -> tensor<3x8xf32>
    "func.return"(%0, %1) : (tensor<1x8xf32>, tensor<3x8xf32>) -> ()
  }) {function_type = (tensor<1x8xf32>, tensor<3x8xf32>) -> (tensor<1x8xf32>, tensor<3x8xf32>), sym_name = "main"} : () -> ()
}) {tx8.next_id = 2 : i64} : () -> ()

// CHECK:      %0 = "tx8be.Relu"(%arg0) {layout_str = "Tensor-Tensor"}
// CHECK-NEXT: %1 = "tx8be.Neg"(%arg1) {layout_str = "NTensor-NTensor"}
