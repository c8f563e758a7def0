// RUN: tx8lab opt %s -p 'group-hdfg' | filecheck %s
// MatMul -> Add -> Mul: the Add runs on the adder after the ipa, but no multiplier follows
// that adder, so the Mul restarts from the HDFG source and lands on mul_pre in a new group.
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<2x4xf32>):
    %0 = "tx8be.Constant"() {dtype = "f32", value = dense<"0x0000003F0000003F0000003F0000003F0000003F0000003F0000003F0000003F0000003F0000003F0000003F0000003F0000003F0000003F0000003F0000003F"> : tensor<4x4xf32>} : () -> tensor<4x4xf32>
    %1 = "tx8be.Constant"() {dtype = "f32", value = dense<"0x0000803F0000803F0000803F0000803F"> : tensor<4xf32>} : () -> tensor<4xf32>
    %2 = "tx8be.Constant"() {dtype = "f32", value = dense<"0x00000040000000400000004000000040"> : tensor<4xf32>} : () -> tensor<4xf32>
    %3 = "tx8be.MatMul"(%arg0, %0) : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
    %4 = "tx8be.Add"(%3, %1) : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
    %5 = "tx8be.Mul"(%4, %2) : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
    "func.return"(%5) : (tensor<2x4xf32>) -> ()
  }) {function_type = (tensor<2x4xf32>) -> tensor<2x4xf32>, sym_name = "main"} : () -> ()
}) {tx8.next_id = 6 : i64} : () -> ()

// CHECK:      %6 = "tx8be.Group"(%arg0)
// CHECK:        %3 = "tx8be.MatMul"
// CHECK-NEXT:   %4 = "tx8be.Add"(%3, %1)
// CHECK-NEXT:   "tx8be.Return"(%4)
// CHECK-NEXT: }) {group_rule = "hdfg:opu", hdfg_path = ["ipa", "add"]
// CHECK-NEXT: %7 = "tx8be.Group"(%6)
// CHECK-NEXT: ^bb0(%b7_0_0: tensor<2x4xf32>):
// CHECK-NEXT:   %2 = "tx8be.Constant"()
// CHECK-NEXT:   %5 = "tx8be.Mul"(%b7_0_0, %2)
// CHECK-NEXT:   "tx8be.Return"(%5)
// CHECK-NEXT: }) {group_rule = "hdfg:opu", hdfg_path = ["mul_pre"]
