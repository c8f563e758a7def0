// RUN: tx8lab opt %s -p 'group-pattern{patterns_file=tests/golden/group_pattern/already_grouped.txt}' | filecheck %s
// Ops in a group are left alone: Relu Neg stays as it is (the pattern cannot reach into
// it) and Abs Sigmoid gets group_id 4, after the existing group's 3.
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<1x4x4x8xf32>):
    %4 = "tx8be.Group"(%arg0) ({
    ^bb0(%b4_0_0: tensor<1x4x4x8xf32>):
      %0 = "tx8be.Relu"(%b4_0_0) : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
      %1 = "tx8be.Neg"(%0) : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
      "tx8be.Return"(%1) : (tensor<1x4x4x8xf32>) -> ()
    }) {group_id = 3 : i64, group_rule = "manual", tx8.created_by = "test"} : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
    %2 = "tx8be.Abs"(%4) : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
    %3 = "tx8be.Sigmoid"(%2) : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
    "func.return"(%3) : (tensor<1x4x4x8xf32>) -> ()
  }) {function_type = (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>, sym_name = "main"} : () -> ()
}) {tx8.next_id = 5 : i64} : () -> ()

// CHECK:      %4 = "tx8be.Group"(%arg0) ({
// CHECK-NEXT: ^bb0(%b4_0_0: tensor<1x4x4x8xf32>):
// CHECK-NEXT:   %0 = "tx8be.Relu"(%b4_0_0)
// CHECK-NEXT:   %1 = "tx8be.Neg"(%0)
// CHECK-NEXT:   "tx8be.Return"(%1)
// CHECK-NEXT: }) {group_id = 3 : i64, group_rule = "manual", tx8.created_by = "test"}
// CHECK-NEXT: %5 = "tx8be.Group"(%4) ({
// CHECK:        %2 = "tx8be.Abs"
// CHECK-NEXT:   %3 = "tx8be.Sigmoid"(%2)
// CHECK-NEXT:   "tx8be.Return"(%3)
// CHECK-NEXT: }) {group_id = 4 : i64, group_pattern = "Abs Sigmoid", group_rule = "pattern:tests/golden/group_pattern/already_grouped.txt:2", tx8.created_by = "group-pattern"}
