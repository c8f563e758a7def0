// RUN: tx8lab opt %s -p 'group-hdfg' | filecheck %s
// Seed 002 (the default, unmapped=seed) on the module of stop_conditions.mlir: the
// Softmax has no op-map entry and rides along in the first group (FindMatch maps it
// virtually; the path stays ipa > add). AddToGroup makes it the group's root_ref, so the
// second MatMul reads it from the first group (CollectInputs stop 1), with the weight and
// the bias (stop 2: grouped already); the second MatMul restarts at the ipa (no ipa
// follows the adder) and its two Adds take add and res_add.
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<2x4xf32>):
    %0 = "tx8be.Constant"() {dtype = "f32", value = dense<"0x0000003F0000003F0000003F0000003F0000003F0000003F0000003F0000003F0000003F0000003F0000003F0000003F0000003F0000003F0000003F0000003F"> : tensor<4x4xf32>} : () -> tensor<4x4xf32>
    %1 = "tx8be.Constant"() {dtype = "f32", value = dense<"0x0000803F0000803F0000803F0000803F"> : tensor<4xf32>} : () -> tensor<4xf32>
    %2 = "tx8be.MatMul"(%arg0, %0) : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
    %3 = "tx8be.Add"(%2, %1) : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
    %4 = "tx8be.Softmax"(%3) {axis = -1 : i64} : (tensor<2x4xf32>) -> tensor<2x4xf32>
    %5 = "tx8be.MatMul"(%4, %0) : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
    %6 = "tx8be.Add"(%5, %3) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    %7 = "tx8be.Add"(%6, %1) : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
    "func.return"(%7) : (tensor<2x4xf32>) -> ()
  }) {function_type = (tensor<2x4xf32>) -> tensor<2x4xf32>, sym_name = "main"} : () -> ()
}) {tx8.next_id = 8 : i64} : () -> ()

// CHECK:      %8:4 = "tx8be.Group"(%arg0)
// CHECK-NEXT: ^bb0(%b8_0_0: tensor<2x4xf32>):
// CHECK-NEXT:   %0 = "tx8be.Constant"()
// CHECK-NEXT:   %1 = "tx8be.Constant"()
// CHECK-NEXT:   %2 = "tx8be.MatMul"(%b8_0_0, %0)
// CHECK-NEXT:   %3 = "tx8be.Add"(%2, %1)
// CHECK-NEXT:   %4 = "tx8be.Softmax"(%3)
// CHECK-NEXT:   "tx8be.Return"(%0, %1, %3, %4)
// CHECK-NEXT: }) {group_rule = "hdfg:opu", hdfg_path = ["ipa", "add"]
// CHECK-NEXT: %9 = "tx8be.Group"(%8#3, %8#0, %8#2, %8#1)
// CHECK-NEXT: ^bb0(
// CHECK-NEXT:   %5 = "tx8be.MatMul"(%b9_0_0, %b9_0_1)
// CHECK-NEXT:   %6 = "tx8be.Add"(%5, %b9_0_2)
// CHECK-NEXT:   %7 = "tx8be.Add"(%6, %b9_0_3)
// CHECK-NEXT:   "tx8be.Return"(%7)
// CHECK-NEXT: }) {group_rule = "hdfg:opu", hdfg_path = ["ipa", "add", "res_add"]
// CHECK-NEXT: "func.return"(%9)
