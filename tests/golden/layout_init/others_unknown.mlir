// RUN: tx8lab opt %s -p 'layout-init' | filecheck %s
// No Gemm/Conv: every op is Unknown (layout-transmit will default them by shape).
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<2x8xf32>):
    %0 = "tx8be.Relu"(%arg0) : (tensor<2x8xf32>) -> tensor<2x8xf32>
    %1 = "tx8be.Reshape"(%0) {shape = array<i64: 16>} : (tensor<2x8xf32>) -> tensor<16xf32>
    %2 = "tx8be.Softmax"(%1) : (tensor<16xf32>) -> tensor<16xf32>
    "func.return"(%2) : (tensor<16xf32>) -> ()
  }) {function_type = (tensor<2x8xf32>) -> tensor<16xf32>, sym_name = "main"} : () -> ()
}) {tx8.next_id = 3 : i64} : () -> ()

// CHECK:      %0 = "tx8be.Relu"(%arg0) {layout_str = "Unknown"}
// CHECK-NEXT: %1 = "tx8be.Reshape"(%0) {layout_str = "Unknown", shape = array<i64: 16>}
// CHECK-NEXT: %2 = "tx8be.Softmax"(%1) {layout_str = "Unknown"}
