// One producer, two consumers: greedy MLIR fuses the consumers as siblings first.
func.func @two_consumers(%A: memref<128xf32>, %X: memref<128xf32>, %Y: memref<128xf32>) {
  %t = memref.alloc() : memref<128xf32>
  affine.for %i = 0 to 128 {
    %a = affine.load %A[%i] : memref<128xf32>
    %e = math.exp %a : f32
    affine.store %e, %t[%i] : memref<128xf32>
  }
  affine.for %i = 0 to 128 {
    %x = affine.load %t[%i] : memref<128xf32>
    %y = arith.mulf %x, %x : f32
    affine.store %y, %X[%i] : memref<128xf32>
  }
  affine.for %i = 0 to 128 {
    %x = affine.load %t[%i] : memref<128xf32>
    %y = arith.addf %x, %x : f32
    affine.store %y, %Y[%i] : memref<128xf32>
  }
  return
}
