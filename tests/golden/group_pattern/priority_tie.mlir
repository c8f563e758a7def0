// RUN: tx8lab opt %s -p 'group-pattern{patterns_file=tests/golden/group_pattern/priority_tie.txt}' | filecheck %s
// Two matches of the same length from one op: the higher priority wins (Relu Abs, 20
// over Relu Neg, 10); on equal priorities the first user in program order wins (Exp Neg).
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<1x4x4x8xf32>):
    %0 = "tx8be.Relu"(%arg0) : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
    %1 = "tx8be.Neg"(%0) : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
    %2 = "tx8be.Abs"(%0) : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
    %3 = "tx8be.Exp"(%arg0) : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
    %4 = "tx8be.Neg"(%3) : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
    %5 = "tx8be.Abs"(%3) : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
    "func.return"(%1, %2, %4, %5) : (tensor<1x4x4x8xf32>, tensor<1x4x4x8xf32>, tensor<1x4x4x8xf32>, tensor<1x4x4x8xf32>) -> ()
  }) {function_type = (tensor<1x4x4x8xf32>) -> (tensor<1x4x4x8xf32>, tensor<1x4x4x8xf32>, tensor<1x4x4x8xf32>, tensor<1x4x4x8xf32>), sym_name = "main"} : () -> ()
}) {tx8.next_id = 6 : i64} : () -> ()

// CHECK:      %6:2 = "tx8be.Group"(%arg0) ({
// CHECK:        %0 = "tx8be.Relu"
// CHECK-NEXT:   %2 = "tx8be.Abs"(%0)
// CHECK-NEXT:   "tx8be.Return"(%0, %2)
// CHECK-NEXT: }) {group_id = 0 : i64, group_pattern = "Relu Abs", group_rule = "pattern:tests/golden/group_pattern/priority_tie.txt:3"
// CHECK-NEXT: %1 = "tx8be.Neg"(%6#0)
// CHECK-NEXT: %7:2 = "tx8be.Group"(%arg0) ({
// CHECK:        %3 = "tx8be.Exp"
// CHECK-NEXT:   %4 = "tx8be.Neg"(%3)
// CHECK-NEXT:   "tx8be.Return"(%3, %4)
// CHECK-NEXT: }) {group_id = 1 : i64, group_pattern = "Exp Neg", group_rule = "pattern:tests/golden/group_pattern/priority_tie.txt:4"
// CHECK-NEXT: %5 = "tx8be.Abs"(%7#0)
