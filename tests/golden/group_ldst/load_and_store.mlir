// RUN: tx8lab opt %s -p 'group-ldst' | filecheck %s
// Each group input read by an op whose needLoad bit is set gets a LoadVar at the group's
// entry; each output whose producer's needStore bit is set a StoreVar before the Return,
// which returns it. The groups load and store: group_tag = 0.
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<4xf32>):
    %2 = "tx8be.Group"(%arg0) ({
    ^bb0(%b2_0_0: tensor<4xf32>):
      %0 = "tx8be.Neg"(%b2_0_0) : (tensor<4xf32>) -> tensor<4xf32>
      "tx8be.Return"(%0) : (tensor<4xf32>) -> ()
    }) {group_rule = "single", tx8.created_by = "group-optimization"} : (tensor<4xf32>) -> tensor<4xf32>
    %3 = "tx8be.Group"(%2) ({
    ^bb0(%b3_0_0: tensor<4xf32>):
      %1 = "tx8be.Relu"(%b3_0_0) : (tensor<4xf32>) -> tensor<4xf32>
      "tx8be.Return"(%1) : (tensor<4xf32>) -> ()
    }) {group_rule = "single", tx8.created_by = "group-optimization"} : (tensor<4xf32>) -> tensor<4xf32>
    "func.return"(%3) : (tensor<4xf32>) -> ()
  }) {function_type = (tensor<4xf32>) -> tensor<4xf32>, sym_name = "main"} : () -> ()
}) {tx8.next_id = 4 : i64} : () -> ()

// CHECK:      %2 = "tx8be.Group"(%arg0) ({
// CHECK-NEXT:   ^bb0(%b2_0_0: tensor<4xf32>):
// CHECK-NEXT:   %4 = "tx8be.LoadVar"(%b2_0_0) {tx8.created_by = "group-ldst"}
// CHECK-NEXT:   %0 = "tx8be.Neg"(%4)
// CHECK-NEXT:   %5 = "tx8be.StoreVar"(%0) {tx8.created_by = "group-ldst"}
// CHECK-NEXT:   "tx8be.Return"(%5)
// CHECK-NEXT: }) {group_rule = "single", group_tag = 0 : i64
// CHECK-NEXT: %3 = "tx8be.Group"(%2) ({
// CHECK-NEXT:   ^bb0(%b3_0_0: tensor<4xf32>):
// CHECK-NEXT:   %6 = "tx8be.LoadVar"(%b3_0_0)
// CHECK-NEXT:   %1 = "tx8be.Relu"(%6)
// CHECK-NEXT:   %7 = "tx8be.StoreVar"(%1)
// CHECK-NEXT:   "tx8be.Return"(%7)
// CHECK-NEXT: }) {group_rule = "single", group_tag = 0 : i64
