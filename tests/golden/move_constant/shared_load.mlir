// RUN: tx8lab opt %s -p 'move-constant{per_use=false}' | filecheck %s
// per_use=false: one LoadConst per constant, read by every user (not the seed's way; const-norm's
// processMultiUse then has nothing to unify). It keeps the Constant's op id.
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<1x8xf32>):
    %0 = "tx8be.Constant"() {dtype = "f32", value = dense<"0x000000000000803E0000003F0000403F0000803F0000A03F0000C03F0000E03F"> : tensor<8xf32>} : () -> tensor<8xf32>
    %1 = "tx8be.Add"(%arg0, %0) : (tensor<1x8xf32>, tensor<8xf32>) -> tensor<1x8xf32>
    %2 = "tx8be.Mul"(%1, %0) : (tensor<1x8xf32>, tensor<8xf32>) -> tensor<1x8xf32>
    "func.return"(%2) : (tensor<1x8xf32>) -> ()
  }) {function_type = (tensor<1x8xf32>) -> tensor<1x8xf32>, sym_name = "main"} : () -> ()
}) {tx8.next_id = 3 : i64} : () -> ()


// CHECK:      %0 = "tx8be.LoadConst"() {const_id = 0 : i64, dtype = "f32", value = dense<
// CHECK-NEXT: %1 = "tx8be.Add"(%arg0, %0)
// CHECK-NEXT: %2 = "tx8be.Mul"(%1, %0)
// CHECK-NOT:  LoadConst
// CHECK:      tx8.next_id = 3
