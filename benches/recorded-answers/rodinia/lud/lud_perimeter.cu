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

// Naive perimeter update: the first BLOCK_SIZE threads each solve one column of the
// row perimeter block, the other BLOCK_SIZE threads one row of the column perimeter
// block, in place in global memory, reading the factored diagonal block from global
// memory too (no shared-memory copies).
__global__ void
lud_perimeter(float *m, int matrix_dim, int offset)
{
  int i, j;
  int idx;
  float *dia = m + offset * matrix_dim + offset;   // dia[r * matrix_dim + c]

  if (threadIdx.x < BLOCK_SIZE) { // peri-row: column idx of the block right of dia
    idx = threadIdx.x;
    float *row = dia + (blockIdx.x + 1) * BLOCK_SIZE + idx;   // row[r * matrix_dim]
    for (i = 1; i < BLOCK_SIZE; i++) {
      for (j = 0; j < i; j++)
        row[i * matrix_dim] -= dia[i * matrix_dim + j] * row[j * matrix_dim];
    }
  } else { // peri-col: row idx of the block below dia
    idx = threadIdx.x - BLOCK_SIZE;
    float *col = dia + ((blockIdx.x + 1) * BLOCK_SIZE + idx) * matrix_dim;   // col[c]
    for (i = 0; i < BLOCK_SIZE; i++) {
      for (j = 0; j < i; j++)
        col[i] -= col[j] * dia[j * matrix_dim + i];
      col[i] /= dia[i * matrix_dim + i];
    }
  }
}
