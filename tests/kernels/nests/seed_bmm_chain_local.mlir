// Seed 003's example with C a local buffer: MLIR privatizes it to memref<1x1x512xf32>.
func.func @bmm_chain_local(%A: memref<8x128x384xf32>, %B: memref<8x384x512xf32>, %D: memref<8x512x64xf32>, %E: memref<8x128x64xf32>) {
  %C = memref.alloc() : memref<8x128x512xf32>
  affine.for %i0 = 0 to 8 {
    affine.for %i1 = 0 to 128 {
      affine.for %i2 = 0 to 512 {
        affine.for %i3 = 0 to 384 {
          %0 = affine.load %A[%i0, %i1, %i3] : memref<8x128x384xf32>
          %1 = affine.load %B[%i0, %i3, %i2] : memref<8x384x512xf32>
          %2 = affine.load %C[%i0, %i1, %i2] : memref<8x128x512xf32>
          %3 = arith.mulf %0, %1 : f32
          %4 = arith.addf %2, %3 : f32
          affine.store %4, %C[%i0, %i1, %i2] : memref<8x128x512xf32>
        }
      }
    }
  }
  affine.for %j0 = 0 to 8 {
    affine.for %j1 = 0 to 128 {
      affine.for %j2 = 0 to 64 {
        affine.for %j3 = 0 to 512 {
          %0 = affine.load %C[%j0, %j1, %j3] : memref<8x128x512xf32>
          %1 = affine.load %D[%j0, %j3, %j2] : memref<8x512x64xf32>
          %2 = affine.load %E[%j0, %j1, %j2] : memref<8x128x64xf32>
          %3 = arith.mulf %0, %1 : f32
          %4 = arith.addf %2, %3 : f32
          affine.store %4, %E[%j0, %j1, %j2] : memref<8x128x64xf32>
        }
      }
    }
  }
  return
}
