// RUN: tx8lab opt %s -p 'layout-align-npu{strategy=optimal compare=false}' | filecheck %s
// strategy=optimal: the weight constants are free, so the minimum cut makes them ALIGN
// and only the argument and the output need a ChannelNorm (greedy inserts 4).
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<1x4x4x8xf16>):
    %0 = "tx8be.Constant"() {dtype = "f16", shape = array<i64: 8, 1, 1, 8>, value = #tx8be.random<seed = 1 : i64, distribution = "normal", scale = 0.35355339059327373 : f64, offset = 0.0 : f64>} : () -> tensor<8x1x1x8xf16>
    %1 = "tx8be.Conv2d"(%arg0, %0) : (tensor<1x4x4x8xf16>, tensor<8x1x1x8xf16>) -> tensor<1x4x4x8xf16>
    %2 = "tx8be.Constant"() {dtype = "f16", shape = array<i64: 8, 1, 1, 8>, value = #tx8be.random<seed = 2 : i64, distribution = "normal", scale = 0.35355339059327373 : f64, offset = 0.0 : f64>} : () -> tensor<8x1x1x8xf16>
    %3 = "tx8be.Conv2d"(%1, %2) : (tensor<1x4x4x8xf16>, tensor<8x1x1x8xf16>) -> tensor<1x4x4x8xf16>
    "func.return"(%3) : (tensor<1x4x4x8xf16>) -> ()
  }) {function_type = (tensor<1x4x4x8xf16>) -> tensor<1x4x4x8xf16>, sym_name = "main"} : () -> ()
}) {tx8.next_id = 4 : i64} : () -> ()

// CHECK: %4 = "tx8be.ChannelNorm"(%arg0) {dev_info = {{.*}}layout_mode<Cx>{{.*}}direction = true
// CHECK: %0 = "tx8be.Constant"() {dev_info = {{.*}}layout_mode<NCx>
// CHECK: %1 = "tx8be.Conv2d"(%4, %0) {dev_info = {{.*}}layout_mode<Cx>
// CHECK: %2 = "tx8be.Constant"() {dev_info = {{.*}}layout_mode<NCx>
// CHECK: %3 = "tx8be.Conv2d"(%1, %2) {dev_info = {{.*}}layout_mode<Cx>
// CHECK: %5 = "tx8be.ChannelNorm"(%3) {dev_info = {{.*}}layout_mode<Tensor>{{.*}}direction = false
// CHECK-NEXT: "func.return"(%5)
