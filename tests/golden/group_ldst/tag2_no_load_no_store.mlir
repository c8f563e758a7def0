// RUN: tx8lab opt %s -p 'group-ldst' | filecheck %s
// A group that neither loads nor stores gets group_tag = 2 (its ops work on DDR, so
// group-cost does not split it). The Embedding reads its table in DDR (needLoad bit 0
// clear), its indices come from a bypasscodegen LoadConst (no code: not a load), and the
// group's only output is its block argument passed through (nothing to store). The op
// library marks no result store-free yet, so a group that computes an output is tag 0.
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<10x4xf32>):
    %2 = "tx8be.Group"(%arg0) ({
    ^bb0(%b2_0_0: tensor<10x4xf32>):
      %0 = "tx8be.LoadConst"() {bypasscodegen = true, const_id = 0 : i64, dtype = "i32", value = dense<"0x010000000200000003000000"> : tensor<3xi32>} : () -> tensor<3xi32>
      %1 = "tx8be.Embedding"(%b2_0_0, %0) : (tensor<10x4xf32>, tensor<3xi32>) -> tensor<3x4xf32>
      "tx8be.Return"(%b2_0_0) : (tensor<10x4xf32>) -> ()
    }) : (tensor<10x4xf32>) -> tensor<10x4xf32>
    "func.return"(%2) : (tensor<10x4xf32>) -> ()
  }) {function_type = (tensor<10x4xf32>) -> tensor<10x4xf32>, sym_name = "main"} : () -> ()
}) : () -> ()

// CHECK:      ^bb0(%b2_0_0: tensor<10x4xf32>):
// CHECK-NEXT:   %0 = "tx8be.LoadConst"() {bypasscodegen = true
// CHECK-NEXT:   %1 = "tx8be.Embedding"(%b2_0_0, %0)
// CHECK-NEXT:   "tx8be.Return"(%b2_0_0)
// CHECK-NEXT: }) {group_tag = 2 : i64}
// CHECK-NOT:  LoadVar
// CHECK-NOT:  StoreVar
