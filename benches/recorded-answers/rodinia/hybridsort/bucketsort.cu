#define LOG_DIVISIONS	10
#define DIVISIONS		(1 << LOG_DIVISIONS)
#define BUCKET_WARP_LOG_SIZE	5
#define BUCKET_WARP_N			1
#define BUCKET_BLOCK_MEMORY		(DIVISIONS * BUCKET_WARP_N)

// Naive scatter: each element's destination (bucket start + the block's offset in the
// bucket + the element's rank) is read from global memory for every element instead of
// from a per-block table staged in shared memory.
__global__ void
bucketsort(float *input, int *indice, float *output, int size, unsigned int *d_prefixoffsets,
		   unsigned int *l_offsets)
{
	int prefixBase = blockIdx.x * BUCKET_BLOCK_MEMORY;
	int warpBase = (threadIdx.x >> BUCKET_WARP_LOG_SIZE) * DIVISIONS;
	int numThreads = blockDim.x * gridDim.x;

	for (int tid = blockIdx.x * blockDim.x + threadIdx.x; tid < size; tid += numThreads) {
		int id = indice[tid];
		int slot = warpBase + (id & (DIVISIONS - 1));
		unsigned int start = l_offsets[slot & (DIVISIONS - 1)] + d_prefixoffsets[prefixBase + slot];
		output[start + (id >> LOG_DIVISIONS)] = input[tid];
	}
}
