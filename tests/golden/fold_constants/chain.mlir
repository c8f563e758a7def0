// RUN: tx8lab opt %s -p 'fold-constants' | filecheck %s
// Neg(c) then Add(Neg(c), d): both fold in one walk, each into a Constant with a fresh id
// created by the pass, at the place of the op it replaces. -[1, 2] + [0.5, 0.25] =
// [-0.5, -1.75]. The source constants stay, unused (dce removes them).
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<2xf32>):
    %0 = "tx8be.Constant"() {value = dense<[1.0, 2.0]> : tensor<2xf32>} : () -> tensor<2xf32>
    %1 = "tx8be.Constant"() {value = dense<[0.5, 0.25]> : tensor<2xf32>} : () -> tensor<2xf32>
    %2 = "tx8be.Neg"(%0) : (tensor<2xf32>) -> tensor<2xf32>
    %3 = "tx8be.Add"(%2, %1) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    %4 = "tx8be.Mul"(%arg0, %3) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    "func.return"(%4) : (tensor<2xf32>) -> ()
  }) {function_type = (tensor<2xf32>) -> tensor<2xf32>, sym_name = "main"} : () -> ()
}) : () -> ()

// CHECK:      %0 = "tx8be.Constant"()
// CHECK-NEXT: %1 = "tx8be.Constant"()
// CHECK-NEXT: %5 = "tx8be.Constant"() {dtype = "f32", tx8.created_by = "fold-constants", value = dense<"0x000080BF000000C0"> : tensor<2xf32>}
// CHECK-NEXT: %6 = "tx8be.Constant"() {dtype = "f32", tx8.created_by = "fold-constants", value = dense<"0x000000BF0000E0BF"> : tensor<2xf32>}
// CHECK-NEXT: %4 = "tx8be.Mul"(%arg0, %6)
// CHECK-NOT:  tx8be.Neg
// CHECK-NOT:  tx8be.Add
// CHECK:      tx8.next_id = 7
