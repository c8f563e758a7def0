// RUN: tx8lab opt %s -p 'opt-barrier' | filecheck %s
// The Neg group's result is returned and read by the Relu group: it is in layer 1, not 0
// (the seed's "要 return" rule would put it beside its own reader without a barrier).
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<4xf32>):
    %2 = "tx8be.Group"(%arg0) ({
    ^bb0(%b2_0_0: tensor<4xf32>):
      %0 = "tx8be.Neg"(%b2_0_0) : (tensor<4xf32>) -> tensor<4xf32>
      "tx8be.Return"(%0) : (tensor<4xf32>) -> ()
    }) {group_rule = "single", tx8.created_by = "group-optimization"} : (tensor<4xf32>) -> tensor<4xf32>
    %3 = "tx8be.Group"(%2) ({
    ^bb0(%b3_0_0: tensor<4xf32>):
      %1 = "tx8be.Relu"(%b3_0_0) : (tensor<4xf32>) -> tensor<4xf32>
      "tx8be.Return"(%1) : (tensor<4xf32>) -> ()
    }) {group_rule = "single", tx8.created_by = "group-optimization"} : (tensor<4xf32>) -> tensor<4xf32>
    "func.return"(%2, %3) : (tensor<4xf32>, tensor<4xf32>) -> ()
  }) {function_type = (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>), sym_name = "main"} : () -> ()
}) {tx8.next_id = 4 : i64} : () -> ()

// CHECK:      %2 = "tx8be.Group"(%arg0) ({
// CHECK:      }) {group_rule = "single", need_barrier = true
// CHECK-NEXT: %3 = "tx8be.Group"(%2) ({
// CHECK:      }) {group_rule = "single", need_barrier = true
// CHECK-NEXT: "func.return"(%2, %3)
