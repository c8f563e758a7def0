// Three elementwise nests through two local buffers: fused at full depth, 1x1 private buffers.
func.func @ew_chain(%A: memref<64x32xf32>, %B: memref<64x32xf32>, %out: memref<64x32xf32>) {
  %t = memref.alloc() : memref<64x32xf32>
  %u = memref.alloc() : memref<64x32xf32>
  affine.for %i = 0 to 64 {
    affine.for %j = 0 to 32 {
      %a = affine.load %A[%i, %j] : memref<64x32xf32>
      %b = affine.load %B[%i, %j] : memref<64x32xf32>
      %s = arith.addf %a, %b : f32
      affine.store %s, %t[%i, %j] : memref<64x32xf32>
    }
  }
  affine.for %i = 0 to 64 {
    affine.for %j = 0 to 32 {
      %x = affine.load %t[%i, %j] : memref<64x32xf32>
      %y = arith.mulf %x, %x : f32
      affine.store %y, %u[%i, %j] : memref<64x32xf32>
    }
  }
  affine.for %i = 0 to 64 {
    affine.for %j = 0 to 32 {
      %x = affine.load %u[%i, %j] : memref<64x32xf32>
      %y = arith.negf %x : f32
      affine.store %y, %out[%i, %j] : memref<64x32xf32>
    }
  }
  return
}
