// The producer writes even elements, the consumer reads odd ones: no integer dependence.
func.func @even_odd(%A: memref<64xf32>, %out: memref<32xf32>) {
  %t = memref.alloc() : memref<128xf32>
  affine.for %i = 0 to 64 {
    %a = affine.load %A[%i] : memref<64xf32>
    affine.store %a, %t[%i * 2] : memref<128xf32>
  }
  affine.for %j = 0 to 32 {
    %x = affine.load %t[%j * 2 + 1] : memref<128xf32>
    affine.store %x, %out[%j] : memref<32xf32>
  }
  return
}
