// RUN: tx8lab opt %s -p 'group-pattern{opt_group=auto}' | filecheck %s
// opt_group=auto picks transformer (no Conv2d); its attention pattern groups
// MatMul Mul Softmax MatMul; the scale Constant stays outside as the group's operand.
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<1x2x8x16xf32>, %arg1: tensor<1x2x16x8xf32>, %arg2: tensor<1x2x8x16xf32>):
    %0 = "tx8be.MatMul"(%arg0, %arg1) : (tensor<1x2x8x16xf32>, tensor<1x2x16x8xf32>) -> tensor<1x2x8x8xf32>
    %1 = "tx8be.Constant"() {dtype = "f32", value = dense<"0x0000803E"> : tensor<f32>} : () -> tensor<f32>
    %2 = "tx8be.Mul"(%0, %1) : (tensor<1x2x8x8xf32>, tensor<f32>) -> tensor<1x2x8x8xf32>
    %3 = "tx8be.Softmax"(%2) {axis = -1 : i64} : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
    %4 = "tx8be.MatMul"(%3, %arg2) : (tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
    "func.return"(%4) : (tensor<1x2x8x16xf32>) -> ()
  }) {function_type = (tensor<1x2x8x16xf32>, tensor<1x2x16x8xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>, sym_name = "main"} : () -> ()
}) {tx8.next_id = 5 : i64} : () -> ()

// CHECK:      %1 = "tx8be.Constant"()
// CHECK-NEXT: %5 = "tx8be.Group"(%arg0, %arg1, %1, %arg2) ({
// CHECK:        %0 = "tx8be.MatMul"(%b5_0_0, %b5_0_1)
// CHECK-NEXT:   %2 = "tx8be.Mul"(%0, %b5_0_2)
// CHECK-NEXT:   %3 = "tx8be.Softmax"(%2)
// CHECK-NEXT:   %4 = "tx8be.MatMul"(%3, %b5_0_3)
// CHECK-NEXT:   "tx8be.Return"(%4)
// CHECK-NEXT: }) {group_id = 0 : i64, group_pattern = "MatMul Mul Softmax MatMul", group_rule = "pattern:transformer:{{[0-9]+}}"
