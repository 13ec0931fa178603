// from <limits.h> (NVRTC has no host headers)
#define INT_MAX 2147483647

// The benchmark's LCG: seed = (A * seed + C) % INT_MAX in 32-bit wrap-around
// arithmetic, returning |seed| / INT_MAX.
__device__ double d_randu(int *seed, int index)
{
    int next = (int) (1103515245u * (unsigned int) seed[index] + 12345u);
    seed[index] = next % INT_MAX;
    return fabs(seed[index] / ((double) INT_MAX));
}

// Naive normalization: every thread reads the total weight and the first threshold
// from global memory itself (no values broadcast through shared memory); thread 0 of
// the grid builds the CDF serially as before.
__global__ void normalize_weights_kernel(double * weights, int Nparticles, double* partial_sums, double * CDF, double * u, int * seed)
{
    int i = blockDim.x * blockIdx.x + threadIdx.x;

    if (i < Nparticles) {
        weights[i] = weights[i] / partial_sums[0];
    }

    __syncthreads();

    if (i == 0) {
        CDF[0] = weights[0];
        for (int x = 1; x < Nparticles; x++) {
            CDF[x] = weights[x] + CDF[x - 1];
        }
        u[0] = (1 / ((double) (Nparticles))) * d_randu(seed, i);
    }

    __syncthreads();

    double u1 = u[0];

    // all threads of the block have read u[0] before thread 0 rewrites it
    __syncthreads();

    if (i < Nparticles) {
        u[i] = u1 + i / ((double) (Nparticles));
    }
}
