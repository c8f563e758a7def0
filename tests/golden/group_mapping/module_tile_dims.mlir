// RUN: tx8lab opt %s -p 'group-mapping' | filecheck %s
// Tile dims already on the module (here 2 x 1, within the 4x4 mesh) win over the hardware's.
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<4xf32>):
    %1 = "tx8be.Group"(%arg0) ({
    ^bb0(%b1_0_0: tensor<4xf32>):
      %0 = "tx8be.Relu"(%b1_0_0) : (tensor<4xf32>) -> tensor<4xf32>
      "tx8be.Return"(%0) : (tensor<4xf32>) -> ()
    }) {group_rule = "single", tx8.created_by = "group-optimization"} : (tensor<4xf32>) -> tensor<4xf32>
    "func.return"(%1) : (tensor<4xf32>) -> ()
  }) {function_type = (tensor<4xf32>) -> tensor<4xf32>, sym_name = "main"} : () -> ()
}) {tx8.next_id = 2 : i64, tx8be.tile_dx = 2 : i64, tx8be.tile_dy = 1 : i64} : () -> ()

// CHECK:      }) {dev_region = array<i64: 0, 0, 2, 1>, group_rule = "single"
// CHECK:      }) {tx8.next_id = 2 : i64, tx8be.tile_dx = 2 : i64, tx8be.tile_dy = 1 : i64}
