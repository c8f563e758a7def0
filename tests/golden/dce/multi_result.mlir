// RUN: tx8lab opt %s -p 'dce' | filecheck %s
// One result of the Split is used: the op stays whole (results are never dropped, that
// would renumber %0#1). The Split %1 has no used result and goes.
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<4x2xf32>):
    %0:2 = "tx8be.Split"(%arg0) {axis = 0 : i64, sizes = array<i64: 1, 3>} : (tensor<4x2xf32>) -> (tensor<1x2xf32>, tensor<3x2xf32>)
    %1:2 = "tx8be.Split"(%arg0) {axis = 1 : i64, sizes = array<i64: 1, 1>} : (tensor<4x2xf32>) -> (tensor<4x1xf32>, tensor<4x1xf32>)
    %2 = "tx8be.Neg"(%0#1) : (tensor<3x2xf32>) -> tensor<3x2xf32>
    "func.return"(%2) : (tensor<3x2xf32>) -> ()
  }) {function_type = (tensor<4x2xf32>) -> tensor<3x2xf32>, sym_name = "main"} : () -> ()
}) : () -> ()

// CHECK:      %0:2 = "tx8be.Split"(%arg0) {axis = 0 : i64
// CHECK-NEXT: %2 = "tx8be.Neg"(%0#1)
// CHECK-NOT:  %1:2
