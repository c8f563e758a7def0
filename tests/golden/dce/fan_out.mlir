// RUN: tx8lab opt %s -p 'dce' | filecheck %s
// %0 fans out to a dead Relu and a live Abs: %0 stays, only the Relu goes.
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<2x2xf32>):
    %0 = "tx8be.Neg"(%arg0) : (tensor<2x2xf32>) -> tensor<2x2xf32>
    %1 = "tx8be.Relu"(%0) : (tensor<2x2xf32>) -> tensor<2x2xf32>
    %2 = "tx8be.Abs"(%0) : (tensor<2x2xf32>) -> tensor<2x2xf32>
    %3 = "tx8be.Mul"(%0, %2) : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
    "func.return"(%3) : (tensor<2x2xf32>) -> ()
  }) {function_type = (tensor<2x2xf32>) -> tensor<2x2xf32>, sym_name = "main"} : () -> ()
}) : () -> ()

// CHECK:      %0 = "tx8be.Neg"(%arg0)
// CHECK-NEXT: %2 = "tx8be.Abs"(%0)
// CHECK-NEXT: %3 = "tx8be.Mul"(%0, %2)
// CHECK-NEXT: "func.return"(%3)
// CHECK-NOT:  tx8be.Relu
