// RUN: tx8lab opt %s -p 'move-constant{per_use=false}' | filecheck %s
// Users that disagree, one shared LoadConst: it is loaded, since the Gemm needs it.
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<1x4xi32>):
    %0 = "tx8be.Constant"() {dtype = "f16", shape = array<i64: 16, 8>, value = #tx8be.random<seed = 1 : i64, distribution = "normal", scale = 0.35355339059327373 : f64, offset = 0.0 : f64>} : () -> tensor<16x8xf16>
    %1 = "tx8be.Embedding"(%0, %arg0) : (tensor<16x8xf16>, tensor<1x4xi32>) -> tensor<1x4x8xf16>
    %2 = "tx8be.Reshape"(%1) {shape = array<i64: 4, 8>} : (tensor<1x4x8xf16>) -> tensor<4x8xf16>
    %3 = "tx8be.Gemm"(%2, %0) {trans_b = true} : (tensor<4x8xf16>, tensor<16x8xf16>) -> tensor<4x16xf16>
    "func.return"(%3) : (tensor<4x16xf16>) -> ()
  }) {function_type = (tensor<1x4xi32>) -> tensor<4x16xf16>, sym_name = "main"} : () -> ()
}) {tx8.next_id = 4 : i64} : () -> ()


// CHECK:      %0 = "tx8be.LoadConst"() {const_id = 0 : i64, dtype = "f16", shape = array<i64: 16, 8>
// CHECK-NEXT: %1 = "tx8be.Embedding"(%0, %arg0)
// CHECK:      %3 = "tx8be.Gemm"(%2, %0)
// CHECK-NOT:  bypasscodegen
