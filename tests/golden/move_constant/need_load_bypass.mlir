// RUN: tx8lab opt %s -p 'move-constant' | filecheck %s
// needLoad from the users: the Embedding reads its table (operand 0, need_load bit clear)
// in DDR, so that LoadConst gets bypasscodegen; the bias feeds an Add, which loads it.
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<1x4xi32>):
    %0 = "tx8be.Constant"() {dtype = "f16", shape = array<i64: 16, 8>, value = #tx8be.random<seed = 1 : i64, distribution = "normal", scale = 0.35355339059327373 : f64, offset = 0.0 : f64>} : () -> tensor<16x8xf16>
    %1 = "tx8be.Constant"() {dtype = "f16", value = dense<"0x000000300034003600380039003A003B"> : tensor<8xf16>} : () -> tensor<8xf16>
    %2 = "tx8be.Embedding"(%0, %arg0) : (tensor<16x8xf16>, tensor<1x4xi32>) -> tensor<1x4x8xf16>
    %3 = "tx8be.Add"(%2, %1) : (tensor<1x4x8xf16>, tensor<8xf16>) -> tensor<1x4x8xf16>
    "func.return"(%3) : (tensor<1x4x8xf16>) -> ()
  }) {function_type = (tensor<1x4xi32>) -> tensor<1x4x8xf16>, sym_name = "main"} : () -> ()
}) {tx8.next_id = 4 : i64} : () -> ()


// CHECK:      %0 = "tx8be.LoadConst"() {bypasscodegen = true, const_id = 0 : i64, dtype = "f16", shape = array<i64: 16, 8>
// CHECK-NEXT: %1 = "tx8be.LoadConst"() {const_id = 1 : i64, dtype = "f16", value = dense<
// CHECK-NEXT: %2 = "tx8be.Embedding"(%0, %arg0)
// CHECK-NEXT: %3 = "tx8be.Add"(%2, %1)
// CHECK-NOT:  tx8be.Constant"
// CHECK:      tx8.const_threshold_bytes = 65536
