// RUN: tx8lab opt %s -p 'layout-align-npu{compare=false}' | filecheck %s
// Rule slice: C 64:128 of 128 (start > 0, end % 64 == 0) is NALIGN; C 0:64 is ALIGN.
// The input comes from a Conv (ALIGN), so the NALIGN slice reads a ChannelNorm(false).
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<1x4x4x16xf16>):
    %0 = "tx8be.Constant"() {dtype = "f16", shape = array<i64: 128, 1, 1, 16>, value = #tx8be.random<seed = 1 : i64, distribution = "normal", scale = 0.25 : f64, offset = 0.0 : f64>} : () -> tensor<128x1x1x16xf16>
    %1 = "tx8be.Conv2d"(%arg0, %0) : (tensor<1x4x4x16xf16>, tensor<128x1x1x16xf16>) -> tensor<1x4x4x128xf16>
    %2 = "tx8be.Slice"(%1) {ends = array<i64: 1, 4, 4, 128>, starts = array<i64: 0, 0, 0, 64>} : (tensor<1x4x4x128xf16>) -> tensor<1x4x4x64xf16>
    %3 = "tx8be.Slice"(%1) {ends = array<i64: 1, 4, 4, 64>, starts = array<i64: 0, 0, 0, 0>} : (tensor<1x4x4x128xf16>) -> tensor<1x4x4x64xf16>
    "func.return"(%2, %3) : (tensor<1x4x4x64xf16>, tensor<1x4x4x64xf16>) -> ()
  }) {function_type = (tensor<1x4x4x16xf16>) -> (tensor<1x4x4x64xf16>, tensor<1x4x4x64xf16>), sym_name = "main"} : () -> ()
}) {tx8.next_id = 4 : i64} : () -> ()

// CHECK: %4 = "tx8be.ChannelNorm"(%arg0) {dev_info = {{.*}}layout_mode<Cx>{{.*}}direction = true
// CHECK: %0 = "tx8be.Constant"() {dev_info = {{.*}}layout_mode<NTensor>
// CHECK: %5 = "tx8be.ChannelNorm"(%0) {dev_info = {{.*}}layout_mode<NCx>{{.*}}direction = true
// CHECK: %1 = "tx8be.Conv2d"(%4, %5) {dev_info = {{.*}}layout_mode<Cx>
// CHECK: %6 = "tx8be.ChannelNorm"(%1) {dev_info = {{.*}}layout_mode<Tensor>{{.*}}direction = false
// CHECK: %2 = "tx8be.Slice"(%6) {dev_info = {{.*}}layout_mode<Tensor>
// CHECK: %3 = "tx8be.Slice"(%1) {dev_info = {{.*}}layout_mode<Cx>
// CHECK: %7 = "tx8be.ChannelNorm"(%3) {dev_info = {{.*}}layout_mode<Tensor>{{.*}}direction = false
// CHECK-NEXT: "func.return"(%2, %7)
