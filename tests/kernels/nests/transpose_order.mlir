// Producer-consumer with different loop orders: the consumer runs j outer, i inner.
func.func @transpose_order(%A: memref<64x48xf32>, %out: memref<64x48xf32>) {
  %t = memref.alloc() : memref<64x48xf32>
  affine.for %i = 0 to 64 {
    affine.for %j = 0 to 48 {
      %a = affine.load %A[%i, %j] : memref<64x48xf32>
      %e = math.exp %a : f32
      affine.store %e, %t[%i, %j] : memref<64x48xf32>
    }
  }
  affine.for %j = 0 to 48 {
    affine.for %i = 0 to 64 {
      %x = affine.load %t[%i, %j] : memref<64x48xf32>
      %y = arith.mulf %x, %x : f32
      affine.store %y, %out[%i, %j] : memref<64x48xf32>
    }
  }
  return
}
