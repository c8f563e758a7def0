// RUN: tx8lab opt %s -p 'group-pattern{patterns_file=tests/golden/group_pattern/wildcard_repeat.txt}' | filecheck %s
// 'Neg *' stands for 1 to 5 Negs: the longest match takes the Relu and all three Negs.
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<1x4x4x8xf32>):
    %0 = "tx8be.Relu"(%arg0) : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
    %1 = "tx8be.Neg"(%0) : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
    %2 = "tx8be.Neg"(%1) : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
    %3 = "tx8be.Neg"(%2) : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
    %4 = "tx8be.Abs"(%3) : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
    "func.return"(%4) : (tensor<1x4x4x8xf32>) -> ()
  }) {function_type = (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>, sym_name = "main"} : () -> ()
}) {tx8.next_id = 5 : i64} : () -> ()

// CHECK:      %5 = "tx8be.Group"(%arg0) ({
// CHECK-NEXT: ^bb0(%b5_0_0: tensor<1x4x4x8xf32>):
// CHECK-NEXT:   %0 = "tx8be.Relu"(%b5_0_0)
// CHECK-NEXT:   %1 = "tx8be.Neg"(%0)
// CHECK-NEXT:   %2 = "tx8be.Neg"(%1)
// CHECK-NEXT:   %3 = "tx8be.Neg"(%2)
// CHECK-NEXT:   "tx8be.Return"(%3)
// CHECK-NEXT: }) {group_id = 0 : i64, group_pattern = "Relu Neg Neg Neg"
// CHECK-NEXT: %4 = "tx8be.Abs"(%5)
