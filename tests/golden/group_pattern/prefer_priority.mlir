// RUN: tx8lab opt %s -p 'group-pattern{prefer=priority patterns_file=tests/golden/group_pattern/prefer_priority.txt}' | filecheck %s
// prefer=priority is the seed's code: a deeper pattern end replaces a shallower one only
// with a strictly higher priority, so 'short' (priority 50) wins.
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<1x4x4x8xf32>):
    %0 = "tx8be.Relu"(%arg0) : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
    %1 = "tx8be.Neg"(%0) : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
    %2 = "tx8be.Abs"(%1) : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
    "func.return"(%2) : (tensor<1x4x4x8xf32>) -> ()
  }) {function_type = (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>, sym_name = "main"} : () -> ()
}) {tx8.next_id = 3 : i64} : () -> ()

// CHECK:      %3 = "tx8be.Group"(%arg0) ({
// CHECK:        %0 = "tx8be.Relu"
// CHECK-NEXT:   %1 = "tx8be.Neg"(%0)
// CHECK-NEXT:   "tx8be.Return"(%1)
// CHECK-NEXT: }) {group_id = 0 : i64, group_pattern = "Relu Neg", group_rule = "pattern:tests/golden/group_pattern/prefer_priority.txt:2"
// CHECK-NEXT: %2 = "tx8be.Abs"(%3)
