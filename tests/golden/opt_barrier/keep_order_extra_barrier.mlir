// RUN: tx8lab opt %s -p 'opt-barrier{sort_layers=false}' | filecheck %s
// The same graph with the order kept: the seed's barriers (last of layer 1: the Abs group,
// last of layer 0: the Sigmoid group) leave nothing between the Neg group and the Relu
// group that reads it, so one extra barrier goes on the Neg group.
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<4xf32>, %arg1: tensor<4xf32>):
    %4 = "tx8be.Group"(%arg0) ({
    ^bb0(%b4_0_0: tensor<4xf32>):
      %0 = "tx8be.Neg"(%b4_0_0) : (tensor<4xf32>) -> tensor<4xf32>
      "tx8be.Return"(%0) : (tensor<4xf32>) -> ()
    }) {group_rule = "single", tx8.created_by = "group-optimization"} : (tensor<4xf32>) -> tensor<4xf32>
    %5 = "tx8be.Group"(%4) ({
    ^bb0(%b5_0_0: tensor<4xf32>):
      %1 = "tx8be.Relu"(%b5_0_0) : (tensor<4xf32>) -> tensor<4xf32>
      "tx8be.Return"(%1) : (tensor<4xf32>) -> ()
    }) {group_rule = "single", tx8.created_by = "group-optimization"} : (tensor<4xf32>) -> tensor<4xf32>
    %6 = "tx8be.Group"(%arg1) ({
    ^bb0(%b6_0_0: tensor<4xf32>):
      %2 = "tx8be.Abs"(%b6_0_0) : (tensor<4xf32>) -> tensor<4xf32>
      "tx8be.Return"(%2) : (tensor<4xf32>) -> ()
    }) {group_rule = "single", tx8.created_by = "group-optimization"} : (tensor<4xf32>) -> tensor<4xf32>
    %7 = "tx8be.Group"(%6) ({
    ^bb0(%b7_0_0: tensor<4xf32>):
      %3 = "tx8be.Sigmoid"(%b7_0_0) : (tensor<4xf32>) -> tensor<4xf32>
      "tx8be.Return"(%3) : (tensor<4xf32>) -> ()
    }) {group_rule = "single", tx8.created_by = "group-optimization"} : (tensor<4xf32>) -> tensor<4xf32>
    "func.return"(%5, %7) : (tensor<4xf32>, tensor<4xf32>) -> ()
  }) {function_type = (tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>), sym_name = "main"} : () -> ()
}) {tx8.next_id = 8 : i64} : () -> ()

// CHECK:      %4 = "tx8be.Group"(%arg0) ({
// CHECK:      }) {group_rule = "single", need_barrier = true
// CHECK-NEXT: %5 = "tx8be.Group"(%4) ({
// CHECK:      }) {group_rule = "single", need_barrier = false
// CHECK-NEXT: %6 = "tx8be.Group"(%arg1) ({
// CHECK:      }) {group_rule = "single", need_barrier = true
// CHECK-NEXT: %7 = "tx8be.Group"(%6) ({
// CHECK:      }) {group_rule = "single", need_barrier = true
