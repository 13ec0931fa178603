// from <limits.h> (NVRTC has no host headers)
#define INT_MAX 2147483647

// Park-Miller style LCG of the benchmark: seed = (A * seed + C) % INT_MAX, in 32-bit
// wrap-around arithmetic, returning |seed| / INT_MAX.
__device__ double d_randu(int *seed, int index)
{
    int next = (int) (1103515245u * (unsigned int) seed[index] + 12345u);
    seed[index] = next % INT_MAX;
    return fabs(seed[index] / ((double) INT_MAX));
}

// Box-Muller: one normal sample from two uniform ones.
__device__ double d_randn(int *seed, int index)
{
    double pi = 3.14159265358979323846;
    double u = d_randu(seed, index);
    double v = d_randu(seed, index);
    double cosine = cos(2 * pi * v);
    double rt = -2 * log(u);
    return sqrt(rt) * cosine;
}

// The benchmark's rounding helper returns the value truncated toward zero whichever
// branch it takes (its `newValue++` hands back the old value).
__device__ double dev_round_double(double value)
{
    return (double) ((int) value);
}

// Naive likelihood step: the per-particle work is unchanged; the per-block sum of the
// new weights is done serially by thread 0 reading the weights from global memory
// (no shared-memory tree).
__global__ void likelihood_kernel(double * arrayX, double * arrayY, double * xj, double * yj, double * CDF, int * ind, int * objxy, double * likelihood, unsigned char * I, double * u, double * weights, int Nparticles, int countOnes, int max_size, int k, int IszY, int Nfr, int *seed, double* partial_sums)
{
    int first = blockDim.x * blockIdx.x;
    int i = first + threadIdx.x;

    if (i < Nparticles) {
        weights[i] = 1 / ((double) (Nparticles));

        double x = xj[i] + 1.0 + 5.0 * d_randn(seed, i);
        double y = yj[i] - 2.0 + 2.0 * d_randn(seed, i);
        arrayX[i] = x;
        arrayY[i] = y;

        double sum = 0.0;
        for (int o = 0; o < countOnes; o++) {
            int indX = dev_round_double(x) + objxy[o * 2 + 1];
            int indY = dev_round_double(y) + objxy[o * 2];
            int at = abs(indX * IszY * Nfr + indY * Nfr + k);
            if (at >= max_size)
                at = 0;
            ind[i * countOnes + o] = at;
            double a = (double) (I[at] - 100);
            double b = (double) (I[at] - 228);
            sum += (a * a - b * b) / 50.0;
        }
        likelihood[i] = sum / countOnes;
        weights[i] = weights[i] * exp(likelihood[i]);
    }

    // every thread's weight is in global memory before thread 0 adds them up
    __syncthreads();

    if (threadIdx.x == 0) {
        double total = 0.0;
        for (int t = 0; t < blockDim.x; t++) {
            if (first + t < Nparticles)
                total += weights[first + t];
        }
        partial_sums[blockIdx.x] = total;
    }
}
