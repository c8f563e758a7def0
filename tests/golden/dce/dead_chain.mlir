// RUN: tx8lab opt %s -p 'dce' | filecheck %s
// %1 has no user; %0's only user is %1, so both go (one backward walk).
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<4xf16>):
    %0 = "tx8be.Neg"(%arg0) : (tensor<4xf16>) -> tensor<4xf16>
    %1 = "tx8be.Relu"(%0) : (tensor<4xf16>) -> tensor<4xf16>
    %2 = "tx8be.Abs"(%arg0) : (tensor<4xf16>) -> tensor<4xf16>
    "func.return"(%2) : (tensor<4xf16>) -> ()
  }) {function_type = (tensor<4xf16>) -> tensor<4xf16>, sym_name = "main"} : () -> ()
}) : () -> ()

// CHECK:     ^bb0(%arg0: tensor<4xf16>):
// CHECK-NEXT:  %2 = "tx8be.Abs"(%arg0)
// CHECK-NEXT:  "func.return"(%2)
// CHECK-NOT: tx8be.Neg
// CHECK-NOT: tx8be.Relu
// CHECK:     tx8.next_id = 3
