// RUN: tx8lab opt %s -p 'layout-align-npu{compare=false}' | filecheck %s
// Sharing: two MaxPools (ALIGN) read the same NALIGN argument; one ChannelNorm(true)
// serves both (one per value and direction).
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<1x8x8x16xf16>):
    %0 = "tx8be.MaxPool2d"(%arg0) {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x8x8x16xf16>) -> tensor<1x4x4x16xf16>
    %1 = "tx8be.MaxPool2d"(%arg0) {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x8x8x16xf16>) -> tensor<1x4x4x16xf16>
    %2 = "tx8be.Add"(%0, %1) : (tensor<1x4x4x16xf16>, tensor<1x4x4x16xf16>) -> tensor<1x4x4x16xf16>
    "func.return"(%2) : (tensor<1x4x4x16xf16>) -> ()
  }) {function_type = (tensor<1x8x8x16xf16>) -> tensor<1x4x4x16xf16>, sym_name = "main"} : () -> ()
}) {tx8.next_id = 3 : i64} : () -> ()

// CHECK: %3 = "tx8be.ChannelNorm"(%arg0) {dev_info = {{.*}}layout_mode<Cx>{{.*}}direction = true
// CHECK-NOT: ChannelNorm
// CHECK: %0 = "tx8be.MaxPool2d"(%3) {dev_info = {{.*}}layout_mode<Cx>
// CHECK: %1 = "tx8be.MaxPool2d"(%3) {dev_info = {{.*}}layout_mode<Cx>
// CHECK: %2 = "tx8be.Add"(%0, %1) {dev_info = {{.*}}layout_mode<Cx>
// CHECK: %4 = "tx8be.ChannelNorm"(%2) {dev_info = {{.*}}layout_mode<Tensor>{{.*}}direction = false
