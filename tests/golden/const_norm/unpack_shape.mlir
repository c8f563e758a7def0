// RUN: tx8lab opt %s -p 'const-norm' | filecheck %s
// The Unpack rule: %0 (i8 [8, 16], an int4 qweight) has one user, an Unpack, so it is loaded
// as [8 / 4, 16 * 4] = [2, 64]: the same bytes, recorded in load_shape (its type stays, as
// the Unpack infers its result from it). %2 has 6 rows, not a multiple of 4: kept as it is.
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<8x32xi8>):
    %0 = "tx8be.LoadConst"() {const_id = 0 : i64, dtype = "i8", shape = array<i64: 8, 16>, value = #tx8be.random<seed = 1 : i64, distribution = "normal", scale = 40.0 : f64, offset = 0.0 : f64>} : () -> tensor<8x16xi8>
    %1 = "tx8be.Unpack"(%0) : (tensor<8x16xi8>) -> tensor<8x32xi8>
    %2 = "tx8be.LoadConst"() {const_id = 1 : i64, dtype = "i8", shape = array<i64: 6, 16>, value = #tx8be.random<seed = 2 : i64, distribution = "normal", scale = 40.0 : f64, offset = 0.0 : f64>} : () -> tensor<6x16xi8>
    %3 = "tx8be.Unpack"(%2) : (tensor<6x16xi8>) -> tensor<6x32xi8>
    %4 = "tx8be.Add"(%arg0, %1) : (tensor<8x32xi8>, tensor<8x32xi8>) -> tensor<8x32xi8>
    "func.return"(%4, %3) : (tensor<8x32xi8>, tensor<6x32xi8>) -> ()
  }) {function_type = (tensor<8x32xi8>) -> (tensor<8x32xi8>, tensor<6x32xi8>), sym_name = "main"} : () -> ()
}) {tx8.const_threshold_bytes = 65536 : i64, tx8.next_id = 5 : i64} : () -> ()

// CHECK:      %0 = "tx8be.LoadConst"() {const_id = 0 : i64, dtype = "i8", load_shape = array<i64: 2, 64>, shape = array<i64: 8, 16>
// CHECK-NEXT: %1 = "tx8be.Unpack"(%0) : (tensor<8x16xi8>) -> tensor<8x32xi8>
// CHECK-NEXT: %2 = "tx8be.LoadConst"() {const_id = 1 : i64, dtype = "i8", shape = array<i64: 6, 16>
// CHECK-NOT:  load_shape
