// RUN: tx8lab opt %s -p 'move-constant{threshold_bytes=4096}' | filecheck %s
// The threshold knob overrides the seed's 4 KiB x tiles: with 4096 B the 16x256 weight
// (8192 B) is large too and comes before the 512 B one; the module records the value used.
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<1x256xf16>):
    %0 = "tx8be.Constant"() {dtype = "f16", shape = array<i64: 256>, value = #tx8be.random<seed = 1 : i64, distribution = "normal", scale = 0.0625 : f64, offset = 0.0 : f64>} : () -> tensor<256xf16>
    %1 = "tx8be.Constant"() {dtype = "f16", shape = array<i64: 256, 256>, value = #tx8be.random<seed = 2 : i64, distribution = "normal", scale = 0.0625 : f64, offset = 0.0 : f64>} : () -> tensor<256x256xf16>
    %2 = "tx8be.Constant"() {dtype = "f16", shape = array<i64: 16, 256>, value = #tx8be.random<seed = 3 : i64, distribution = "normal", scale = 0.0625 : f64, offset = 0.0 : f64>} : () -> tensor<16x256xf16>
    %3 = "tx8be.Add"(%arg0, %0) : (tensor<1x256xf16>, tensor<256xf16>) -> tensor<1x256xf16>
    %4 = "tx8be.MatMul"(%3, %1) : (tensor<1x256xf16>, tensor<256x256xf16>) -> tensor<1x256xf16>
    %5 = "tx8be.Mul"(%4, %2) : (tensor<1x256xf16>, tensor<16x256xf16>) -> tensor<16x256xf16>
    "func.return"(%5) : (tensor<16x256xf16>) -> ()
  }) {function_type = (tensor<1x256xf16>) -> tensor<16x256xf16>, sym_name = "main"} : () -> ()
}) {tx8.next_id = 6 : i64} : () -> ()


// CHECK:      %0 = "tx8be.LoadConst"() {const_id = 2 : i64, dtype = "f16", shape = array<i64: 256>
// CHECK-NEXT: %1 = "tx8be.LoadConst"() {const_id = 0 : i64, dtype = "f16", shape = array<i64: 256, 256>
// CHECK-NEXT: %2 = "tx8be.LoadConst"() {const_id = 1 : i64, dtype = "f16", shape = array<i64: 16, 256>
// CHECK:      tx8.const_threshold_bytes = 4096
