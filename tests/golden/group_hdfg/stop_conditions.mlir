// RUN: tx8lab opt %s -p 'group-hdfg{unmapped=out}' | filecheck %s
// The seed's three CollectInputs stops, seen from the second group (%5 %6 %7), with
// unmapped=out (the earlier reading, where stop 3 is every compute op):
// (1) %3, the root of the first group, is read from it; (2) the weight %0 and the bias %1,
// grouped already, are read from the first group too; (3) the Softmax, a compute op the op
// map does not know, stays outside both groups. With the seed's unmapped=seed the Softmax
// rides along in the first group instead (unmapped_becomes_root.mlir).
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

// CHECK:      %8:3 = "tx8be.Group"(%arg0)
// CHECK-NEXT: ^bb0(%b8_0_0: tensor<2x4xf32>):
// CHECK-NEXT:   %0 = "tx8be.Constant"()
// CHECK-NEXT:   %1 = "tx8be.Constant"()
// CHECK-NEXT:   %2 = "tx8be.MatMul"(%b8_0_0, %0)
// CHECK-NEXT:   %3 = "tx8be.Add"(%2, %1)
// CHECK-NEXT:   "tx8be.Return"(%0, %1, %3)
// CHECK-NEXT: }) {group_rule = "hdfg:opu", hdfg_path = ["ipa", "add"]
// CHECK-NEXT: %4 = "tx8be.Softmax"(%8#2)
// CHECK-NEXT: %9 = "tx8be.Group"(%4, %8#0, %8#2, %8#1)
// CHECK-NEXT: ^bb0(
// CHECK-NEXT:   %5 = "tx8be.MatMul"(%b9_0_0, %b9_0_1)
// CHECK-NEXT:   %6 = "tx8be.Add"(%5, %b9_0_2)
// CHECK-NEXT:   %7 = "tx8be.Add"(%6, %b9_0_3)
// CHECK-NEXT:   "tx8be.Return"(%7)
// CHECK-NEXT: }) {group_rule = "hdfg:opu", hdfg_path = ["ipa", "add", "res_add"]
