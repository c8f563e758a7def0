// RUN: tx8lab opt %s -p 'layout-init' | filecheck %s
// A Gemm gets one layout per operand, then its result's, each Tensor or NTensor by its dim 0:
// A [1, 8] and C [1, 4] are Tensor, B [8, 4] (dim 0 = K = 8) NTensor. Every other op is set
// to Unknown explicitly, for layout-transmit to infer.
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<1x8xf32>, %arg1: tensor<8x4xf32>, %arg2: tensor<1x4xf32>):
    %0 = "tx8be.Gemm"(%arg0, %arg1, %arg2) : (tensor<1x8xf32>, tensor<8x4xf32>, tensor<1x4xf32>) -> tensor<1x4xf32>
    %1 = "tx8be.Relu"(%0) : (tensor<1x4xf32>) -> tensor<1x4xf32>
    "func.return"(%1) : (tensor<1x4xf32>) -> ()
  }) {function_type = (tensor<1x8xf32>, tensor<8x4xf32>, tensor<1x4xf32>) -> tensor<1x4xf32>, sym_name = "main"} : () -> ()
}) {tx8.next_id = 2 : i64} : () -> ()

// CHECK:      %0 = "tx8be.Gemm"(%arg0, %arg1, %arg2) {layout_str = "Tensor-NTensor-Tensor-Tensor"}
// CHECK-NEXT: %1 = "tx8be.Relu"(%0) {layout_str = "Unknown"}
