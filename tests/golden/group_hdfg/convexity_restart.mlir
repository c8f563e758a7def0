// RUN: tx8lab opt %s -p 'group-hdfg{unmapped=out}' | filecheck %s
// unmapped=out (the earlier reading; the seed's is unmapped_rides_along.mlir):
// Conv -> Neg -> Add(conv, neg): the Add could follow the ipa on the adder, but its
// operand %2 (Neg, unmapped, outside) depends on the group, so joining would make the group
// non-convex: the Add opens a new group from the source instead.
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<1x4x4x2xf32>):
    %0 = "tx8be.Constant"() {dtype = "f32", value = dense<"0x0000003F0000003F0000003F0000003F"> : tensor<2x1x1x2xf32>} : () -> tensor<2x1x1x2xf32>
    %1 = "tx8be.Conv2d"(%arg0, %0) : (tensor<1x4x4x2xf32>, tensor<2x1x1x2xf32>) -> tensor<1x4x4x2xf32>
    %2 = "tx8be.Neg"(%1) : (tensor<1x4x4x2xf32>) -> tensor<1x4x4x2xf32>
    %3 = "tx8be.Add"(%1, %2) : (tensor<1x4x4x2xf32>, tensor<1x4x4x2xf32>) -> tensor<1x4x4x2xf32>
    "func.return"(%3) : (tensor<1x4x4x2xf32>) -> ()
  }) {function_type = (tensor<1x4x4x2xf32>) -> tensor<1x4x4x2xf32>, sym_name = "main"} : () -> ()
}) {tx8.next_id = 4 : i64} : () -> ()

// CHECK:      %4 = "tx8be.Group"(%arg0)
// CHECK:        %1 = "tx8be.Conv2d"
// CHECK-NEXT:   "tx8be.Return"(%1)
// CHECK-NEXT: }) {group_rule = "hdfg:opu", hdfg_path = ["ipa"]
// CHECK-NEXT: %2 = "tx8be.Neg"(%4)
// CHECK-NEXT: %5 = "tx8be.Group"(%4, %2)
// CHECK-NEXT: ^bb0(
// CHECK-NEXT:   %3 = "tx8be.Add"(%b5_0_0, %b5_0_1)
// CHECK-NEXT:   "tx8be.Return"(%3)
// CHECK-NEXT: }) {group_rule = "hdfg:opu", hdfg_path = ["add_pre"]
