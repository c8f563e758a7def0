// RUN: tx8lab opt %s -p 'group-optimization' | filecheck %s
// Every compute op in no group gets its own tx8be.Group (createSingleGroup) with
// group_rule = "single": its inputs are the values other ops computed, its results the op's.
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<4xf32>):
    %0 = "tx8be.Relu"(%arg0) : (tensor<4xf32>) -> tensor<4xf32>
    %1 = "tx8be.Neg"(%0) : (tensor<4xf32>) -> tensor<4xf32>
    %2 = "tx8be.Add"(%0, %1) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    "func.return"(%2) : (tensor<4xf32>) -> ()
  }) {function_type = (tensor<4xf32>) -> tensor<4xf32>, sym_name = "main"} : () -> ()
}) {tx8.next_id = 3 : i64} : () -> ()

// CHECK:      %3 = "tx8be.Group"(%arg0) ({
// CHECK-NEXT:   ^bb0(%b3_0_0: tensor<4xf32>):
// CHECK-NEXT:   %0 = "tx8be.Relu"(%b3_0_0)
// CHECK-NEXT:   "tx8be.Return"(%0)
// CHECK-NEXT: }) {group_rule = "single", tx8.created_by = "group-optimization"}
// CHECK-NEXT: %4 = "tx8be.Group"(%3) ({
// CHECK:        %1 = "tx8be.Neg"(%b4_0_0)
// CHECK-NEXT:   "tx8be.Return"(%1)
// CHECK-NEXT: }) {group_rule = "single"
// CHECK-NEXT: %5 = "tx8be.Group"(%3, %4) ({
// CHECK-NEXT:   ^bb0(%b5_0_0: tensor<4xf32>, %b5_0_1: tensor<4xf32>):
// CHECK-NEXT:   %2 = "tx8be.Add"(%b5_0_0, %b5_0_1)
// CHECK:      "func.return"(%5)
