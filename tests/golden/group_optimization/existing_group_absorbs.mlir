// RUN: tx8lab opt %s -p 'group-optimization' | filecheck %s
// A group formed earlier (group-pattern: group_rule "add_relu") keeps its id and rule; the
// constant it reads moves into it (operand and block argument go), and the Neg left
// outside gets a single group.
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<4xf32>):
    %0 = "tx8be.LoadConst"() {const_id = 0 : i64, dtype = "f32", shape = array<i64: 4>, value = #tx8be.random<seed = 1 : i64, distribution = "normal", scale = 1.0 : f64, offset = 0.0 : f64>} : () -> tensor<4xf32>
    %4 = "tx8be.Group"(%arg0, %0) ({
    ^bb0(%b4_0_0: tensor<4xf32>, %b4_0_1: tensor<4xf32>):
      %1 = "tx8be.Add"(%b4_0_0, %b4_0_1) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
      %2 = "tx8be.Relu"(%1) : (tensor<4xf32>) -> tensor<4xf32>
      "tx8be.Return"(%2) : (tensor<4xf32>) -> ()
    }) {group_rule = "add_relu"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %3 = "tx8be.Neg"(%4) : (tensor<4xf32>) -> tensor<4xf32>
    "func.return"(%3) : (tensor<4xf32>) -> ()
  }) {function_type = (tensor<4xf32>) -> tensor<4xf32>, sym_name = "main"} : () -> ()
}) {tx8.next_id = 5 : i64} : () -> ()

// CHECK:      ^bb0(%arg0: tensor<4xf32>):
// CHECK-NEXT:   %4 = "tx8be.Group"(%arg0) ({
// CHECK-NEXT:   ^bb0(%b4_0_0: tensor<4xf32>):
// CHECK-NEXT:     %0 = "tx8be.LoadConst"()
// CHECK-NEXT:     %1 = "tx8be.Add"(%b4_0_0, %0)
// CHECK-NEXT:     %2 = "tx8be.Relu"(%1)
// CHECK-NEXT:     "tx8be.Return"(%2)
// CHECK-NEXT:   }) {group_rule = "add_relu"} : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:   %5 = "tx8be.Group"(%4) ({
// CHECK:          %3 = "tx8be.Neg"(%b5_0_0)
// CHECK:        }) {group_rule = "single"
