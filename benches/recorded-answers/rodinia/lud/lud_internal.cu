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

// Naive trailing update: each thread reads its row of the column perimeter and its
// column of the row perimeter from global memory, no shared-memory tiles.
__global__ void
lud_internal(float *m, int matrix_dim, int offset)
{
  int i;
  float sum;

  int global_row_id = offset + (blockIdx.y + 1) * BLOCK_SIZE;
  int global_col_id = offset + (blockIdx.x + 1) * BLOCK_SIZE;
  int row = global_row_id + threadIdx.y;
  int col = global_col_id + threadIdx.x;

  sum = 0;
  for (i = 0; i < BLOCK_SIZE; i++)
    sum += m[row * matrix_dim + offset + i] * m[(offset + i) * matrix_dim + col];
  m[row * matrix_dim + col] -= sum;
}
