// RUN: tx8lab opt %s -p 'layout-align-opt' | filecheck %s
// RedundantChannelNormErase: two ChannelNorm(true) of the same argument; the second one's
// user reads the first and the second goes.
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<1x4x4x8xf16>):
    %0 = "tx8be.ChannelNorm"(%arg0) {direction = true} : (tensor<1x4x4x8xf16>) -> tensor<1x4x4x8xf16>
    %1 = "tx8be.ChannelNorm"(%arg0) {direction = true} : (tensor<1x4x4x8xf16>) -> tensor<1x4x4x8xf16>
    %2 = "tx8be.Add"(%0, %1) : (tensor<1x4x4x8xf16>, tensor<1x4x4x8xf16>) -> tensor<1x4x4x8xf16>
    %3 = "tx8be.ChannelNorm"(%2) {direction = false} : (tensor<1x4x4x8xf16>) -> tensor<1x4x4x8xf16>
    "func.return"(%3) : (tensor<1x4x4x8xf16>) -> ()
  }) {function_type = (tensor<1x4x4x8xf16>) -> tensor<1x4x4x8xf16>, sym_name = "main"} : () -> ()
}) {tx8.next_id = 4 : i64} : () -> ()

// CHECK: %0 = "tx8be.ChannelNorm"(%arg0) {direction = true}
// CHECK-NOT: %1 =
// CHECK: %2 = "tx8be.Add"(%0, %0)
