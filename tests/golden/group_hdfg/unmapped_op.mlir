// RUN: tx8lab opt %s -p 'group-hdfg{unmapped=out}' | filecheck %s
// unmapped=out (the earlier reading): an op the op map does not know (Sigmoid) stays
// ungrouped between the two groups; the residual Add reads the first MatMul straight from
// the first group. The seed's unmapped=seed puts the Sigmoid in the first group
// (unmapped_rides_along.mlir, unmapped_becomes_root.mlir).
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<2x4xf32>):
    %0 = "tx8be.Constant"() {dtype = "f32", value = dense<"0x0000003F0000003F0000003F0000003F0000003F0000003F0000003F0000003F0000003F0000003F0000003F0000003F0000003F0000003F0000003F0000003F"> : tensor<4x4xf32>} : () -> tensor<4x4xf32>
    %1 = "tx8be.MatMul"(%arg0, %0) : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
    %2 = "tx8be.Sigmoid"(%1) : (tensor<2x4xf32>) -> tensor<2x4xf32>
    %3 = "tx8be.MatMul"(%2, %0) : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
    %4 = "tx8be.Add"(%3, %1) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    "func.return"(%4) : (tensor<2x4xf32>) -> ()
  }) {function_type = (tensor<2x4xf32>) -> tensor<2x4xf32>, sym_name = "main"} : () -> ()
}) {tx8.next_id = 5 : i64} : () -> ()

// CHECK:      %5:2 = "tx8be.Group"(%arg0)
// CHECK:        %1 = "tx8be.MatMul"
// CHECK-NEXT:   "tx8be.Return"(%0, %1)
// CHECK-NEXT: }) {group_rule = "hdfg:opu", hdfg_path = ["ipa"]
// CHECK-NEXT: %2 = "tx8be.Sigmoid"(%5#1)
// CHECK-NEXT: %6 = "tx8be.Group"(%2, %5#0, %5#1)
// CHECK-NEXT: ^bb0(
// CHECK-NEXT:   %3 = "tx8be.MatMul"
// CHECK-NEXT:   %4 = "tx8be.Add"(%3, %b6_0_2)
// CHECK-NEXT:   "tx8be.Return"(%4)
// CHECK-NEXT: }) {group_rule = "hdfg:opu", hdfg_path = ["ipa", "add"]
