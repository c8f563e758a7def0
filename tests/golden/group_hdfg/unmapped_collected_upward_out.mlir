// RUN: tx8lab opt %s -p 'group-hdfg{unmapped=out}' | filecheck %s
// The same module as unmapped_collected_upward.mlir with unmapped=out (the earlier
// reading, not the seed's): ops outside the op map stay out, the virtual Reshape reads no
// value of a group so it stays out too, and CollectInputs stops at every compute op: the
// group holds the Add, its Constant and the Relu only.
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<2x4xf32>):
    %0 = "tx8be.Constant"() {dtype = "f32", value = dense<"0x0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F"> : tensor<8xf32>} : () -> tensor<8xf32>
    %1 = "tx8be.Neg"(%arg0) : (tensor<2x4xf32>) -> tensor<2x4xf32>
    %2 = "tx8be.Reshape"(%1) {shape = array<i64: 8>} : (tensor<2x4xf32>) -> tensor<8xf32>
    %3 = "tx8be.Add"(%2, %0) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
    %4 = "tx8be.Relu"(%3) : (tensor<8xf32>) -> tensor<8xf32>
    "func.return"(%4) : (tensor<8xf32>) -> ()
  }) {function_type = (tensor<2x4xf32>) -> tensor<8xf32>, sym_name = "main"} : () -> ()
}) {tx8.next_id = 5 : i64} : () -> ()

// CHECK:      %1 = "tx8be.Neg"(%arg0)
// CHECK-NEXT: %2 = "tx8be.Reshape"(%1)
// CHECK-NEXT: %5 = "tx8be.Group"(%2)
// CHECK-NEXT: ^bb0(%b5_0_0: tensor<8xf32>):
// CHECK-NEXT:   %0 = "tx8be.Constant"()
// CHECK-NEXT:   %3 = "tx8be.Add"(%b5_0_0, %0)
// CHECK-NEXT:   %4 = "tx8be.Relu"(%3)
// CHECK-NEXT:   "tx8be.Return"(%4)
// CHECK-NEXT: }) {group_rule = "hdfg:opu", hdfg_path = ["add_pre", "compare"]
// CHECK-NEXT: "func.return"(%5)
