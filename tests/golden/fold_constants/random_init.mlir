// RUN: tx8lab opt %s -p 'fold-constants' | filecheck %s
// RandomInit weights are seeds, not bytes: neither the Transpose of one nor the Add of a
// weight and a dense constant is folded (each gets a "kept" decision).
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<3x2xf16>):
    %0 = "tx8be.Constant"() {dtype = "f16", shape = array<i64: 2, 3>, value = #tx8be.random<seed = 3 : i64, distribution = "normal", scale = 1.0 : f64, offset = 0.0 : f64>} : () -> tensor<2x3xf16>
    %1 = "tx8be.Constant"() {value = dense<[1.0, 2.0, 3.0]> : tensor<3xf16>} : () -> tensor<3xf16>
    %2 = "tx8be.Add"(%0, %1) : (tensor<2x3xf16>, tensor<3xf16>) -> tensor<2x3xf16>
    %3 = "tx8be.Transpose"(%2) {perm = array<i64: 1, 0>} : (tensor<2x3xf16>) -> tensor<3x2xf16>
    %4 = "tx8be.Transpose"(%0) {perm = array<i64: 1, 0>} : (tensor<2x3xf16>) -> tensor<3x2xf16>
    %5 = "tx8be.Add"(%3, %4) : (tensor<3x2xf16>, tensor<3x2xf16>) -> tensor<3x2xf16>
    %6 = "tx8be.Mul"(%arg0, %5) : (tensor<3x2xf16>, tensor<3x2xf16>) -> tensor<3x2xf16>
    "func.return"(%6) : (tensor<3x2xf16>) -> ()
  }) {function_type = (tensor<3x2xf16>) -> tensor<3x2xf16>, sym_name = "main"} : () -> ()
}) : () -> ()

// CHECK:      %0 = "tx8be.Constant"() {{.*}}value = #tx8be.random<seed = 3
// CHECK-NEXT: %1 = "tx8be.Constant"()
// CHECK-NEXT: %2 = "tx8be.Add"(%0, %1)
// CHECK-NEXT: %3 = "tx8be.Transpose"(%2)
// CHECK-NEXT: %4 = "tx8be.Transpose"(%0)
// CHECK-NEXT: %5 = "tx8be.Add"(%3, %4)
// CHECK-NOT:  tx8.created_by
