#define BIN_COUNT 1024

// Naive histogram: no per-warp sub-histograms in shared memory; every thread adds each
// of its elements to the global histogram directly with an atomic increment.
__global__ void histogram1024Kernel(unsigned int *d_Result, float *d_Data, float minimum, float maximum, int dataN)
{
    int numThreads = blockDim.x * gridDim.x;

    for (int pos = blockIdx.x * blockDim.x + threadIdx.x; pos < dataN; pos += numThreads) {
        unsigned int bin = ((d_Data[pos] - minimum) / (maximum - minimum)) * BIN_COUNT;
        atomicAdd(d_Result + (bin & 0x3FFU), 1U);
    }
}
