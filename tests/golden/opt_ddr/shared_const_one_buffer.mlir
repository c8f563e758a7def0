// RUN: tx8lab opt %s -p 'opt-ddr' | filecheck %s
// The two LoadConsts of const_id 0 (group-optimization's copy) share one DDR buffer; the
// Add group's StoreVar and the Mul group's LoadVar move the same var and get one address.
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<4xf32>):
    %3 = "tx8be.Group"(%arg0) ({
    ^bb0(%b3_0_0: tensor<4xf32>):
      %6 = "tx8be.LoadVar"(%b3_0_0) {tx8.created_by = "group-ldst"} : (tensor<4xf32>) -> tensor<4xf32>
      %0 = "tx8be.LoadConst"() {const_id = 0 : i64, dtype = "f32", shape = array<i64: 4>, value = #tx8be.random<seed = 1 : i64, distribution = "normal", scale = 1.0 : f64, offset = 0.0 : f64>} : () -> tensor<4xf32>
      %1 = "tx8be.Add"(%6, %0) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
      %7 = "tx8be.StoreVar"(%1) {tx8.created_by = "group-ldst"} : (tensor<4xf32>) -> tensor<4xf32>
      "tx8be.Return"(%7) : (tensor<4xf32>) -> ()
    }) {group_rule = "single", group_tag = 0 : i64, tx8.created_by = "group-optimization"} : (tensor<4xf32>) -> tensor<4xf32>
    %4 = "tx8be.Group"(%3) ({
    ^bb0(%b4_0_0: tensor<4xf32>):
      %8 = "tx8be.LoadVar"(%b4_0_0) {tx8.created_by = "group-ldst"} : (tensor<4xf32>) -> tensor<4xf32>
      %5 = "tx8be.LoadConst"() {const_id = 0 : i64, dtype = "f32", shape = array<i64: 4>, tx8.created_by = "group-optimization", value = #tx8be.random<seed = 1 : i64, distribution = "normal", scale = 1.0 : f64, offset = 0.0 : f64>} : () -> tensor<4xf32>
      %2 = "tx8be.Mul"(%8, %5) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
      %9 = "tx8be.StoreVar"(%2) {tx8.created_by = "group-ldst"} : (tensor<4xf32>) -> tensor<4xf32>
      "tx8be.Return"(%9) : (tensor<4xf32>) -> ()
    }) {group_rule = "single", group_tag = 0 : i64, tx8.created_by = "group-optimization"} : (tensor<4xf32>) -> tensor<4xf32>
    "func.return"(%4) : (tensor<4xf32>) -> ()
  }) {function_type = (tensor<4xf32>) -> tensor<4xf32>, sym_name = "main"} : () -> ()
}) {tx8.next_id = 10 : i64} : () -> ()

// CHECK:      %6 = "tx8be.LoadVar"(%b3_0_0) {ddr_addr = 4096 : i64
// CHECK-NEXT: %0 = "tx8be.LoadConst"() {const_id = 0 : i64, ddr_addr = 0 : i64
// CHECK:      %7 = "tx8be.StoreVar"(%1) {ddr_addr = 8192 : i64
// CHECK:      %8 = "tx8be.LoadVar"(%b4_0_0) {ddr_addr = 8192 : i64
// CHECK-NEXT: %5 = "tx8be.LoadConst"() {const_id = 0 : i64, ddr_addr = 0 : i64
// CHECK:      %9 = "tx8be.StoreVar"(%2) {ddr_addr = 12288 : i64
