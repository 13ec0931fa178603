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

// Naive SRAD step 2: each thread reads its diffusion coefficient and its south and
// east neighbours' straight from global memory (no shared-memory tiles), clamped at
// the last block row/column exactly as the tiled kernel's border loads are.
__global__ void
srad_cuda_2(
      float *E_C,
      float *W_C,
      float *N_C,
      float *S_C,
      float *J_cuda,
      float *C_cuda,
      int cols,
      int rows,
      float lambda,
      float q0sqr)
{
  int bx = blockIdx.x;
  int by = blockIdx.y;
  int tx = threadIdx.x;
  int ty = threadIdx.y;

  int base  = cols * BLOCK_SIZE * by + BLOCK_SIZE * bx;
  int index = base + cols * ty + tx;
  float cc, cn, cs, ce, cw, d_sum;

  cc = C_cuda[index];
  cn = cc;
  cw = cc;

  if (ty < BLOCK_SIZE - 1)
    cs = C_cuda[index + cols];
  else if (by == gridDim.y - 1)
    cs = C_cuda[cols * BLOCK_SIZE * (gridDim.y - 1) + BLOCK_SIZE * bx + cols * (BLOCK_SIZE - 1) + tx];
  else
    cs = C_cuda[base + cols * BLOCK_SIZE + tx];

  if (tx < BLOCK_SIZE - 1)
    ce = C_cuda[index + 1];
  else if (bx == gridDim.x - 1)
    ce = C_cuda[cols * BLOCK_SIZE * by + BLOCK_SIZE * (gridDim.x - 1) + cols * ty + BLOCK_SIZE - 1];
  else
    ce = C_cuda[base + cols * ty + BLOCK_SIZE];

  // divergence (equ 58)
  d_sum = cn * N_C[index] + cs * S_C[index] + cw * W_C[index] + ce * E_C[index];

  // image update (equ 61)
  J_cuda[index] = J_cuda[index] + 0.25 * lambda * d_sum;
}
