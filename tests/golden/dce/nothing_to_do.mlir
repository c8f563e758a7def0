// RUN: tx8lab opt %s -p 'dce' | filecheck %s
// Every op feeds the output: DCE returns its input unchanged.
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<2x3xf32>):
    %0 = "tx8be.Neg"(%arg0) : (tensor<2x3xf32>) -> tensor<2x3xf32>
    %1 = "tx8be.Relu"(%0) : (tensor<2x3xf32>) -> tensor<2x3xf32>
    %2 = "tx8be.Add"(%0, %1) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    "func.return"(%2) : (tensor<2x3xf32>) -> ()
  }) {function_type = (tensor<2x3xf32>) -> tensor<2x3xf32>, sym_name = "main"} : () -> ()
}) : () -> ()

// CHECK:      %0 = "tx8be.Neg"(%arg0)
// CHECK-NEXT: %1 = "tx8be.Relu"(%0)
// CHECK-NEXT: %2 = "tx8be.Add"(%0, %1)
// CHECK-NEXT: "func.return"(%2)
// CHECK:      tx8.next_id = 3
