// RUN: tx8lab opt %s -p 'group-optimization' | filecheck %s
// A constant the function also returns stays at the top level; the group gets a copy.
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<4xf32>):
    %0 = "tx8be.LoadConst"() {const_id = 0 : i64, dtype = "f32", shape = array<i64: 4>, value = #tx8be.random<seed = 1 : i64, distribution = "normal", scale = 1.0 : f64, offset = 0.0 : f64>} : () -> tensor<4xf32>
    %1 = "tx8be.Add"(%arg0, %0) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    "func.return"(%1, %0) : (tensor<4xf32>, tensor<4xf32>) -> ()
  }) {function_type = (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>), sym_name = "main"} : () -> ()
}) {tx8.next_id = 2 : i64} : () -> ()

// CHECK:      ^bb0(%arg0: tensor<4xf32>):
// CHECK-NEXT:   %0 = "tx8be.LoadConst"() {const_id = 0 : i64
// CHECK-NEXT:   %2 = "tx8be.Group"(%arg0) ({
// CHECK-NEXT:   ^bb0(%b2_0_0: tensor<4xf32>):
// CHECK-NEXT:     %3 = "tx8be.LoadConst"() {const_id = 0 : i64, {{.*}}tx8.created_by = "group-optimization"
// CHECK-NEXT:     %1 = "tx8be.Add"(%b2_0_0, %3)
// CHECK:        "func.return"(%2, %0)
