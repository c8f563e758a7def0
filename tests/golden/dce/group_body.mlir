// RUN: tx8lab opt %s -p 'dce' | filecheck %s
// Inside a live group the dead Abs goes; the group keeps its signature. The second group
// has no used result and no side effect: it goes whole, with its body.
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<2xf32>):
    %0 = "tx8be.Group"(%arg0) ({
    ^bb0(%b0_0_0: tensor<2xf32>):
      %1 = "tx8be.Neg"(%b0_0_0) : (tensor<2xf32>) -> tensor<2xf32>
      %2 = "tx8be.Abs"(%b0_0_0) : (tensor<2xf32>) -> tensor<2xf32>
      "tx8be.Return"(%1) : (tensor<2xf32>) -> ()
    }) : (tensor<2xf32>) -> tensor<2xf32>
    %3 = "tx8be.Group"(%0) ({
    ^bb0(%b3_0_0: tensor<2xf32>):
      %4 = "tx8be.Relu"(%b3_0_0) : (tensor<2xf32>) -> tensor<2xf32>
      "tx8be.Return"(%4) : (tensor<2xf32>) -> ()
    }) : (tensor<2xf32>) -> tensor<2xf32>
    "func.return"(%0) : (tensor<2xf32>) -> ()
  }) {function_type = (tensor<2xf32>) -> tensor<2xf32>, sym_name = "main"} : () -> ()
}) : () -> ()

// CHECK:      %0 = "tx8be.Group"(%arg0) ({
// CHECK-NEXT: ^bb0(%b0_0_0: tensor<2xf32>):
// CHECK-NEXT:   %1 = "tx8be.Neg"(%b0_0_0)
// CHECK-NEXT:   "tx8be.Return"(%1)
// CHECK-NEXT: }) : (tensor<2xf32>) -> tensor<2xf32>
// CHECK-NEXT: "func.return"(%0)
// CHECK-NOT:  tx8be.Abs
// CHECK-NOT:  tx8be.Relu
