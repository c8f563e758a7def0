// RUN: tx8lab opt %s -p 'fold-constants' | filecheck %s
// %0 is shared: its Transpose folds, its use by the Add (with a function input) cannot,
// so %0 keeps that user. i32 data: Transpose of [[1, 2, 3], [4, 5, 6]].
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<2x3xi32>):
    %0 = "tx8be.Constant"() {value = dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi32>} : () -> tensor<2x3xi32>
    %1 = "tx8be.Transpose"(%0) {perm = array<i64: 1, 0>} : (tensor<2x3xi32>) -> tensor<3x2xi32>
    %2 = "tx8be.Add"(%arg0, %0) : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi32>
    "func.return"(%1, %2) : (tensor<3x2xi32>, tensor<2x3xi32>) -> ()
  }) {function_type = (tensor<2x3xi32>) -> (tensor<3x2xi32>, tensor<2x3xi32>), sym_name = "main"} : () -> ()
}) : () -> ()

// CHECK:      %0 = "tx8be.Constant"()
// CHECK-NEXT: %3 = "tx8be.Constant"() {dtype = "i32", tx8.created_by = "fold-constants", value = dense<"0x010000000400000002000000050000000300000006000000"> : tensor<3x2xi32>}
// CHECK-NEXT: %2 = "tx8be.Add"(%arg0, %0)
// CHECK-NEXT: "func.return"(%3, %2)
