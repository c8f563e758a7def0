// RUN: tx8lab opt %s -p 'opt-barrier' | filecheck %s
// Two independent chains written one after the other: Neg, Relu, Abs, Sigmoid. Layers: the
// Neg and Abs groups 1, the Relu and Sigmoid groups 0. Sorting by layer puts the Abs group
// before the Relu group, so one barrier (on the Abs group, the last of layer 1) separates
// both producers from both readers: two barriers instead of four.
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
// CHECK:        %0 = "tx8be.Neg"
// CHECK:      }) {group_rule = "single", need_barrier = false
// CHECK-NEXT: %6 = "tx8be.Group"(%arg1) ({
// CHECK:        %2 = "tx8be.Abs"
// CHECK:      }) {group_rule = "single", need_barrier = true
// CHECK-NEXT: %5 = "tx8be.Group"(%4) ({
// CHECK:        %1 = "tx8be.Relu"
// CHECK:      }) {group_rule = "single", need_barrier = false
// CHECK-NEXT: %7 = "tx8be.Group"(%6) ({
// CHECK:        %3 = "tx8be.Sigmoid"
// CHECK:      }) {group_rule = "single", need_barrier = true
