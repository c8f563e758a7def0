// RUN: tx8lab opt %s -p 'layout-align-npu{compare=false}' | filecheck %s
// Rule align_only: MaxPool2d has only an ALIGN kernel. Argument (NALIGN) -> ChannelNorm(true);
// the Relu after it follows its parent (ALIGN); the output needs NALIGN -> ChannelNorm(false).
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<1x8x8x16xf16>):
    %0 = "tx8be.MaxPool2d"(%arg0) {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x8x8x16xf16>) -> tensor<1x4x4x16xf16>
    %1 = "tx8be.Relu"(%0) : (tensor<1x4x4x16xf16>) -> tensor<1x4x4x16xf16>
    "func.return"(%1) : (tensor<1x4x4x16xf16>) -> ()
  }) {function_type = (tensor<1x8x8x16xf16>) -> tensor<1x4x4x16xf16>, sym_name = "main"} : () -> ()
}) {tx8.next_id = 2 : i64} : () -> ()

// CHECK: %2 = "tx8be.ChannelNorm"(%arg0) {dev_info = {{.*}}layout_mode<Cx>{{.*}}direction = true
// CHECK: %0 = "tx8be.MaxPool2d"(%2) {dev_info = {{.*}}layout_mode<Cx>
// CHECK: %1 = "tx8be.Relu"(%0) {dev_info = {{.*}}layout_mode<Cx>
// CHECK: %3 = "tx8be.ChannelNorm"(%1) {dev_info = {{.*}}layout_mode<Tensor>{{.*}}direction = false
// CHECK-NEXT: "func.return"(%3)
