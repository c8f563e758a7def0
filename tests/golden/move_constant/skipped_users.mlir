// RUN: tx8lab opt %s -p 'move-constant' | filecheck %s
// Uses with no say: a constant only returned, and one only packed into a Tuple, are skipped
// users (the seed skips TupleOp), so nothing loads them: bypasscodegen. A constant with no use
// gets no LoadConst and no id (the seed erases it after making none).
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<4xf32>):
    %0 = "tx8be.Constant"() {dtype = "f32", value = dense<"0x0000803F0000803F0000803F0000803F"> : tensor<4xf32>} : () -> tensor<4xf32>
    %1 = "tx8be.Constant"() {dtype = "f32", value = dense<"0x000000000000803F0000004000004040"> : tensor<4xf32>} : () -> tensor<4xf32>
    %2 = "tx8be.Constant"() {dtype = "f32", value = dense<"0x00000040000000400000004000000040"> : tensor<4xf32>} : () -> tensor<4xf32>
    %3:2 = "tx8be.Tuple"(%2, %arg0) : (tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
    %4 = "tx8be.Relu"(%3#1) : (tensor<4xf32>) -> tensor<4xf32>
    "func.return"(%4, %1, %3#0) : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> ()
  }) {function_type = (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>), sym_name = "main"} : () -> ()
}) {tx8.next_id = 5 : i64} : () -> ()


// CHECK-NOT:  %0 =
// CHECK:      %1 = "tx8be.LoadConst"() {bypasscodegen = true, const_id = 0 : i64
// CHECK-NEXT: %2 = "tx8be.LoadConst"() {bypasscodegen = true, const_id = 1 : i64
// CHECK-NEXT: %3:2 = "tx8be.Tuple"(%2, %arg0)
// CHECK:      "func.return"(%4, %1, %3#0)
