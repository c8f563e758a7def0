// RUN: tx8lab opt %s -p 'layout-align-opt' | filecheck %s
// Fixpoint: round 1 merges the two ChannelNorms of the scale (RedundantChannelNormErase),
// which leaves the scale with one user, so round 2 erases that one (ConstChannelNormErase).
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<1x4x4x16xf16>):
    %0 = "tx8be.Constant"() {dtype = "f16", shape = array<i64: 16>, value = #tx8be.random<seed = 1 : i64, distribution = "normal", scale = 0.25 : f64, offset = 0.0 : f64>} : () -> tensor<16xf16>
    %1 = "tx8be.ChannelNorm"(%0) {direction = true} : (tensor<16xf16>) -> tensor<16xf16>
    %2 = "tx8be.ChannelNorm"(%0) {direction = true} : (tensor<16xf16>) -> tensor<16xf16>
    %3 = "tx8be.ChannelNorm"(%arg0) {direction = true} : (tensor<1x4x4x16xf16>) -> tensor<1x4x4x16xf16>
    %4 = "tx8be.Mul"(%3, %1) : (tensor<1x4x4x16xf16>, tensor<16xf16>) -> tensor<1x4x4x16xf16>
    %5 = "tx8be.Add"(%4, %2) : (tensor<1x4x4x16xf16>, tensor<16xf16>) -> tensor<1x4x4x16xf16>
    %6 = "tx8be.ChannelNorm"(%5) {direction = false} : (tensor<1x4x4x16xf16>) -> tensor<1x4x4x16xf16>
    "func.return"(%6) : (tensor<1x4x4x16xf16>) -> ()
  }) {function_type = (tensor<1x4x4x16xf16>) -> tensor<1x4x4x16xf16>, sym_name = "main"} : () -> ()
}) {tx8.next_id = 7 : i64} : () -> ()

// CHECK: %0 = "tx8be.Constant"() {dev_info = {{.*}}layout_mode<Cx>
// CHECK-NOT: %1 =
// CHECK-NOT: %2 =
// CHECK: %3 = "tx8be.ChannelNorm"(%arg0) {direction = true}
// CHECK: %4 = "tx8be.Mul"(%3, %0)
// CHECK: %5 = "tx8be.Add"(%4, %0)
