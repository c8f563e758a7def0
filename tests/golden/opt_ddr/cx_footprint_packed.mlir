// RUN: tx8lab opt %s -p 'opt-ddr{policy=packed packed_align_bytes=1}' | filecheck %s
// A buffer's bytes are its footprint in its dev_info.mem_layout: const 0 is Cx (3 channels
// padded to 4: 32 B), const 1 compact (24 B). policy=packed with packed_align_bytes=1 is the
// baseline, back to back: const 1 starts at 32, the var region right after.
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<1x2x2x3xf16>):
    %4 = "tx8be.Group"(%arg0) ({
    ^bb0(%b4_0_0: tensor<1x2x2x3xf16>):
      %6 = "tx8be.LoadVar"(%b4_0_0) {tx8.created_by = "group-ldst"} : (tensor<1x2x2x3xf16>) -> tensor<1x2x2x3xf16>
      %0 = "tx8be.LoadConst"() {const_id = 0 : i64, dev_info = #tx8be.dev_info<imm_size = 0 : i64, mem_layout = #tx8be.layout_mode<Cx>, multi_buf_en = false, multi_buf_num = 1 : i64, out_shape_buf_idx = [], temporal_mem_slice = [], source_type = 0 : i64, imm_addr = 0 : i64, mem_addr = []>, dtype = "f16", shape = array<i64: 1, 2, 2, 3>, value = #tx8be.random<seed = 1 : i64, distribution = "normal", scale = 1.0 : f64, offset = 0.0 : f64>} : () -> tensor<1x2x2x3xf16>
      %2 = "tx8be.Add"(%6, %0) : (tensor<1x2x2x3xf16>, tensor<1x2x2x3xf16>) -> tensor<1x2x2x3xf16>
      %7 = "tx8be.StoreVar"(%2) {tx8.created_by = "group-ldst"} : (tensor<1x2x2x3xf16>) -> tensor<1x2x2x3xf16>
      "tx8be.Return"(%7) : (tensor<1x2x2x3xf16>) -> ()
    }) {group_rule = "single", group_tag = 0 : i64, tx8.created_by = "group-optimization"} : (tensor<1x2x2x3xf16>) -> tensor<1x2x2x3xf16>
    %5 = "tx8be.Group"(%4) ({
    ^bb0(%b5_0_0: tensor<1x2x2x3xf16>):
      %8 = "tx8be.LoadVar"(%b5_0_0) {tx8.created_by = "group-ldst"} : (tensor<1x2x2x3xf16>) -> tensor<1x2x2x3xf16>
      %1 = "tx8be.LoadConst"() {const_id = 1 : i64, dtype = "f16", shape = array<i64: 1, 2, 2, 3>, value = #tx8be.random<seed = 2 : i64, distribution = "normal", scale = 1.0 : f64, offset = 0.0 : f64>} : () -> tensor<1x2x2x3xf16>
      %3 = "tx8be.Add"(%8, %1) : (tensor<1x2x2x3xf16>, tensor<1x2x2x3xf16>) -> tensor<1x2x2x3xf16>
      %9 = "tx8be.StoreVar"(%3) {tx8.created_by = "group-ldst"} : (tensor<1x2x2x3xf16>) -> tensor<1x2x2x3xf16>
      "tx8be.Return"(%9) : (tensor<1x2x2x3xf16>) -> ()
    }) {group_rule = "single", group_tag = 0 : i64, tx8.created_by = "group-optimization"} : (tensor<1x2x2x3xf16>) -> tensor<1x2x2x3xf16>
    "func.return"(%5) : (tensor<1x2x2x3xf16>) -> ()
  }) {function_type = (tensor<1x2x2x3xf16>) -> tensor<1x2x2x3xf16>, sym_name = "main"} : () -> ()
}) {tx8.next_id = 10 : i64} : () -> ()

// CHECK:      %6 = "tx8be.LoadVar"(%b4_0_0) {ddr_addr = 56 : i64
// CHECK-NEXT: %0 = "tx8be.LoadConst"() {const_id = 0 : i64, ddr_addr = 0 : i64, dev_info = #tx8be.dev_info<{{.*}}mem_layout = #tx8be.layout_mode<Cx>
// CHECK:      %7 = "tx8be.StoreVar"(%2) {ddr_addr = 80 : i64
// CHECK:      %8 = "tx8be.LoadVar"(%b5_0_0) {ddr_addr = 80 : i64
// CHECK-NEXT: %1 = "tx8be.LoadConst"() {const_id = 1 : i64, ddr_addr = 32 : i64
// CHECK:      %9 = "tx8be.StoreVar"(%3) {ddr_addr = 104 : i64
