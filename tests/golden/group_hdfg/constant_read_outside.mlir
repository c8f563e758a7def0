// RUN: tx8lab opt %s -p 'group-hdfg' | filecheck %s
// The Constant %0 is read by the group's Add and, before it, by the ungrouped Sigmoid:
// collecting it would make the group produce the Sigmoid's input, so it stays outside and
// the group reads it as an operand.
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<4xf32>):
    %0 = "tx8be.Constant"() {dtype = "f32", value = dense<"0x0000003F0000003F0000003F0000003F"> : tensor<4xf32>} : () -> tensor<4xf32>
    %1 = "tx8be.Sigmoid"(%0) : (tensor<4xf32>) -> tensor<4xf32>
    %2 = "tx8be.Relu"(%arg0) : (tensor<4xf32>) -> tensor<4xf32>
    %3 = "tx8be.Add"(%2, %0) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    "func.return"(%3, %1) : (tensor<4xf32>, tensor<4xf32>) -> ()
  }) {function_type = (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>), sym_name = "main"} : () -> ()
}) {tx8.next_id = 4 : i64} : () -> ()

// CHECK:      %0 = "tx8be.Constant"()
// CHECK-NEXT: %1 = "tx8be.Sigmoid"(%0)
// CHECK-NEXT: %4 = "tx8be.Group"(%arg0, %0)
// CHECK-NEXT: ^bb0(
// CHECK-NEXT:   %2 = "tx8be.Relu"(%b4_0_0)
// CHECK-NEXT:   %3 = "tx8be.Add"(%2, %b4_0_1)
// CHECK-NEXT:   "tx8be.Return"(%3)
// CHECK-NEXT: }) {group_rule = "hdfg:opu", hdfg_path = ["compare", "res_add"]
