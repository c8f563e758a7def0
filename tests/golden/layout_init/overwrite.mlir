// RUN: tx8lab opt %s -p 'layout-init' | filecheck %s
// Layouts already present are overwritten: the Gemm gets its own, the Relu goes back to
// Unknown (both decisions name the old value).
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<1x8xf32>, %arg1: tensor<8x8xf32>):
    %0 = "tx8be.Gemm"(%arg0, %arg1) {layout_str = "NTensor-NTensor-NTensor"} : (tensor<1x8xf32>, tensor<8x8xf32>) -> tensor<1x8xf32>
    %1 = "tx8be.Relu"(%0) {layout_str = "Tensor-Tensor"} : (tensor<1x8xf32>) -> tensor<1x8xf32>
    "func.return"(%1) : (tensor<1x8xf32>) -> ()
  }) {function_type = (tensor<1x8xf32>, tensor<8x8xf32>) -> tensor<1x8xf32>, sym_name = "main"} : () -> ()
}) {tx8.next_id = 2 : i64} : () -> ()

// CHECK:      %0 = "tx8be.Gemm"(%arg0, %arg1) {layout_str = "Tensor-NTensor-Tensor"}
// CHECK-NEXT: %1 = "tx8be.Relu"(%0) {layout_str = "Unknown"}
// CHECK-NOT:  NTensor-NTensor-NTensor
