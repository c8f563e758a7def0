// RUN: tx8lab opt %s -p 'move-constant' | filecheck %s
// One LoadConst per use, as the seed's ConstantToLoadConst creates them inside its loop over
// the uses: the Add and the Mul each read their own LoadConst, both with const id 0. The
// first keeps the Constant's op id, the second is created by move-constant; both stand
// where the Constant stood.
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
// CHECK-NEXT: %3 = "tx8be.LoadConst"() {const_id = 0 : i64, dtype = "f32", tx8.created_by = "move-constant", value = dense<
// CHECK-NEXT: %1 = "tx8be.Add"(%arg0, %0)
// CHECK-NEXT: %2 = "tx8be.Mul"(%1, %3)
// CHECK:      tx8.next_id = 4
