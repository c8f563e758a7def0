// RUN: tx8lab opt %s -p 'group-pattern{ddr_kinds=Reshape patterns_file=tests/golden/group_pattern/need_store_pruning.txt}' | filecheck %s
// With Reshape working in DDR (need_store = need_load = 0) the seed's
// 'if (!needStore && needLoad) continue' skips the Neg after it: the longer sequence
// Relu Reshape Neg cannot match and Relu Reshape is the group.
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<1x4x4x8xf32>):
    %0 = "tx8be.Relu"(%arg0) : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
    %1 = "tx8be.Reshape"(%0) {shape = array<i64: 16, 8>} : (tensor<1x4x4x8xf32>) -> tensor<16x8xf32>
    %2 = "tx8be.Neg"(%1) : (tensor<16x8xf32>) -> tensor<16x8xf32>
    "func.return"(%2) : (tensor<16x8xf32>) -> ()
  }) {function_type = (tensor<1x4x4x8xf32>) -> tensor<16x8xf32>, sym_name = "main"} : () -> ()
}) {tx8.next_id = 3 : i64} : () -> ()

// CHECK:      %3 = "tx8be.Group"(%arg0) ({
// CHECK:        %0 = "tx8be.Relu"
// CHECK-NEXT:   %1 = "tx8be.Reshape"(%0)
// CHECK-NEXT:   "tx8be.Return"(%1)
// CHECK-NEXT: }) {group_id = 0 : i64, group_pattern = "Relu Reshape"
// CHECK-NEXT: %2 = "tx8be.Neg"(%3)
