// RUN: tx8lab opt %s -p 'fold-constants{max_bytes=32}' | filecheck %s
// max_bytes=32: the Broadcast of a scalar to 4x4 f32 (64 bytes) stays an op; the 2x2
// one (16 bytes) folds. The size comes from the result type, before computing.
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<4x4xf32>, %arg1: tensor<2x2xf32>):
    %0 = "tx8be.Constant"() {value = dense<1.5> : tensor<f32>} : () -> tensor<f32>
    %1 = "tx8be.Broadcast"(%0) {shape = array<i64: 4, 4>} : (tensor<f32>) -> tensor<4x4xf32>
    %2 = "tx8be.Broadcast"(%0) {shape = array<i64: 2, 2>} : (tensor<f32>) -> tensor<2x2xf32>
    %3 = "tx8be.Add"(%arg0, %1) : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %4 = "tx8be.Add"(%arg1, %2) : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
    "func.return"(%3, %4) : (tensor<4x4xf32>, tensor<2x2xf32>) -> ()
  }) {function_type = (tensor<4x4xf32>, tensor<2x2xf32>) -> (tensor<4x4xf32>, tensor<2x2xf32>), sym_name = "main"} : () -> ()
}) : () -> ()

// CHECK:      %1 = "tx8be.Broadcast"(%0) {shape = array<i64: 4, 4>}
// CHECK-NEXT: %5 = "tx8be.Constant"() {dtype = "f32", tx8.created_by = "fold-constants", value = dense<"0x0000C03F0000C03F0000C03F0000C03F"> : tensor<2x2xf32>}
// CHECK-NEXT: %3 = "tx8be.Add"(%arg0, %1)
// CHECK-NEXT: %4 = "tx8be.Add"(%arg1, %5)
