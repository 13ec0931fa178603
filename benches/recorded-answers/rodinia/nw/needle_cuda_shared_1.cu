#if (defined(RD_WG_SIZE_0_0))
#define BLOCK_SIZE RD_WG_SIZE_0_0
#endif
#if !(defined(RD_WG_SIZE_0_0)) && (defined(RD_WG_SIZE_0))
#define BLOCK_SIZE RD_WG_SIZE_0
#endif
#if !(defined(RD_WG_SIZE_0_0)) && !(defined(RD_WG_SIZE_0)) && (defined(RD_WG_SIZE))
#define BLOCK_SIZE RD_WG_SIZE
#endif
#if !(defined(RD_WG_SIZE_0_0)) && !(defined(RD_WG_SIZE_0)) && !(defined(RD_WG_SIZE))
#define BLOCK_SIZE 16
#endif

__device__ __host__ int
maximum(int a, int b, int c)
{
  int k;
  if (a <= b)
    k = b;
  else
    k = a;

  if (k <= c)
    return (c);
  else
    return (k);
}

// Naive tile update: the same anti-diagonal sweep over the block's tile, but every
// score and every reference value is read from and written to global memory directly
// (no shared-memory copy of the tile). Thread tx owns column tx + 1 of the tile.
__global__ void
needle_cuda_shared_1(int* referrence,
                     int* matrix_cuda,
                     int cols,
                     int penalty,
                     int i,
                     int block_width)
{
  int bx = blockIdx.x;
  int tx = threadIdx.x;

  int b_index_x = bx;
  int b_index_y = i - 1 - bx;

  // Top-left (north-west) corner of the tile, one row and one column outside it.
  int corner = cols * BLOCK_SIZE * b_index_y + BLOCK_SIZE * b_index_x;
  int c = tx + 1;

  for (int d = 0; d < 2 * BLOCK_SIZE - 1; d++) {
    int r = d - tx + 1;
    if (r >= 1 && r <= BLOCK_SIZE) {
      int here = corner + r * cols + c;
      matrix_cuda[here] = maximum(matrix_cuda[here - cols - 1] + referrence[here],
                                  matrix_cuda[here - 1] - penalty,
                                  matrix_cuda[here - cols] - penalty);
    }
    __syncthreads();
  }
}
