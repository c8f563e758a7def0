// RUN: tx8lab opt %s -p 'fold-constants' | filecheck %s
// A shape-style subgraph: Concatenate of a table with itself, Reshape, Convert to f16.
// All three fold; the live Split (two results) of a constant does not, since it would
// become two Constants.
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<2x2xf16>, %arg1: tensor<1x2xf32>):
    %0 = "tx8be.Constant"() {value = dense<[0.5, 1.0]> : tensor<2xf32>} : () -> tensor<2xf32>
    %1 = "tx8be.Concatenate"(%0, %0) {axis = 0 : i64} : (tensor<2xf32>, tensor<2xf32>) -> tensor<4xf32>
    %2 = "tx8be.Reshape"(%1) {shape = array<i64: 2, 2>} : (tensor<4xf32>) -> tensor<2x2xf32>
    %3 = "tx8be.Convert"(%2) {dtype = "f16"} : (tensor<2x2xf32>) -> tensor<2x2xf16>
    %4 = "tx8be.Mul"(%arg0, %3) : (tensor<2x2xf16>, tensor<2x2xf16>) -> tensor<2x2xf16>
    %5:2 = "tx8be.Split"(%2) {axis = 0 : i64, sizes = array<i64: 1, 1>} : (tensor<2x2xf32>) -> (tensor<1x2xf32>, tensor<1x2xf32>)
    %6 = "tx8be.Add"(%arg1, %5#1) : (tensor<1x2xf32>, tensor<1x2xf32>) -> tensor<1x2xf32>
    "func.return"(%4, %6) : (tensor<2x2xf16>, tensor<1x2xf32>) -> ()
  }) {function_type = (tensor<2x2xf16>, tensor<1x2xf32>) -> (tensor<2x2xf16>, tensor<1x2xf32>), sym_name = "main"} : () -> ()
}) : () -> ()

// CHECK:      %7 = "tx8be.Constant"() {dtype = "f32", tx8.created_by = "fold-constants", value = dense<"0x0000003F0000803F0000003F0000803F"> : tensor<4xf32>}
// CHECK-NEXT: %[[R:8]] = "tx8be.Constant"() {{.*}}tx8.created_by = "fold-constants"{{.*}} : tensor<2x2xf32>}
// CHECK-NEXT: %9 = "tx8be.Constant"() {dtype = "f16", tx8.created_by = "fold-constants", value = dense<"0x0038003C0038003C"> : tensor<2x2xf16>}
// CHECK-NEXT: %4 = "tx8be.Mul"(%arg0, %9)
// CHECK-NEXT: %5:2 = "tx8be.Split"(%[[R]])
