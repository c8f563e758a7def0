// Seed 003's example: batched matmul C = A.B (+= over k) feeding E += C.D; C is an argument.
func.func @bmm_chain(%arg0: memref<8x128x384xf32>, %arg1: memref<8x384x512xf32>, %arg2: memref<8x128x512xf32>, %arg3: memref<8x512x64xf32>, %arg4: memref<8x128x64xf32>) {
  affine.for %i0 = 0 to 8 {
    affine.for %i1 = 0 to 128 {
      affine.for %i2 = 0 to 512 {
        affine.for %i3 = 0 to 384 {
          %0 = affine.load %arg0[%i0, %i1, %i3] : memref<8x128x384xf32>
          %1 = affine.load %arg1[%i0, %i3, %i2] : memref<8x384x512xf32>
          %2 = affine.load %arg2[%i0, %i1, %i2] : memref<8x128x512xf32>
          %3 = arith.mulf %0, %1 : f32
          %4 = arith.addf %2, %3 : f32
          affine.store %4, %arg2[%i0, %i1, %i2] : memref<8x128x512xf32>
        }
      }
    }
  }
  affine.for %j0 = 0 to 8 {
    affine.for %j1 = 0 to 128 {
      affine.for %j2 = 0 to 64 {
        affine.for %j3 = 0 to 512 {
          %0 = affine.load %arg2[%j0, %j1, %j3] : memref<8x128x512xf32>
          %1 = affine.load %arg3[%j0, %j3, %j2] : memref<8x512x64xf32>
          %2 = affine.load %arg4[%j0, %j1, %j2] : memref<8x128x64xf32>
          %3 = arith.mulf %0, %1 : f32
          %4 = arith.addf %2, %3 : f32
          affine.store %4, %arg4[%j0, %j1, %j2] : memref<8x128x64xf32>
        }
      }
    }
  }
  return
}
