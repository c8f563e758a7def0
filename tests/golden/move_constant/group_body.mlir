// RUN: tx8lab opt %s -p 'move-constant' | filecheck %s
// Group bodies: the constant inside the group body becomes a LoadConst there. The table
// outside feeds the group, whose body reads that argument only in an Embedding (no load),
// so the group does not load it either: bypasscodegen.
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<1x4xi32>):
    %0 = "tx8be.Constant"() {dtype = "f16", shape = array<i64: 16, 8>, value = #tx8be.random<seed = 1 : i64, distribution = "normal", scale = 0.35355339059327373 : f64, offset = 0.0 : f64>} : () -> tensor<16x8xf16>
    %4 = "tx8be.Group"(%0, %arg0) ({
    ^bb0(%b4_0_0: tensor<16x8xf16>, %b4_0_1: tensor<1x4xi32>):
      %1 = "tx8be.Constant"() {dtype = "f16", value = dense<"0x000000300034003600380039003A003B"> : tensor<8xf16>} : () -> tensor<8xf16>
      %2 = "tx8be.Embedding"(%b4_0_0, %b4_0_1) : (tensor<16x8xf16>, tensor<1x4xi32>) -> tensor<1x4x8xf16>
      %3 = "tx8be.Add"(%2, %1) : (tensor<1x4x8xf16>, tensor<8xf16>) -> tensor<1x4x8xf16>
      "tx8be.Return"(%3) : (tensor<1x4x8xf16>) -> ()
    }) : (tensor<16x8xf16>, tensor<1x4xi32>) -> tensor<1x4x8xf16>
    "func.return"(%4) : (tensor<1x4x8xf16>) -> ()
  }) {function_type = (tensor<1x4xi32>) -> tensor<1x4x8xf16>, sym_name = "main"} : () -> ()
}) {tx8.next_id = 5 : i64} : () -> ()


// CHECK:      %0 = "tx8be.LoadConst"() {bypasscodegen = true, const_id = 0 : i64
// CHECK-NEXT: %4 = "tx8be.Group"(%0, %arg0)
// CHECK:      %1 = "tx8be.LoadConst"() {const_id = 1 : i64, dtype = "f16", value = dense<
// CHECK-NEXT: %2 = "tx8be.Embedding"(%b4_0_0, %b4_0_1)
// CHECK-NEXT: %3 = "tx8be.Add"(%2, %1)
// CHECK-NOT:  tx8be.Constant"
