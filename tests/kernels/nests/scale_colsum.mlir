// Consumer with its reduction loop outermost: MLIR sinks it inward before fusing.
func.func @scale_then_colsum(%A: memref<32x64xf32>, %S: memref<32xf32>) {
  %t = memref.alloc() : memref<32x64xf32>
  affine.for %i = 0 to 32 {
    affine.for %k = 0 to 64 {
      %a = affine.load %A[%i, %k] : memref<32x64xf32>
      %d = arith.addf %a, %a : f32
      affine.store %d, %t[%i, %k] : memref<32x64xf32>
    }
  }
  affine.for %k = 0 to 64 {
    affine.for %i = 0 to 32 {
      %x = affine.load %t[%i, %k] : memref<32x64xf32>
      %s = affine.load %S[%i] : memref<32xf32>
      %r = arith.addf %s, %x : f32
      affine.store %r, %S[%i] : memref<32xf32>
    }
  }
  return
}
