// RUN: tx8lab opt %s -p 'group-hdfg' | filecheck %s
// Seed 002 (the default, unmapped=seed): the Neg has no op-map entry, so FindMatch maps it
// "virtually" and it joins the current group (AddToGroup) without taking a node; last_match
// stays at the ipa, so the Add that reads the conv and the Neg follows on the adder in the
// same trip (ipa > add). With unmapped=out the Neg stays out and the Add restarts for
// convexity (convexity_restart.mlir, the same module).
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
// CHECK-NEXT: ^bb0(%b4_0_0: tensor<1x4x4x2xf32>):
// CHECK-NEXT:   %0 = "tx8be.Constant"()
// CHECK-NEXT:   %1 = "tx8be.Conv2d"(%b4_0_0, %0)
// CHECK-NEXT:   %2 = "tx8be.Neg"(%1)
// CHECK-NEXT:   %3 = "tx8be.Add"(%1, %2)
// CHECK-NEXT:   "tx8be.Return"(%3)
// CHECK-NEXT: }) {group_rule = "hdfg:opu", hdfg_path = ["ipa", "add"]
// CHECK-NEXT: "func.return"(%4)
