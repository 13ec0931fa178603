#define WIDTH 16
#define HEIGHT 16

// Naive layer-forward: no shared-memory staging. Each thread reads its weights and
// inputs straight from global memory and sums, serially, the rows its slot of the
// fast kernel's tree reduction ends up holding.
__global__ void
bpnn_layerforward_CUDA(float *input_cuda,
                       float *output_hidden_cuda,
                       float *input_hidden_cuda,
                       float *hidden_partial_sum,
                       int in,
                       int hid)
{
   int by = blockIdx.y;
   int tx = threadIdx.x;
   int ty = threadIdx.y;
   int row0 = HEIGHT * by;

   // Row ty of the block's tile ends up holding the sum of rows ty .. ty+span-1,
   // span being the largest power of two dividing ty (HEIGHT for row 0).
   int span = (ty == 0) ? HEIGHT : (ty & -ty);
   if (span > HEIGHT) span = HEIGHT;

   float mine = 0.0f;
   for (int r = ty; r < ty + span; r++) {
      int w = (hid + 1) * (row0 + r + 1) + tx + 1;
      mine = mine + input_hidden_cuda[w] * input_cuda[row0 + r + 1];
   }

   // Thread (tx == 0, ty) reports the whole column ty of the block.
   float column = 0.0f;
   if (tx == 0) {
      for (int r = 0; r < HEIGHT; r++) {
         int w = (hid + 1) * (row0 + r + 1) + ty + 1;
         column = column + input_hidden_cuda[w] * input_cuda[row0 + r + 1];
      }
   }

   // Every read of the weights is done before any thread overwrites them.
   __syncthreads();

   int index = (hid + 1) * (row0 + ty + 1) + tx + 1;
   input_hidden_cuda[index] = mine;

   if (tx == 0) {
      hidden_partial_sum[by * hid + ty] = column;
   }
}
