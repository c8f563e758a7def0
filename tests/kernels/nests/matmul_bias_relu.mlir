// Imperfect producer nest with two stores to C (init + accumulate): MLIR's multi-store path.
func.func @matmul_bias_relu(%A: memref<64x32xf32>, %B: memref<32x16xf32>, %bias: memref<16xf32>, %out: memref<64x16xf32>) {
  %zero = arith.constant 0.000000e+00 : f32
  %C = memref.alloc() : memref<64x16xf32>
  affine.for %i = 0 to 64 {
    affine.for %j = 0 to 16 {
      affine.store %zero, %C[%i, %j] : memref<64x16xf32>
      affine.for %k = 0 to 32 {
        %a = affine.load %A[%i, %k] : memref<64x32xf32>
        %b = affine.load %B[%k, %j] : memref<32x16xf32>
        %c = affine.load %C[%i, %j] : memref<64x16xf32>
        %p = arith.mulf %a, %b : f32
        %s = arith.addf %c, %p : f32
        affine.store %s, %C[%i, %j] : memref<64x16xf32>
      }
    }
  }
  affine.for %i = 0 to 64 {
    affine.for %j = 0 to 16 {
      %c = affine.load %C[%i, %j] : memref<64x16xf32>
      %b = affine.load %bias[%j] : memref<16xf32>
      %s = arith.addf %c, %b : f32
      %r = arith.maximumf %s, %zero : f32
      affine.store %r, %out[%i, %j] : memref<64x16xf32>
    }
  }
  return
}
