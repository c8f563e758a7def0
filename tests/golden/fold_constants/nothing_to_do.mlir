// RUN: tx8lab opt %s -p 'fold-constants' | filecheck %s
// No op has only constant operands: the module comes back unchanged (same ids, same
// next_id; no Constant created by the pass).
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<2xf32>):
    %0 = "tx8be.Constant"() {value = dense<[1.0, 2.0]> : tensor<2xf32>} : () -> tensor<2xf32>
    %1 = "tx8be.Add"(%arg0, %0) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    %2 = "tx8be.Relu"(%1) : (tensor<2xf32>) -> tensor<2xf32>
    "func.return"(%2) : (tensor<2xf32>) -> ()
  }) {function_type = (tensor<2xf32>) -> tensor<2xf32>, sym_name = "main"} : () -> ()
}) : () -> ()

// CHECK:      %0 = "tx8be.Constant"()
// CHECK-NEXT: %1 = "tx8be.Add"(%arg0, %0)
// CHECK-NEXT: %2 = "tx8be.Relu"(%1)
// CHECK-NOT:  tx8.created_by
// CHECK:      tx8.next_id = 3
