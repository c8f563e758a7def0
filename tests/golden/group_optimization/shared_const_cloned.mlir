// RUN: tx8lab opt %s -p 'group-optimization' | filecheck %s
// One LoadConst read by two groups: the first group (program order) gets the op itself,
// the second a copy with a fresh id and the same const_id and data.
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<4xf32>):
    %0 = "tx8be.LoadConst"() {const_id = 0 : i64, dtype = "f32", shape = array<i64: 4>, value = #tx8be.random<seed = 1 : i64, distribution = "normal", scale = 1.0 : f64, offset = 0.0 : f64>} : () -> tensor<4xf32>
    %1 = "tx8be.Add"(%arg0, %0) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %2 = "tx8be.Mul"(%1, %0) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    "func.return"(%2) : (tensor<4xf32>) -> ()
  }) {function_type = (tensor<4xf32>) -> tensor<4xf32>, sym_name = "main"} : () -> ()
}) {tx8.next_id = 3 : i64} : () -> ()

// CHECK:      %3 = "tx8be.Group"(%arg0) ({
// CHECK:        %0 = "tx8be.LoadConst"() {const_id = 0 : i64, dtype = "f32", shape = array<i64: 4>, value = #tx8be.random<seed = 1
// CHECK-NEXT:   %1 = "tx8be.Add"(%b3_0_0, %0)
// CHECK:      %4 = "tx8be.Group"(%3) ({
// CHECK-NEXT:   ^bb0(%b4_0_0: tensor<4xf32>):
// CHECK-NEXT:   %5 = "tx8be.LoadConst"() {const_id = 0 : i64, dtype = "f32", shape = array<i64: 4>, tx8.created_by = "group-optimization", value = #tx8be.random<seed = 1
// CHECK-NEXT:   %2 = "tx8be.Mul"(%b4_0_0, %5)
// CHECK:      "func.return"(%4)
