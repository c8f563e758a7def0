// RUN: tx8lab opt %s -p 'group-pattern{patterns_file=tests/golden/group_pattern/or_alternative.txt}' | filecheck %s
// OR splits a pattern into whole sequences (seed: 'A B OR C D' is 'A B' and 'C D'):
// Relu Neg and Abs Sigmoid are grouped, Relu Sigmoid is not a sequence of the pattern.
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<1x4x4x8xf32>):
    %0 = "tx8be.Relu"(%arg0) : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
    %1 = "tx8be.Neg"(%0) : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
    %2 = "tx8be.Abs"(%arg0) : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
    %3 = "tx8be.Sigmoid"(%2) : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
    %4 = "tx8be.Relu"(%arg0) : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
    %5 = "tx8be.Sigmoid"(%4) : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
    "func.return"(%1, %3, %5) : (tensor<1x4x4x8xf32>, tensor<1x4x4x8xf32>, tensor<1x4x4x8xf32>) -> ()
  }) {function_type = (tensor<1x4x4x8xf32>) -> (tensor<1x4x4x8xf32>, tensor<1x4x4x8xf32>, tensor<1x4x4x8xf32>), sym_name = "main"} : () -> ()
}) {tx8.next_id = 6 : i64} : () -> ()

// CHECK:      %6 = "tx8be.Group"(%arg0) ({
// CHECK-NEXT: ^bb0(%b6_0_0: tensor<1x4x4x8xf32>):
// CHECK-NEXT:   %0 = "tx8be.Relu"(%b6_0_0)
// CHECK-NEXT:   %1 = "tx8be.Neg"(%0)
// CHECK-NEXT:   "tx8be.Return"(%1)
// CHECK-NEXT: }) {group_id = 0 : i64, group_pattern = "Relu Neg", group_rule = "pattern:tests/golden/group_pattern/or_alternative.txt:2", tx8.created_by = "group-pattern"}
// CHECK-NEXT: %7 = "tx8be.Group"(%arg0) ({
// CHECK-NEXT: ^bb0(%b7_0_0: tensor<1x4x4x8xf32>):
// CHECK-NEXT:   %2 = "tx8be.Abs"(%b7_0_0)
// CHECK-NEXT:   %3 = "tx8be.Sigmoid"(%2)
// CHECK-NEXT:   "tx8be.Return"(%3)
// CHECK-NEXT: }) {group_id = 1 : i64, group_pattern = "Abs Sigmoid"
// CHECK-NEXT: %4 = "tx8be.Relu"(%arg0)
// CHECK-NEXT: %5 = "tx8be.Sigmoid"(%4)
// CHECK-NEXT: "func.return"(%6, %7, %5)
