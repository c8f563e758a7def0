// RUN: tx8lab opt %s -p 'opt-barrier' | filecheck %s
// A chain: each group reads the previous one, so layers are 2, 1, 0 from the output back
// and every group is the last of its layer: three barriers, none saved.
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<4xf32>):
    %3 = "tx8be.Group"(%arg0) ({
    ^bb0(%b3_0_0: tensor<4xf32>):
      %0 = "tx8be.Neg"(%b3_0_0) : (tensor<4xf32>) -> tensor<4xf32>
      "tx8be.Return"(%0) : (tensor<4xf32>) -> ()
    }) {group_rule = "single", tx8.created_by = "group-optimization"} : (tensor<4xf32>) -> tensor<4xf32>
    %4 = "tx8be.Group"(%3) ({
    ^bb0(%b4_0_0: tensor<4xf32>):
      %1 = "tx8be.Relu"(%b4_0_0) : (tensor<4xf32>) -> tensor<4xf32>
      "tx8be.Return"(%1) : (tensor<4xf32>) -> ()
    }) {group_rule = "single", tx8.created_by = "group-optimization"} : (tensor<4xf32>) -> tensor<4xf32>
    %5 = "tx8be.Group"(%4) ({
    ^bb0(%b5_0_0: tensor<4xf32>):
      %2 = "tx8be.Abs"(%b5_0_0) : (tensor<4xf32>) -> tensor<4xf32>
      "tx8be.Return"(%2) : (tensor<4xf32>) -> ()
    }) {group_rule = "single", tx8.created_by = "group-optimization"} : (tensor<4xf32>) -> tensor<4xf32>
    "func.return"(%5) : (tensor<4xf32>) -> ()
  }) {function_type = (tensor<4xf32>) -> tensor<4xf32>, sym_name = "main"} : () -> ()
}) {tx8.next_id = 6 : i64} : () -> ()

// CHECK:      %3 = "tx8be.Group"(%arg0) ({
// CHECK:      }) {group_rule = "single", need_barrier = true
// CHECK-NEXT: %4 = "tx8be.Group"(%3) ({
// CHECK:      }) {group_rule = "single", need_barrier = true
// CHECK-NEXT: %5 = "tx8be.Group"(%4) ({
// CHECK:      }) {group_rule = "single", need_barrier = true
