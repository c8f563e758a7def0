// RUN: tx8lab opt %s -p 'group-ldst' | filecheck %s
// Two body ops read the same input: one LoadVar feeds both (the seed code's usersLoad).
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<4xf32>):
    %3 = "tx8be.Group"(%arg0) ({
    ^bb0(%b3_0_0: tensor<4xf32>):
      %0 = "tx8be.Relu"(%b3_0_0) : (tensor<4xf32>) -> tensor<4xf32>
      %1 = "tx8be.Neg"(%b3_0_0) : (tensor<4xf32>) -> tensor<4xf32>
      %2 = "tx8be.Add"(%0, %1) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
      "tx8be.Return"(%2) : (tensor<4xf32>) -> ()
    }) : (tensor<4xf32>) -> tensor<4xf32>
    "func.return"(%3) : (tensor<4xf32>) -> ()
  }) {function_type = (tensor<4xf32>) -> tensor<4xf32>, sym_name = "main"} : () -> ()
}) {tx8.next_id = 4 : i64} : () -> ()

// CHECK:      ^bb0(%b3_0_0: tensor<4xf32>):
// CHECK-NEXT:   %4 = "tx8be.LoadVar"(%b3_0_0)
// CHECK-NEXT:   %0 = "tx8be.Relu"(%4)
// CHECK-NEXT:   %1 = "tx8be.Neg"(%4)
// CHECK-NEXT:   %2 = "tx8be.Add"(%0, %1)
// CHECK-NEXT:   %5 = "tx8be.StoreVar"(%2)
// CHECK-NEXT:   "tx8be.Return"(%5)
// CHECK-NOT:  LoadVar
