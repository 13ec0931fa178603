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

// Naive factorization of the diagonal block: the same column/row sweep, done in place
// on the matrix in global memory instead of a shared-memory copy of the block.
__global__ void
lud_diagonal(float *m, int matrix_dim, int offset)
{
  int i, j;
  int tx = threadIdx.x;
  float *a = m + offset * matrix_dim + offset;   // a[r * matrix_dim + c]

  for (i = 0; i < BLOCK_SIZE - 1; i++) {
    if (tx > i) {
      for (j = 0; j < i; j++)
        a[tx * matrix_dim + i] -= a[tx * matrix_dim + j] * a[j * matrix_dim + i];
      a[tx * matrix_dim + i] /= a[i * matrix_dim + i];
    }
    __syncthreads();

    if (tx > i) {
      for (j = 0; j < i + 1; j++)
        a[(i + 1) * matrix_dim + tx] -= a[(i + 1) * matrix_dim + j] * a[j * matrix_dim + tx];
    }
    __syncthreads();
  }
}
