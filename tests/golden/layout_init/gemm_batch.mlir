// RUN: tx8lab opt %s -p 'layout-init' | filecheck %s
// A Gemm on a batch of rows ([4, 8], dim 0 not 1): every part is NTensor; trans_b does not
// change the names (B is still a plain [N, K] tensor).
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<4x8xf32>, %arg1: tensor<4x8xf32>):
    %0 = "tx8be.Gemm"(%arg0, %arg1) {trans_b = true} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x4xf32>
    "func.return"(%0) : (tensor<4x4xf32>) -> ()
  }) {function_type = (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x4xf32>, sym_name = "main"} : () -> ()
}) {tx8.next_id = 1 : i64} : () -> ()

// CHECK: %0 = "tx8be.Gemm"(%arg0, %arg1) {layout_str = "NTensor-NTensor-NTensor", trans_b = true}
