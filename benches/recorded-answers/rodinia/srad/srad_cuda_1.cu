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

// Naive SRAD step 1: every thread reads its pixel and its four neighbours straight
// from global memory (no shared-memory tiles). Neighbours outside the image are
// clamped exactly as the tiled kernel's border loads do.
__global__ void
srad_cuda_1(
      float *E_C,
      float *W_C,
      float *N_C,
      float *S_C,
      float *J_cuda,
      float *C_cuda,
      int cols,
      int rows,
      float q0sqr)
{
  int bx = blockIdx.x;
  int by = blockIdx.y;
  int tx = threadIdx.x;
  int ty = threadIdx.y;

  int base  = cols * BLOCK_SIZE * by + BLOCK_SIZE * bx;
  int index = base + cols * ty + tx;

  float n, w, e, s, jc, g2, l, num, den, qsqr, c;

  jc = J_cuda[index];

  // north neighbour
  if (ty > 0)
    n = J_cuda[index - cols] - jc;
  else if (by == 0)
    n = J_cuda[BLOCK_SIZE * bx + tx] - jc;
  else
    n = J_cuda[base + tx - cols] - jc;

  // south neighbour
  if (ty < BLOCK_SIZE - 1)
    s = J_cuda[index + cols] - jc;
  else if (by != 0 && by == gridDim.y - 1)
    s = J_cuda[cols * BLOCK_SIZE * (gridDim.y - 1) + BLOCK_SIZE * bx + cols * (BLOCK_SIZE - 1) + tx] - jc;
  else
    s = J_cuda[base + cols * BLOCK_SIZE + tx] - jc;

  // west neighbour
  if (tx > 0)
    w = J_cuda[index - 1] - jc;
  else if (bx == 0)
    w = J_cuda[cols * BLOCK_SIZE * by + cols * ty] - jc;
  else
    w = J_cuda[base + cols * ty - 1] - jc;

  // east neighbour
  if (tx < BLOCK_SIZE - 1)
    e = J_cuda[index + 1] - jc;
  else if (bx != 0 && bx == gridDim.x - 1)
    e = J_cuda[cols * BLOCK_SIZE * by + BLOCK_SIZE * (gridDim.x - 1) + cols * ty + BLOCK_SIZE - 1] - jc;
  else
    e = J_cuda[base + cols * ty + BLOCK_SIZE] - jc;

  g2 = (n * n + s * s + w * w + e * e) / (jc * jc);

  l = (n + s + w + e) / jc;

  num  = (0.5 * g2) - ((1.0 / 16.0) * (l * l));
  den  = 1 + (.25 * l);
  qsqr = num / (den * den);

  // diffusion coefficent (equ 33)
  den = (qsqr - q0sqr) / (q0sqr * (1 + q0sqr));
  c = 1.0 / (1.0 + den);

  // saturate diffusion coefficent
  if (c < 0) c = 0;
  else if (c > 1) c = 1;

  C_cuda[index] = c;
  E_C[index] = e;
  W_C[index] = w;
  S_C[index] = s;
  N_C[index] = n;
}
