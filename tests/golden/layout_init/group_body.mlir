// RUN: tx8lab opt %s -p 'layout-init' | filecheck %s
// Ops inside tx8be.Group bodies are initialised too; the groups themselves are Unknown.
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<1x4x4x8xf32>, %arg1: tensor<8x1x1x8xf32>):
    %0 = "tx8be.Group"(%arg0) ({
    ^bb0(%b0_0_0: tensor<1x4x4x8xf32>):
      %1 = "tx8be.Relu"(%b0_0_0) : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
      "tx8be.Return"(%1) : (tensor<1x4x4x8xf32>) -> ()
    }) : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
    %2 = "tx8be.Conv2d"(%0, %arg1) : (tensor<1x4x4x8xf32>, tensor<8x1x1x8xf32>) -> tensor<1x4x4x8xf32>
    %3 = "tx8be.Group"(%2) ({
    ^bb0(%b3_0_0: tensor<1x4x4x8xf32>):
      %4 = "tx8be.Abs"(%b3_0_0) : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
      "tx8be.Return"(%4) : (tensor<1x4x4x8xf32>) -> ()
    }) : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
    "func.return"(%3) : (tensor<1x4x4x8xf32>) -> ()
  }) {function_type = (tensor<1x4x4x8xf32>, tensor<8x1x1x8xf32>) -> tensor<1x4x4x8xf32>, sym_name = "main"} : () -> ()
}) {tx8.next_id = 5 : i64} : () -> ()

// CHECK:      %0 = "tx8be.Group"(%arg0) ({
// CHECK:        %1 = "tx8be.Relu"(%b0_0_0) {layout_str = "Unknown"}
// CHECK:      }) {layout_str = "Unknown"}
// CHECK-NEXT: %2 = "tx8be.Conv2d"(%0, %arg1) {layout_str = "NHWC-OHWI-NHWC"}
// CHECK-NEXT: %3 = "tx8be.Group"(%2) ({
// CHECK:        %4 = "tx8be.Abs"(%b3_0_0) {layout_str = "Unknown"}
// CHECK:      }) {layout_str = "Unknown"}
