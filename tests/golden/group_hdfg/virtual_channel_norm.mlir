// RUN: tx8lab opt %s -p 'group-hdfg' | filecheck %s
// ChannelNorm is virtual in the opu graph: between a MatMul and its bias Add it rides along
// in the group without taking a node (the path stays ipa > add); one that reads no value
// of the current group stays outside (no group reads it, so none collects it). The same
// holds for every kind outside the op map with the default unmapped=seed; the virtual
// declaration matters for unmapped=out.
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<2x4xf32>):
    %0 = "tx8be.Constant"() {dtype = "f32", value = dense<"0x0000003F0000003F0000003F0000003F0000003F0000003F0000003F0000003F0000003F0000003F0000003F0000003F0000003F0000003F0000003F0000003F"> : tensor<4x4xf32>} : () -> tensor<4x4xf32>
    %1 = "tx8be.Constant"() {dtype = "f32", value = dense<"0x0000803F0000803F0000803F0000803F"> : tensor<4xf32>} : () -> tensor<4xf32>
    %2 = "tx8be.MatMul"(%arg0, %0) : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
    %3 = "tx8be.ChannelNorm"(%2) {direction = true} : (tensor<2x4xf32>) -> tensor<2x4xf32>
    %4 = "tx8be.Add"(%3, %1) : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
    %5 = "tx8be.ChannelNorm"(%arg0) {direction = true} : (tensor<2x4xf32>) -> tensor<2x4xf32>
    "func.return"(%4, %5) : (tensor<2x4xf32>, tensor<2x4xf32>) -> ()
  }) {function_type = (tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>), sym_name = "main"} : () -> ()
}) {tx8.next_id = 6 : i64} : () -> ()

// CHECK:      %6 = "tx8be.Group"(%arg0)
// CHECK:        %2 = "tx8be.MatMul"
// CHECK-NEXT:   %3 = "tx8be.ChannelNorm"(%2)
// CHECK-NEXT:   %4 = "tx8be.Add"(%3, %1)
// CHECK-NEXT:   "tx8be.Return"(%4)
// CHECK-NEXT: }) {group_rule = "hdfg:opu", hdfg_path = ["ipa", "add"]
// CHECK-NEXT: %5 = "tx8be.ChannelNorm"(%arg0)
// CHECK-NEXT: "func.return"(%6, %5)
