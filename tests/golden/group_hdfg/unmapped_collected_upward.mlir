// RUN: tx8lab opt %s -p 'group-hdfg' | filecheck %s
// Seed 002 (the default, unmapped=seed): the Neg and the Reshape have no op-map entry and
// are visited before any group exists, so they wait. When the Add opens the first group
// from the source (add_pre), AddToGroup's CollectInputs walks up and collects them with
// the Constant: it stops only at "a CallNode ... in op_map" ("aim to collect nodes that
// cannot be mapped via hdfg.op_map e.g. tuple, const, expand_dims"). The Relu follows on
// the comparator: one group, trip add_pre > compare.
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

// CHECK:      %5 = "tx8be.Group"(%arg0)
// CHECK-NEXT: ^bb0(%b5_0_0: tensor<2x4xf32>):
// CHECK-NEXT:   %0 = "tx8be.Constant"()
// CHECK-NEXT:   %1 = "tx8be.Neg"(%b5_0_0)
// CHECK-NEXT:   %2 = "tx8be.Reshape"(%1)
// CHECK-NEXT:   %3 = "tx8be.Add"(%2, %0)
// CHECK-NEXT:   %4 = "tx8be.Relu"(%3)
// CHECK-NEXT:   "tx8be.Return"(%4)
// CHECK-NEXT: }) {group_rule = "hdfg:opu", hdfg_path = ["add_pre", "compare"]
// CHECK-NEXT: "func.return"(%5)
