// RUN: tx8lab opt %s -p 'group-hdfg' | filecheck %s
// A Pad after conv + batch norm runs on pool_pad (the adder's successor), then the MaxPool2d
// on pool: one trip, not a restart at the IPA's pad.
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<1x4x4x2xf32>):
    %0 = "tx8be.Constant"() {dtype = "f32", value = dense<"0x0000003F0000003F0000003F0000003F"> : tensor<2x1x1x2xf32>} : () -> tensor<2x1x1x2xf32>
    %1 = "tx8be.Conv2d"(%arg0, %0) : (tensor<1x4x4x2xf32>, tensor<2x1x1x2xf32>) -> tensor<1x4x4x2xf32>
    %2 = "tx8be.Constant"() {dtype = "f32", value = dense<"0x0000803F0000803F"> : tensor<2xf32>} : () -> tensor<2xf32>
    %3 = "tx8be.Constant"() {dtype = "f32", value = dense<"0x0000000000000000"> : tensor<2xf32>} : () -> tensor<2xf32>
    %4 = "tx8be.Constant"() {dtype = "f32", value = dense<"0xCDCCCC3DCDCCCC3D"> : tensor<2xf32>} : () -> tensor<2xf32>
    %5 = "tx8be.Constant"() {dtype = "f32", value = dense<"0x0000803F0000803F"> : tensor<2xf32>} : () -> tensor<2xf32>
    %6 = "tx8be.BatchNorm_Inference"(%1, %2, %3, %4, %5) : (tensor<1x4x4x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x4x4x2xf32>
    %7 = "tx8be.Pad"(%6) {pads = array<i64: 0, 1, 1, 0, 0, 1, 1, 0>} : (tensor<1x4x4x2xf32>) -> tensor<1x6x6x2xf32>
    %8 = "tx8be.MaxPool2d"(%7) {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x6x6x2xf32>) -> tensor<1x3x3x2xf32>
    "func.return"(%8) : (tensor<1x3x3x2xf32>) -> ()
  }) {function_type = (tensor<1x4x4x2xf32>) -> tensor<1x3x3x2xf32>, sym_name = "main"} : () -> ()
}) {tx8.next_id = 9 : i64} : () -> ()

// CHECK:      %9 = "tx8be.Group"(%arg0)
// CHECK:        %7 = "tx8be.Pad"(%6)
// CHECK-NEXT:   %8 = "tx8be.MaxPool2d"(%7)
// CHECK-NEXT:   "tx8be.Return"(%8)
// CHECK-NEXT: }) {group_rule = "hdfg:opu", hdfg_path = ["ipa", "mul", "add", "pool_pad", "pool"]
// CHECK-NEXT: "func.return"(%9)
