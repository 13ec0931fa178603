#define BLOCK_SIZE 256
#define HALO 1
#define IN_RANGE(x, min, max)   ((x)>=(min) && (x)<=(max))
#define MIN(a, b) ((a)<=(b) ? (a) : (b))

// Naive pyramid step: no shared rows. Each thread that owns an output column redoes,
// on its own, the dynamic program over the cone of columns its result depends on
// (2*iteration+1 columns of gpuSrc shrinking by one on each side per row), reading
// the source row and the wall straight from global memory.
__global__ void dynproc_kernel(
                int iteration,
                int *gpuWall,
                int *gpuSrc,
                int *gpuResults,
                int cols,
                int rows,
                int startStep,
                int border)
{
    int bx = blockIdx.x;
    int tx = threadIdx.x;

    int small_block_cols = BLOCK_SIZE - iteration * HALO * 2;
    int blkX = small_block_cols * bx - border;
    int xidx = blkX + tx;

    // Only the threads of the small block write a result, and only inside the data.
    if (iteration < 1)
        return;
    if (!IN_RANGE(tx, iteration, BLOCK_SIZE - iteration - 1))
        return;
    if (!IN_RANGE(xidx, 0, cols - 1))
        return;

    int lo = xidx - iteration;
    if (lo < 0) lo = 0;
    int hi = xidx + iteration;
    if (hi > cols - 1) hi = cols - 1;

    int cost[BLOCK_SIZE];
    for (int x = lo; x <= hi; x++)
        cost[x - lo] = gpuSrc[x];

    for (int i = 0; i < iteration; i++) {
        int reach = iteration - 1 - i;
        int a = xidx - reach;
        if (a < 0) a = 0;
        int b = xidx + reach;
        if (b > cols - 1) b = cols - 1;

        // cost[] is updated in place; `west` keeps the previous row's value left of x.
        int west = (a > 0) ? cost[a - 1 - lo] : 0;
        for (int x = a; x <= b; x++) {
            int up = cost[x - lo];
            int left = (x > 0) ? west : up;
            int right = (x < cols - 1) ? cost[x + 1 - lo] : up;
            int shortest = MIN(left, up);
            shortest = MIN(shortest, right);
            west = up;
            cost[x - lo] = shortest + gpuWall[cols * (startStep + i) + x];
        }
    }

    gpuResults[xidx] = cost[xidx - lo];
}
