// RUN: tx8lab opt %s -p 'group-hdfg' | filecheck %s
// Two independent users of %arg0: the Add is visited right after the MatMul and an adder
// follows the ipa, but the Add reads nothing the MatMul's group computes, so it opens a
// group of its own (the seed would glue the two into one trip).
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<2x4xf32>):
    %0 = "tx8be.Constant"() {dtype = "f32", value = dense<"0x0000003F0000003F0000003F0000003F0000003F0000003F0000003F0000003F0000003F0000003F0000003F0000003F0000003F0000003F0000003F0000003F"> : tensor<4x4xf32>} : () -> tensor<4x4xf32>
    %1 = "tx8be.Constant"() {dtype = "f32", value = dense<"0x0000803F0000803F0000803F0000803F"> : tensor<4xf32>} : () -> tensor<4xf32>
    %2 = "tx8be.MatMul"(%arg0, %0) : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
    %3 = "tx8be.Add"(%arg0, %1) : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
    "func.return"(%2, %3) : (tensor<2x4xf32>, tensor<2x4xf32>) -> ()
  }) {function_type = (tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>), sym_name = "main"} : () -> ()
}) {tx8.next_id = 4 : i64} : () -> ()

// CHECK:      %4 = "tx8be.Group"(%arg0)
// CHECK:        %2 = "tx8be.MatMul"
// CHECK-NEXT:   "tx8be.Return"(%2)
// CHECK-NEXT: }) {group_rule = "hdfg:opu", hdfg_path = ["ipa"]
// CHECK-NEXT: %5 = "tx8be.Group"(%arg0)
// CHECK:        %3 = "tx8be.Add"
// CHECK-NEXT:   "tx8be.Return"(%3)
// CHECK-NEXT: }) {group_rule = "hdfg:opu", hdfg_path = ["add_pre"]
