// RUN: tx8lab opt %s -p 'group-hdfg' | filecheck %s
// CollectInputs: the LoadConst, the Tuple and the two Constants under it are collected
// upward into the group of the first op that reads them. The second group reads the
// Tuple's other field from the first group (it is grouped already: seed stop 2) and
// collects its own weight %0.
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<2x4xf32>):
    %0 = "tx8be.Constant"() {dtype = "f32", value = dense<"0x0000003F0000003F0000003F0000003F0000003F0000003F0000003F0000003F0000003F0000003F0000003F0000003F0000003F0000003F0000003F0000003F"> : tensor<4x4xf32>} : () -> tensor<4x4xf32>
    %1 = "tx8be.LoadConst"() {dtype = "f32", value = dense<"0x0000003F0000003F0000003F0000003F0000003F0000003F0000003F0000003F0000003F0000003F0000003F0000003F0000003F0000003F0000003F0000003F"> : tensor<4x4xf32>} : () -> tensor<4x4xf32>
    %2 = "tx8be.Constant"() {dtype = "f32", value = dense<"0x0000803F0000803F0000803F0000803F"> : tensor<4xf32>} : () -> tensor<4xf32>
    %3 = "tx8be.Constant"() {dtype = "f32", value = dense<"0x000080BF000080BF000080BF000080BF"> : tensor<4xf32>} : () -> tensor<4xf32>
    %4:2 = "tx8be.Tuple"(%2, %3) : (tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
    %5 = "tx8be.MatMul"(%arg0, %1) : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
    %6 = "tx8be.Add"(%5, %4#0) : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
    %7 = "tx8be.Relu"(%6) : (tensor<2x4xf32>) -> tensor<2x4xf32>
    %8 = "tx8be.MatMul"(%7, %0) : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
    %9 = "tx8be.Add"(%8, %4#1) : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
    "func.return"(%9) : (tensor<2x4xf32>) -> ()
  }) {function_type = (tensor<2x4xf32>) -> tensor<2x4xf32>, sym_name = "main"} : () -> ()
}) {tx8.next_id = 10 : i64} : () -> ()

// CHECK:      %10:2 = "tx8be.Group"(%arg0)
// CHECK-NEXT: ^bb0(%b10_0_0: tensor<2x4xf32>):
// CHECK-NEXT:   %1 = "tx8be.LoadConst"()
// CHECK-NEXT:   %2 = "tx8be.Constant"()
// CHECK-NEXT:   %3 = "tx8be.Constant"()
// CHECK-NEXT:   %4:2 = "tx8be.Tuple"(%2, %3)
// CHECK-NEXT:   %5 = "tx8be.MatMul"(%b10_0_0, %1)
// CHECK-NEXT:   %6 = "tx8be.Add"(%5, %4#0)
// CHECK-NEXT:   %7 = "tx8be.Relu"(%6)
// CHECK-NEXT:   "tx8be.Return"(%4#1, %7)
// CHECK-NEXT: }) {group_rule = "hdfg:opu", hdfg_path = ["ipa", "add", "compare"]
// CHECK-NEXT: %11 = "tx8be.Group"(%10#1, %10#0)
// CHECK-NEXT: ^bb0(%b11_0_0: tensor<2x4xf32>, %b11_0_1: tensor<4xf32>):
// CHECK-NEXT:   %0 = "tx8be.Constant"()
// CHECK-NEXT:   %8 = "tx8be.MatMul"(%b11_0_0, %0)
// CHECK-NEXT:   %9 = "tx8be.Add"(%8, %b11_0_1)
// CHECK-NEXT: "tx8be.Return"(%9)
