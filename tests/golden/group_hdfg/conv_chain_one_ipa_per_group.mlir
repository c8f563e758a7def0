// RUN: tx8lab opt %s -p 'group-hdfg' | filecheck %s
// The seed 002 conv chain: pad -> conv -> relu -> pad -> conv -> relu -> pool. The HDFG has
// one pad and one ipa per trip (concat > add_pre > mul_pre > pad > ipa > mul > add > ...),
// so the second Pad cannot follow the first trip's compare: FindMatch restarts from the
// source and opens a second group. Each group holds one Pad and one Conv2d, with its
// weight collected upward; the MaxPool2d follows the compare in the second trip.
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<1x4x4x1xf32>):
    %0 = "tx8be.Pad"(%arg0) {pads = array<i64: 0, 1, 1, 0, 0, 1, 1, 0>} : (tensor<1x4x4x1xf32>) -> tensor<1x6x6x1xf32>
    %1 = "tx8be.Constant"() {dtype = "f32", value = dense<"0x0000803E0000803E0000803E0000803E0000803E0000803E0000803E0000803E0000803E"> : tensor<1x3x3x1xf32>} : () -> tensor<1x3x3x1xf32>
    %2 = "tx8be.Conv2d"(%0, %1) : (tensor<1x6x6x1xf32>, tensor<1x3x3x1xf32>) -> tensor<1x4x4x1xf32>
    %3 = "tx8be.Relu"(%2) : (tensor<1x4x4x1xf32>) -> tensor<1x4x4x1xf32>
    %4 = "tx8be.Pad"(%3) {pads = array<i64: 0, 1, 1, 0, 0, 1, 1, 0>} : (tensor<1x4x4x1xf32>) -> tensor<1x6x6x1xf32>
    %5 = "tx8be.Constant"() {dtype = "f32", value = dense<"0x000080BE000080BE000080BE000080BE000080BE000080BE000080BE000080BE000080BE"> : tensor<1x3x3x1xf32>} : () -> tensor<1x3x3x1xf32>
    %6 = "tx8be.Conv2d"(%4, %5) : (tensor<1x6x6x1xf32>, tensor<1x3x3x1xf32>) -> tensor<1x4x4x1xf32>
    %7 = "tx8be.Relu"(%6) : (tensor<1x4x4x1xf32>) -> tensor<1x4x4x1xf32>
    %8 = "tx8be.MaxPool2d"(%7) {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x4x4x1xf32>) -> tensor<1x2x2x1xf32>
    "func.return"(%8) : (tensor<1x2x2x1xf32>) -> ()
  }) {function_type = (tensor<1x4x4x1xf32>) -> tensor<1x2x2x1xf32>, sym_name = "main"} : () -> ()
}) {tx8.next_id = 9 : i64} : () -> ()

// CHECK:      %9 = "tx8be.Group"(%arg0)
// CHECK-NEXT: ^bb0(%b9_0_0: tensor<1x4x4x1xf32>):
// CHECK-NEXT:   %0 = "tx8be.Pad"(%b9_0_0)
// CHECK-NEXT:   %1 = "tx8be.Constant"()
// CHECK-NEXT:   %2 = "tx8be.Conv2d"(%0, %1)
// CHECK-NEXT:   %3 = "tx8be.Relu"(%2)
// CHECK-NEXT:   "tx8be.Return"(%3)
// CHECK-NEXT: }) {group_rule = "hdfg:opu", hdfg_path = ["pad", "ipa", "compare"], tx8.created_by = "group-hdfg"}
// CHECK-NEXT: %10 = "tx8be.Group"(%9)
// CHECK-NEXT: ^bb0(%b10_0_0: tensor<1x4x4x1xf32>):
// CHECK-NEXT:   %4 = "tx8be.Pad"(%b10_0_0)
// CHECK-NEXT:   %5 = "tx8be.Constant"()
// CHECK-NEXT:   %6 = "tx8be.Conv2d"(%4, %5)
// CHECK-NEXT:   %7 = "tx8be.Relu"(%6)
// CHECK-NEXT:   %8 = "tx8be.MaxPool2d"(%7)
// CHECK-NEXT:   "tx8be.Return"(%8)
// CHECK-NEXT: }) {group_rule = "hdfg:opu", hdfg_path = ["pad", "ipa", "compare", "pool"], tx8.created_by = "group-hdfg"}
// CHECK-NEXT: "func.return"(%10)
