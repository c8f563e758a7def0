// RUN: tx8lab opt %s -p 'group-ldst' | filecheck %s
// The group returns its block argument untouched (nothing in the group computed it, it
// is already in DDR: no store) and the same Relu result twice (one StoreVar serves both
// Return operands).
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<4xf32>):
    %1:3 = "tx8be.Group"(%arg0) ({
    ^bb0(%b1_0_0: tensor<4xf32>):
      %0 = "tx8be.Relu"(%b1_0_0) : (tensor<4xf32>) -> tensor<4xf32>
      "tx8be.Return"(%b1_0_0, %0, %0) : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> ()
    }) : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
    "func.return"(%1#0, %1#1, %1#2) : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> ()
  }) {function_type = (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>), sym_name = "main"} : () -> ()
}) : () -> ()

// CHECK:      ^bb0(%b1_0_0: tensor<4xf32>):
// CHECK-NEXT:   %2 = "tx8be.LoadVar"(%b1_0_0)
// CHECK-NEXT:   %0 = "tx8be.Relu"(%2)
// CHECK-NEXT:   %3 = "tx8be.StoreVar"(%0)
// CHECK-NEXT:   "tx8be.Return"(%b1_0_0, %3, %3)
// CHECK-NEXT: }) {group_tag = 0 : i64}
