// RUN: tx8lab opt %s -p 'group-pattern{patterns_file=tests/golden/group_pattern/not_convex.txt}' | filecheck %s
// Relu Neg Add is a match but not a convex group (Relu -> Abs -> Add leaves it and comes
// back); the next best match from the Relu, Relu Neg, is applied instead.
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<1x4x4x8xf32>):
    %0 = "tx8be.Relu"(%arg0) : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
    %1 = "tx8be.Neg"(%0) : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
    %2 = "tx8be.Abs"(%0) : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
    %3 = "tx8be.Add"(%1, %2) : (tensor<1x4x4x8xf32>, tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
    "func.return"(%3) : (tensor<1x4x4x8xf32>) -> ()
  }) {function_type = (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>, sym_name = "main"} : () -> ()
}) {tx8.next_id = 4 : i64} : () -> ()

// CHECK:      %4:2 = "tx8be.Group"(%arg0) ({
// CHECK:        %0 = "tx8be.Relu"
// CHECK-NEXT:   %1 = "tx8be.Neg"(%0)
// CHECK-NEXT:   "tx8be.Return"(%0, %1)
// CHECK-NEXT: }) {group_id = 0 : i64, group_pattern = "Relu Neg", group_rule = "pattern:tests/golden/group_pattern/not_convex.txt:3"
// CHECK-NEXT: %2 = "tx8be.Abs"(%4#0)
// CHECK-NEXT: %3 = "tx8be.Add"(%4#1, %2)
