// RUN: tx8lab opt %s -p 'move-constant' | filecheck %s
// LoadConsts already in the input are renumbered with the rest: %0 and %1 share id 7 (one
// constant, id 0 now), %2 has no id yet (its own constant, id 1), the Constant %3 comes
// last (id 2). Running move-constant again changes nothing.
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<1x4xf32>):
    %0 = "tx8be.LoadConst"() {const_id = 7 : i64, dtype = "f32", value = dense<"0x000000000000803F0000004000004040"> : tensor<4xf32>} : () -> tensor<4xf32>
    %1 = "tx8be.LoadConst"() {const_id = 7 : i64, dtype = "f32", value = dense<"0x000000000000803F0000004000004040"> : tensor<4xf32>} : () -> tensor<4xf32>
    %2 = "tx8be.LoadConst"() {dtype = "f32", value = dense<"0x0000803F0000803F0000803F0000803F"> : tensor<4xf32>} : () -> tensor<4xf32>
    %3 = "tx8be.Constant"() {dtype = "f32", value = dense<"0x00000040000000400000004000000040"> : tensor<4xf32>} : () -> tensor<4xf32>
    %4 = "tx8be.Add"(%arg0, %0) : (tensor<1x4xf32>, tensor<4xf32>) -> tensor<1x4xf32>
    %5 = "tx8be.Mul"(%4, %1) : (tensor<1x4xf32>, tensor<4xf32>) -> tensor<1x4xf32>
    %6 = "tx8be.Sub"(%5, %2) : (tensor<1x4xf32>, tensor<4xf32>) -> tensor<1x4xf32>
    %7 = "tx8be.Add"(%6, %3) : (tensor<1x4xf32>, tensor<4xf32>) -> tensor<1x4xf32>
    "func.return"(%7) : (tensor<1x4xf32>) -> ()
  }) {function_type = (tensor<1x4xf32>) -> tensor<1x4xf32>, sym_name = "main"} : () -> ()
}) {tx8.next_id = 8 : i64} : () -> ()

// CHECK:      %0 = "tx8be.LoadConst"() {const_id = 0 : i64
// CHECK-NEXT: %1 = "tx8be.LoadConst"() {const_id = 0 : i64
// CHECK-NEXT: %2 = "tx8be.LoadConst"() {const_id = 1 : i64
// CHECK-NEXT: %3 = "tx8be.LoadConst"() {const_id = 2 : i64
// CHECK-NOT:  tx8be.Constant"
