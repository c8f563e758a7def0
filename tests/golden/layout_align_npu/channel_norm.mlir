// RUN: tx8lab opt %s -p 'layout-align-npu{compare=false}' | filecheck %s
// Rule channel_norm: a ChannelNorm already in the graph keeps its direction (true: it
// produces ALIGN) and needs NALIGN on its input, so nothing is inserted before it.
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<1x4x4x8xf16>):
    %0 = "tx8be.ChannelNorm"(%arg0) {direction = true} : (tensor<1x4x4x8xf16>) -> tensor<1x4x4x8xf16>
    %1 = "tx8be.MaxPool2d"(%0) {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x4x4x8xf16>) -> tensor<1x2x2x8xf16>
    "func.return"(%1) : (tensor<1x2x2x8xf16>) -> ()
  }) {function_type = (tensor<1x4x4x8xf16>) -> tensor<1x2x2x8xf16>, sym_name = "main"} : () -> ()
}) {tx8.next_id = 2 : i64} : () -> ()

// CHECK: %0 = "tx8be.ChannelNorm"(%arg0) {dev_info = {{.*}}layout_mode<Cx>
// CHECK: %1 = "tx8be.MaxPool2d"(%0) {dev_info = {{.*}}layout_mode<Cx>
// CHECK: %2 = "tx8be.ChannelNorm"(%1) {dev_info = {{.*}}layout_mode<Tensor>{{.*}}direction = false
// CHECK-NEXT: "func.return"(%2)
