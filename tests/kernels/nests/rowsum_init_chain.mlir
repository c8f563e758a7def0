// Init nest, reduction nest and consumer: a chain whose fusion order follows MLIR's node map.
func.func @rowsum_scale(%A: memref<32x64xf32>, %C: memref<32x16xf32>, %out: memref<32x16xf32>) {
  %cst = arith.constant 0.000000e+00 : f32
  %s = memref.alloc() : memref<32xf32>
  affine.for %i = 0 to 32 {
    affine.store %cst, %s[%i] : memref<32xf32>
  }
  affine.for %i = 0 to 32 {
    affine.for %k = 0 to 64 {
      %a = affine.load %A[%i, %k] : memref<32x64xf32>
      %acc = affine.load %s[%i] : memref<32xf32>
      %r = arith.addf %acc, %a : f32
      affine.store %r, %s[%i] : memref<32xf32>
    }
  }
  affine.for %i = 0 to 32 {
    affine.for %j = 0 to 16 {
      %x = affine.load %s[%i] : memref<32xf32>
      %c = affine.load %C[%i, %j] : memref<32x16xf32>
      %y = arith.mulf %x, %c : f32
      affine.store %y, %out[%i, %j] : memref<32x16xf32>
    }
  }
  return
}
