// RUN: tx8lab opt %s -p 'group-pattern{opt_group=cnn}' | filecheck %s
// The shipped cnn config: the stem conv_bn_act_pool (Conv2d BatchNorm_Inference Relu
// MaxPool2d) and the residual conv_bn_add_act (Conv2d BatchNorm_Inference Add Relu).
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<1x8x8x4xf32>):
    %0 = "tx8be.Constant"() {dtype = "f32", shape = array<i64: 8, 3, 3, 4>, value = #tx8be.random<seed = 1 : i64, distribution = "normal", scale = 0.16666666666666666 : f64, offset = 0.0 : f64>} : () -> tensor<8x3x3x4xf32>
    %1 = "tx8be.Conv2d"(%arg0, %0) {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x8x8x4xf32>, tensor<8x3x3x4xf32>) -> tensor<1x8x8x8xf32>
    %2 = "tx8be.Constant"() {dtype = "f32", shape = array<i64: 1, 1, 1, 8>, value = #tx8be.random<seed = 2 : i64, distribution = "normal", scale = 0.1 : f64, offset = 1.0 : f64>} : () -> tensor<1x1x1x8xf32>
    %3 = "tx8be.Constant"() {dtype = "f32", shape = array<i64: 1, 1, 1, 8>, value = #tx8be.random<seed = 3 : i64, distribution = "normal", scale = 0.02 : f64, offset = 0.0 : f64>} : () -> tensor<1x1x1x8xf32>
    %4 = "tx8be.Constant"() {dtype = "f32", shape = array<i64: 1, 1, 1, 8>, value = #tx8be.random<seed = 4 : i64, distribution = "normal", scale = 0.1 : f64, offset = 0.0 : f64>} : () -> tensor<1x1x1x8xf32>
    %5 = "tx8be.Constant"() {dtype = "f32", shape = array<i64: 1, 1, 1, 8>, value = #tx8be.random<seed = 5 : i64, distribution = "uniform", scale = 0.5 : f64, offset = 1.0 : f64>} : () -> tensor<1x1x1x8xf32>
    %6 = "tx8be.BatchNorm_Inference"(%1, %2, %3, %4, %5) : (tensor<1x8x8x8xf32>, tensor<1x1x1x8xf32>, tensor<1x1x1x8xf32>, tensor<1x1x1x8xf32>, tensor<1x1x1x8xf32>) -> tensor<1x8x8x8xf32>
    %7 = "tx8be.Relu"(%6) : (tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32>
    %8 = "tx8be.MaxPool2d"(%7) {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x8x8x8xf32>) -> tensor<1x4x4x8xf32>
    %9 = "tx8be.Constant"() {dtype = "f32", shape = array<i64: 8, 1, 1, 8>, value = #tx8be.random<seed = 6 : i64, distribution = "normal", scale = 0.35355339059327373 : f64, offset = 0.0 : f64>} : () -> tensor<8x1x1x8xf32>
    %10 = "tx8be.Conv2d"(%8, %9) : (tensor<1x4x4x8xf32>, tensor<8x1x1x8xf32>) -> tensor<1x4x4x8xf32>
    %11 = "tx8be.Constant"() {dtype = "f32", shape = array<i64: 1, 1, 1, 8>, value = #tx8be.random<seed = 7 : i64, distribution = "normal", scale = 0.1 : f64, offset = 1.0 : f64>} : () -> tensor<1x1x1x8xf32>
    %12 = "tx8be.Constant"() {dtype = "f32", shape = array<i64: 1, 1, 1, 8>, value = #tx8be.random<seed = 8 : i64, distribution = "normal", scale = 0.02 : f64, offset = 0.0 : f64>} : () -> tensor<1x1x1x8xf32>
    %13 = "tx8be.Constant"() {dtype = "f32", shape = array<i64: 1, 1, 1, 8>, value = #tx8be.random<seed = 9 : i64, distribution = "normal", scale = 0.1 : f64, offset = 0.0 : f64>} : () -> tensor<1x1x1x8xf32>
    %14 = "tx8be.Constant"() {dtype = "f32", shape = array<i64: 1, 1, 1, 8>, value = #tx8be.random<seed = 10 : i64, distribution = "uniform", scale = 0.5 : f64, offset = 1.0 : f64>} : () -> tensor<1x1x1x8xf32>
    %15 = "tx8be.BatchNorm_Inference"(%10, %11, %12, %13, %14) : (tensor<1x4x4x8xf32>, tensor<1x1x1x8xf32>, tensor<1x1x1x8xf32>, tensor<1x1x1x8xf32>, tensor<1x1x1x8xf32>) -> tensor<1x4x4x8xf32>
    %16 = "tx8be.Add"(%15, %8) : (tensor<1x4x4x8xf32>, tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
    %17 = "tx8be.Relu"(%16) : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
    "func.return"(%17) : (tensor<1x4x4x8xf32>) -> ()
  }) {function_type = (tensor<1x8x8x4xf32>) -> tensor<1x4x4x8xf32>, sym_name = "main"} : () -> ()
}) {tx8.next_id = 18 : i64} : () -> ()

// CHECK:      %18 = "tx8be.Group"(%arg0, %0, %2, %3, %4, %5) ({
// CHECK:        %1 = "tx8be.Conv2d"(%b18_0_0, %b18_0_1)
// CHECK-NEXT:   %6 = "tx8be.BatchNorm_Inference"(%1, %b18_0_2, %b18_0_3, %b18_0_4, %b18_0_5)
// CHECK-NEXT:   %7 = "tx8be.Relu"(%6)
// CHECK-NEXT:   %8 = "tx8be.MaxPool2d"(%7)
// CHECK-NEXT:   "tx8be.Return"(%8)
// CHECK-NEXT: }) {group_id = 0 : i64, group_pattern = "Conv2d BatchNorm_Inference Relu MaxPool2d", group_rule = "pattern:cnn:{{[0-9]+}}"
// CHECK:      %19 = "tx8be.Group"(%18, %9, %11, %12, %13, %14) ({
// CHECK:        %10 = "tx8be.Conv2d"(%b19_0_0, %b19_0_1)
// CHECK-NEXT:   %15 = "tx8be.BatchNorm_Inference"(%10,
// CHECK-NEXT:   %16 = "tx8be.Add"(%15, %b19_0_0)
// CHECK-NEXT:   %17 = "tx8be.Relu"(%16)
// CHECK-NEXT:   "tx8be.Return"(%17)
// CHECK-NEXT: }) {group_id = 1 : i64, group_pattern = "Conv2d BatchNorm_Inference Add Relu", group_rule = "pattern:cnn:{{[0-9]+}}"
// CHECK-NEXT: "func.return"(%19)
