// RUN: tx8lab opt %s -p 'fold-constants' | filecheck %s
// The folded Neg %1 has three users; all three now read the new Constant %4, and the
// Relu of it folds as well.
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<2xf16>):
    %0 = "tx8be.Constant"() {value = dense<[1.0, -2.0]> : tensor<2xf16>} : () -> tensor<2xf16>
    %1 = "tx8be.Neg"(%0) : (tensor<2xf16>) -> tensor<2xf16>
    %2 = "tx8be.Add"(%arg0, %1) : (tensor<2xf16>, tensor<2xf16>) -> tensor<2xf16>
    %3 = "tx8be.Mul"(%1, %2) : (tensor<2xf16>, tensor<2xf16>) -> tensor<2xf16>
    %5 = "tx8be.Relu"(%1) : (tensor<2xf16>) -> tensor<2xf16>
    %6 = "tx8be.Sub"(%3, %5) : (tensor<2xf16>, tensor<2xf16>) -> tensor<2xf16>
    "func.return"(%6) : (tensor<2xf16>) -> ()
  }) {function_type = (tensor<2xf16>) -> tensor<2xf16>, sym_name = "main"} : () -> ()
}) : () -> ()

// CHECK:      %0 = "tx8be.Constant"()
// CHECK-NEXT: %[[NEG:[0-9]+]] = "tx8be.Constant"() {dtype = "f16", tx8.created_by = "fold-constants", value = dense<"0x00BC0040"> : tensor<2xf16>}
// CHECK-NEXT: %2 = "tx8be.Add"(%arg0, %[[NEG]])
// CHECK-NEXT: %3 = "tx8be.Mul"(%[[NEG]], %2)
// CHECK-NEXT: %[[RELU:[0-9]+]] = "tx8be.Constant"() {dtype = "f16", tx8.created_by = "fold-constants", value = dense<"0x00000040"> : tensor<2xf16>}
// CHECK-NEXT: %6 = "tx8be.Sub"(%3, %[[RELU]])
