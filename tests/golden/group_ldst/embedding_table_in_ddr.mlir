// RUN: tx8lab opt %s -p 'group-ldst' | filecheck %s
// Embedding's needLoad bit 0 (the table) is clear (seed: "mask, embedding 就不需要"): only
// the indices get a LoadVar; the table stays a block argument read in DDR.
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<10x4xf32>, %arg1: tensor<3xi32>):
    %1 = "tx8be.Group"(%arg0, %arg1) ({
    ^bb0(%b1_0_0: tensor<10x4xf32>, %b1_0_1: tensor<3xi32>):
      %0 = "tx8be.Embedding"(%b1_0_0, %b1_0_1) : (tensor<10x4xf32>, tensor<3xi32>) -> tensor<3x4xf32>
      "tx8be.Return"(%0) : (tensor<3x4xf32>) -> ()
    }) {group_rule = "single", tx8.created_by = "group-optimization"} : (tensor<10x4xf32>, tensor<3xi32>) -> tensor<3x4xf32>
    "func.return"(%1) : (tensor<3x4xf32>) -> ()
  }) {function_type = (tensor<10x4xf32>, tensor<3xi32>) -> tensor<3x4xf32>, sym_name = "main"} : () -> ()
}) {tx8.next_id = 2 : i64} : () -> ()

// CHECK:      ^bb0(%b1_0_0: tensor<10x4xf32>, %b1_0_1: tensor<3xi32>):
// CHECK-NEXT:   %2 = "tx8be.LoadVar"(%b1_0_1)
// CHECK-NEXT:   %0 = "tx8be.Embedding"(%b1_0_0, %2)
// CHECK-NEXT:   %3 = "tx8be.StoreVar"(%0)
// CHECK-NEXT:   "tx8be.Return"(%3)
// CHECK-NEXT: }) {group_rule = "single", group_tag = 0 : i64
// CHECK-NOT:  LoadVar
