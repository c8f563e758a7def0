// RUN: tx8lab opt %s -p 'group-pattern{patterns_file=tests/golden/group_pattern/wildcard_max_5.txt}' | filecheck %s
// 'Neg *' stands for at most 5 Negs (the seed's loop runs 5 times): the sixth Neg
// stays outside the group.
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<1x4x4x8xf32>):
    %0 = "tx8be.Relu"(%arg0) : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
    %1 = "tx8be.Neg"(%0) : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
    %2 = "tx8be.Neg"(%1) : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
    %3 = "tx8be.Neg"(%2) : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
    %4 = "tx8be.Neg"(%3) : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
    %5 = "tx8be.Neg"(%4) : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
    %6 = "tx8be.Neg"(%5) : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
    "func.return"(%6) : (tensor<1x4x4x8xf32>) -> ()
  }) {function_type = (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>, sym_name = "main"} : () -> ()
}) {tx8.next_id = 7 : i64} : () -> ()

// CHECK:      %7 = "tx8be.Group"(%arg0) ({
// CHECK:        %0 = "tx8be.Relu"(%b7_0_0)
// CHECK-NEXT:   %1 = "tx8be.Neg"(%0)
// CHECK-NEXT:   %2 = "tx8be.Neg"(%1)
// CHECK-NEXT:   %3 = "tx8be.Neg"(%2)
// CHECK-NEXT:   %4 = "tx8be.Neg"(%3)
// CHECK-NEXT:   %5 = "tx8be.Neg"(%4)
// CHECK-NEXT:   "tx8be.Return"(%5)
// CHECK-NEXT: }) {group_id = 0 : i64, group_pattern = "Relu Neg Neg Neg Neg Neg"
// CHECK-NEXT: %6 = "tx8be.Neg"(%7)
// CHECK-NEXT: "func.return"(%6)
