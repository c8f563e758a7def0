// RUN: tx8lab opt %s -p 'layout-align-npu{compare=false}' | filecheck %s
// Rules input/output: arguments are NALIGN and outputs must be NALIGN, so a chain of BOTH
// ops stays NALIGN and needs no ChannelNorm.
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<2x4x4x8xf16>):
    %0 = "tx8be.Relu"(%arg0) : (tensor<2x4x4x8xf16>) -> tensor<2x4x4x8xf16>
    %1 = "tx8be.Sigmoid"(%0) : (tensor<2x4x4x8xf16>) -> tensor<2x4x4x8xf16>
    "func.return"(%1) : (tensor<2x4x4x8xf16>) -> ()
  }) {function_type = (tensor<2x4x4x8xf16>) -> tensor<2x4x4x8xf16>, sym_name = "main"} : () -> ()
}) {tx8.next_id = 2 : i64} : () -> ()

// CHECK: %0 = "tx8be.Relu"(%arg0) {dev_info = {{.*}}layout_mode<NTensor>
// CHECK: %1 = "tx8be.Sigmoid"(%0) {dev_info = {{.*}}layout_mode<NTensor>
// CHECK-NEXT: "func.return"(%1)
// CHECK-NOT: ChannelNorm
