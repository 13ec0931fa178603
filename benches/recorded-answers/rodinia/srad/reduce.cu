#define fp float
#define NUMBER_THREADS 512

// Naive reduction: no shared-memory tree. The first thread of each block adds up the
// block's partial sums serially from global memory and stores the block's result where
// the tiled kernel does. The last, partly filled block keeps the tiled kernel's split:
// the first df elements (df = the largest power of two <= its element count) are read
// with stride d_mul, the remainder at consecutive indices.
__global__ void reduce(long d_Ne,        // number of elements in array
                       int d_no,         // number of sums to reduce
                       int d_mul,        // increment
                       fp *d_sums,       // partial sums (DEVICE GLOBAL MEMORY)
                       fp *d_sums2)
{
    int bx = blockIdx.x;
    int tx = threadIdx.x;
    int nf = NUMBER_THREADS - (gridDim.x * NUMBER_THREADS - d_no);   // elements of the last block
    int first = bx * NUMBER_THREADS;
    int i;

    if (tx != 0)
        return;

    fp sum = 0;
    fp sum2 = 0;

    if (nf == NUMBER_THREADS || bx != (gridDim.x - 1)) {
        // a full block
        for (i = 0; i < NUMBER_THREADS; i++) {
            sum = sum + d_sums[(first + i) * d_mul];
            sum2 = sum2 + d_sums2[(first + i) * d_mul];
        }
    } else {
        // the last block, not full
        int df = 0;
        for (i = 2; i <= NUMBER_THREADS; i = 2 * i) {
            if (nf >= i) {
                df = i;
            }
        }
        if (df == 0)
            return;   // fewer than two elements: the tiled kernel stores nothing
        for (i = 0; i < df; i++) {
            sum = sum + d_sums[(first + i) * d_mul];
            sum2 = sum2 + d_sums2[(first + i) * d_mul];
        }
        for (i = first + df; i < first + nf; i++) {
            sum = sum + d_sums[i];
            sum2 = sum2 + d_sums2[i];
        }
    }

    d_sums[bx * d_mul * NUMBER_THREADS] = sum;
    d_sums2[bx * d_mul * NUMBER_THREADS] = sum2;
}
