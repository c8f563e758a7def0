// RUN: tx8lab opt %s -p 'fold-constants' | filecheck %s
// A group body is folded on its own: the Neg of the constant defined inside the group
// folds; the constant outside is not visible inside (the body is isolated from above),
// so the Mul of two block arguments stays.
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<2xf32>):
    %0 = "tx8be.Constant"() {value = dense<[2.0, 4.0]> : tensor<2xf32>} : () -> tensor<2xf32>
    %1 = "tx8be.Group"(%arg0, %0) ({
    ^bb0(%b1_0_0: tensor<2xf32>, %b1_0_1: tensor<2xf32>):
      %2 = "tx8be.Constant"() {value = dense<[1.0, 3.0]> : tensor<2xf32>} : () -> tensor<2xf32>
      %3 = "tx8be.Neg"(%2) : (tensor<2xf32>) -> tensor<2xf32>
      %4 = "tx8be.Mul"(%b1_0_1, %b1_0_1) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
      %5 = "tx8be.Add"(%b1_0_0, %3) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
      %6 = "tx8be.Add"(%5, %4) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
      "tx8be.Return"(%6) : (tensor<2xf32>) -> ()
    }) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    "func.return"(%1) : (tensor<2xf32>) -> ()
  }) {function_type = (tensor<2xf32>) -> tensor<2xf32>, sym_name = "main"} : () -> ()
}) : () -> ()

// CHECK:      %2 = "tx8be.Constant"()
// CHECK-NEXT: %7 = "tx8be.Constant"() {dtype = "f32", tx8.created_by = "fold-constants", value = dense<"0x000080BF000040C0"> : tensor<2xf32>}
// CHECK-NEXT: %4 = "tx8be.Mul"(%b1_0_1, %b1_0_1)
// CHECK-NEXT: %5 = "tx8be.Add"(%b1_0_0, %7)
