// RUN: tx8lab opt %s -p 'group-pattern{single_user=true patterns_file=tests/golden/group_pattern/single_user.txt}' | filecheck %s
// single_user=true (not the seed's default) stops a match at an op with several readers:
// the Relu read by Neg and Abs forms no group, Exp Neg does.
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<1x4x4x8xf32>):
    %0 = "tx8be.Relu"(%arg0) : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
    %1 = "tx8be.Neg"(%0) : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
    %2 = "tx8be.Abs"(%0) : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
    %3 = "tx8be.Exp"(%arg0) : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
    %4 = "tx8be.Neg"(%3) : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
    "func.return"(%1, %2, %4) : (tensor<1x4x4x8xf32>, tensor<1x4x4x8xf32>, tensor<1x4x4x8xf32>) -> ()
  }) {function_type = (tensor<1x4x4x8xf32>) -> (tensor<1x4x4x8xf32>, tensor<1x4x4x8xf32>, tensor<1x4x4x8xf32>), sym_name = "main"} : () -> ()
}) {tx8.next_id = 5 : i64} : () -> ()

// CHECK:      %0 = "tx8be.Relu"(%arg0)
// CHECK-NEXT: %1 = "tx8be.Neg"(%0)
// CHECK-NEXT: %2 = "tx8be.Abs"(%0)
// CHECK-NEXT: %5 = "tx8be.Group"(%arg0) ({
// CHECK:        %3 = "tx8be.Exp"
// CHECK-NEXT:   %4 = "tx8be.Neg"(%3)
// CHECK-NEXT:   "tx8be.Return"(%4)
// CHECK-NEXT: }) {group_id = 0 : i64, group_pattern = "Exp Neg"
