// RUN: tx8lab opt %s -p 'group-mapping' | filecheck %s
// simpleGroupMapping: every group gets dev_region = (x0, y0, x_dim, y_dim) = the whole 4x4
// TX81 mesh from tile (0, 0); the module records the dims (seed ModuleAttr::TileDx/TileDy).
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<4xf32>):
    %2 = "tx8be.Group"(%arg0) ({
    ^bb0(%b2_0_0: tensor<4xf32>):
      %0 = "tx8be.Neg"(%b2_0_0) : (tensor<4xf32>) -> tensor<4xf32>
      "tx8be.Return"(%0) : (tensor<4xf32>) -> ()
    }) {group_rule = "single", tx8.created_by = "group-optimization"} : (tensor<4xf32>) -> tensor<4xf32>
    %3 = "tx8be.Group"(%2) ({
    ^bb0(%b3_0_0: tensor<4xf32>):
      %1 = "tx8be.Relu"(%b3_0_0) : (tensor<4xf32>) -> tensor<4xf32>
      "tx8be.Return"(%1) : (tensor<4xf32>) -> ()
    }) {group_rule = "single", tx8.created_by = "group-optimization"} : (tensor<4xf32>) -> tensor<4xf32>
    "func.return"(%3) : (tensor<4xf32>) -> ()
  }) {function_type = (tensor<4xf32>) -> tensor<4xf32>, sym_name = "main"} : () -> ()
}) {tx8.next_id = 4 : i64} : () -> ()

// CHECK:      %2 = "tx8be.Group"(%arg0) ({
// CHECK:      }) {dev_region = array<i64: 0, 0, 4, 4>, group_rule = "single"
// CHECK-NEXT: %3 = "tx8be.Group"(%2) ({
// CHECK:      }) {dev_region = array<i64: 0, 0, 4, 4>, group_rule = "single"
// CHECK:      }) {tx8.next_id = 4 : i64, tx8be.tile_dx = 4 : i64, tx8be.tile_dy = 4 : i64}
