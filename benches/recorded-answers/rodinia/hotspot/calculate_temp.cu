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
#define IN_RANGE(x, min, max)   ((x)>=(min) && (x)<=(max))

// Naive multi-step stencil: no shared tiles. Each thread that owns an output cell of
// the small block recomputes, by itself, every cell of the cone its result depends on
// (the square of half-width `iteration` around it, shrinking by one each step), with
// the temperature and power read from global memory and its own scratch copy of the
// cone in thread-local memory. Neighbours are clamped to the grid as in the tiled code.
__global__ void calculate_temp(int iteration,  //number of iteration
                               float *power,   //power input
                               float *temp_src,    //temperature input/output
                               float *temp_dst,    //temperature input/output
                               int grid_cols,  //Col of grid
                               int grid_rows,  //Row of grid
                               int border_cols,  // border offset
                               int border_rows,  // border offset
                               float Cap,      //Capacitance
                               float Rx,
                               float Ry,
                               float Rz,
                               float step,
                               float time_elapsed)
{
    float amb_temp = 80.0;
    float step_div_Cap = step / Cap;
    float Rx_1 = 1 / Rx;
    float Ry_1 = 1 / Ry;
    float Rz_1 = 1 / Rz;

    int tx = threadIdx.x;
    int ty = threadIdx.y;

    int small_block_rows = BLOCK_SIZE - iteration * 2;
    int small_block_cols = BLOCK_SIZE - iteration * 2;
    int blkY = small_block_rows * blockIdx.y - border_rows;
    int blkX = small_block_cols * blockIdx.x - border_cols;
    int blkYmax = blkY + BLOCK_SIZE - 1;
    int blkXmax = blkX + BLOCK_SIZE - 1;

    // the part of the block's window inside the grid (window coordinates)
    int validYmin = (blkY < 0) ? -blkY : 0;
    int validYmax = (blkYmax > grid_rows - 1) ? BLOCK_SIZE - 1 - (blkYmax - grid_rows + 1) : BLOCK_SIZE - 1;
    int validXmin = (blkX < 0) ? -blkX : 0;
    int validXmax = (blkXmax > grid_cols - 1) ? BLOCK_SIZE - 1 - (blkXmax - grid_cols + 1) : BLOCK_SIZE - 1;

    // only the cells of the small block inside the grid produce a result
    if (iteration < 1)
        return;
    if (!(IN_RANGE(tx, iteration, BLOCK_SIZE - iteration - 1) &&
          IN_RANGE(ty, iteration, BLOCK_SIZE - iteration - 1) &&
          IN_RANGE(tx, validXmin, validXmax) &&
          IN_RANGE(ty, validYmin, validYmax)))
        return;

    float t[2][BLOCK_SIZE][BLOCK_SIZE];

    // the initial temperatures of the cone
    int y0 = max(ty - iteration, validYmin), y1 = min(ty + iteration, validYmax);
    int x0 = max(tx - iteration, validXmin), x1 = min(tx + iteration, validXmax);
    for (int y = y0; y <= y1; y++)
        for (int x = x0; x <= x1; x++)
            t[0][y][x] = temp_src[grid_cols * (blkY + y) + blkX + x];

    int cur = 0;
    for (int i = 0; i < iteration; i++) {
        int reach = iteration - 1 - i;
        int ya = max(ty - reach, validYmin), yb = min(ty + reach, validYmax);
        int xa = max(tx - reach, validXmin), xb = min(tx + reach, validXmax);
        for (int y = ya; y <= yb; y++) {
            int N = (y - 1 < validYmin) ? validYmin : y - 1;
            int S = (y + 1 > validYmax) ? validYmax : y + 1;
            for (int x = xa; x <= xb; x++) {
                int W = (x - 1 < validXmin) ? validXmin : x - 1;
                int E = (x + 1 > validXmax) ? validXmax : x + 1;
                float c = t[cur][y][x];
                float p = power[grid_cols * (blkY + y) + blkX + x];
                t[1 - cur][y][x] = c + step_div_Cap * (p +
                     (t[cur][S][x] + t[cur][N][x] - 2.0 * c) * Ry_1 +
                     (t[cur][y][E] + t[cur][y][W] - 2.0 * c) * Rx_1 +
                     (amb_temp - c) * Rz_1);
            }
        }
        cur = 1 - cur;
    }

    temp_dst[grid_cols * (blkY + ty) + blkX + tx] = t[cur][ty][tx];
}
