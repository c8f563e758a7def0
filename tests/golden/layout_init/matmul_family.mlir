// RUN: tx8lab opt %s -p 'layout-init' | filecheck %s
// MatMul and BatchMatMul run on the NE like Gemm, so layout-init fixes their layouts too.
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<2x3x8xf32>, %arg1: tensor<2x8x4xf32>, %arg2: tensor<8x4xf32>):
    %0 = "tx8be.BatchMatMul"(%arg0, %arg1) : (tensor<2x3x8xf32>, tensor<2x8x4xf32>) -> tensor<2x3x4xf32>
    %1 = "tx8be.MatMul"(%arg0, %arg2) : (tensor<2x3x8xf32>, tensor<8x4xf32>) -> tensor<2x3x4xf32>
    "func.return"(%0, %1) : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> ()
  }) {function_type = (tensor<2x3x8xf32>, tensor<2x8x4xf32>, tensor<8x4xf32>) -> (tensor<2x3x4xf32>, tensor<2x3x4xf32>), sym_name = "main"} : () -> ()
}) {tx8.next_id = 2 : i64} : () -> ()

// CHECK:      %0 = "tx8be.BatchMatMul"(%arg0, %arg1) {layout_str = "NTensor-NTensor-NTensor"}
// CHECK-NEXT: %1 = "tx8be.MatMul"(%arg0, %arg2) {layout_str = "NTensor-NTensor-NTensor"}
