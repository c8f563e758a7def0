// RUN: tx8lab opt %s -p 'opt-ddr{policy=large}' | filecheck %s
// policy=large: only const 1 (5000 B, at least a bank) starts on a bank and comes first;
// the small buffers are packed after it in 64-byte steps (none crosses a bank boundary).
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<1x25xf32>):
    %4 = "tx8be.Group"(%arg0) ({
    ^bb0(%b4_0_0: tensor<1x25xf32>):
      %6 = "tx8be.LoadVar"(%b4_0_0) {tx8.created_by = "group-ldst"} : (tensor<1x25xf32>) -> tensor<1x25xf32>
      %0 = "tx8be.LoadConst"() {const_id = 0 : i64, dtype = "f32", shape = array<i64: 1, 25>, value = #tx8be.random<seed = 1 : i64, distribution = "normal", scale = 1.0 : f64, offset = 0.0 : f64>} : () -> tensor<1x25xf32>
      %1 = "tx8be.Add"(%6, %0) : (tensor<1x25xf32>, tensor<1x25xf32>) -> tensor<1x25xf32>
      %7 = "tx8be.StoreVar"(%1) {tx8.created_by = "group-ldst"} : (tensor<1x25xf32>) -> tensor<1x25xf32>
      "tx8be.Return"(%7) : (tensor<1x25xf32>) -> ()
    }) {group_rule = "single", group_tag = 0 : i64, tx8.created_by = "group-optimization"} : (tensor<1x25xf32>) -> tensor<1x25xf32>
    %5 = "tx8be.Group"(%4) ({
    ^bb0(%b5_0_0: tensor<1x25xf32>):
      %8 = "tx8be.LoadVar"(%b5_0_0) {tx8.created_by = "group-ldst"} : (tensor<1x25xf32>) -> tensor<1x25xf32>
      %2 = "tx8be.LoadConst"() {const_id = 1 : i64, dtype = "f32", shape = array<i64: 25, 50>, value = #tx8be.random<seed = 2 : i64, distribution = "normal", scale = 1.0 : f64, offset = 0.0 : f64>} : () -> tensor<25x50xf32>
      %3 = "tx8be.MatMul"(%8, %2) : (tensor<1x25xf32>, tensor<25x50xf32>) -> tensor<1x50xf32>
      %9 = "tx8be.StoreVar"(%3) {tx8.created_by = "group-ldst"} : (tensor<1x50xf32>) -> tensor<1x50xf32>
      "tx8be.Return"(%9) : (tensor<1x50xf32>) -> ()
    }) {group_rule = "single", group_tag = 0 : i64, tx8.created_by = "group-optimization"} : (tensor<1x25xf32>) -> tensor<1x50xf32>
    "func.return"(%5) : (tensor<1x50xf32>) -> ()
  }) {function_type = (tensor<1x25xf32>) -> tensor<1x50xf32>, sym_name = "main"} : () -> ()
}) {tx8.next_id = 10 : i64} : () -> ()

// CHECK:      %6 = "tx8be.LoadVar"(%b4_0_0) {ddr_addr = 8192 : i64
// CHECK-NEXT: %0 = "tx8be.LoadConst"() {const_id = 0 : i64, ddr_addr = 5056 : i64
// CHECK:      %7 = "tx8be.StoreVar"(%1) {ddr_addr = 8320 : i64
// CHECK:      %8 = "tx8be.LoadVar"(%b5_0_0) {ddr_addr = 8320 : i64
// CHECK-NEXT: %2 = "tx8be.LoadConst"() {const_id = 1 : i64, ddr_addr = 0 : i64
// CHECK:      %9 = "tx8be.StoreVar"(%3) {ddr_addr = 8448 : i64
