// RUN: tx8lab opt %s -p 'dce' | filecheck %s
// StoreVar writes DDR: it stays although its result is unused, and so does the Relu that
// feeds it. The LoadVar only reads, so the unused one goes.
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<8xf16>):
    %0 = "tx8be.LoadVar"(%arg0) : (tensor<8xf16>) -> tensor<8xf16>
    %1 = "tx8be.Relu"(%arg0) : (tensor<8xf16>) -> tensor<8xf16>
    %2 = "tx8be.StoreVar"(%1) : (tensor<8xf16>) -> tensor<8xf16>
    %3 = "tx8be.Neg"(%arg0) : (tensor<8xf16>) -> tensor<8xf16>
    "func.return"(%3) : (tensor<8xf16>) -> ()
  }) {function_type = (tensor<8xf16>) -> tensor<8xf16>, sym_name = "main"} : () -> ()
}) : () -> ()

// CHECK:      ^bb0(%arg0: tensor<8xf16>):
// CHECK-NEXT:   %1 = "tx8be.Relu"(%arg0)
// CHECK-NEXT:   %2 = "tx8be.StoreVar"(%1)
// CHECK-NEXT:   %3 = "tx8be.Neg"(%arg0)
// CHECK-NOT:  tx8be.LoadVar
