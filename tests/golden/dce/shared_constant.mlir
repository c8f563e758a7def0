// RUN: tx8lab opt %s -p 'dce' | filecheck %s
// %0 is shared by a live Add and a dead Mul: it stays. %1 is used only by the dead Mul
// and goes with it. The RandomInit weight %2 has no user and goes too.
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<2xf32>):
    %0 = "tx8be.Constant"() {value = dense<[1.0, 2.0]> : tensor<2xf32>} : () -> tensor<2xf32>
    %1 = "tx8be.Constant"() {value = dense<[3.0, 4.0]> : tensor<2xf32>} : () -> tensor<2xf32>
    %2 = "tx8be.Constant"() {dtype = "f32", shape = array<i64: 2>, value = #tx8be.random<seed = 7 : i64, distribution = "normal", scale = 1.0 : f64, offset = 0.0 : f64>} : () -> tensor<2xf32>
    %3 = "tx8be.Add"(%arg0, %0) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    %4 = "tx8be.Mul"(%0, %1) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    "func.return"(%3) : (tensor<2xf32>) -> ()
  }) {function_type = (tensor<2xf32>) -> tensor<2xf32>, sym_name = "main"} : () -> ()
}) : () -> ()

// CHECK:      ^bb0(%arg0: tensor<2xf32>):
// CHECK-NEXT:   %0 = "tx8be.Constant"() {value = dense<"0x0000803F00000040"> : tensor<2xf32>}
// CHECK-NEXT:   %3 = "tx8be.Add"(%arg0, %0)
// CHECK-NEXT:   "func.return"(%3)
// CHECK-NOT:  tx8be.Mul
// CHECK-NOT:  tx8be.random
