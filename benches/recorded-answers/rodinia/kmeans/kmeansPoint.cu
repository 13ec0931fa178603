#define THREADS_PER_DIM 16
#define THREADS_PER_BLOCK THREADS_PER_DIM*THREADS_PER_DIM
#if (!defined(FLT_MAX))
#define FLT_MAX 3.40282347e+38
#endif

// Naive nearest-center search: each thread reads its point's features (the inverted,
// feature-major array: feature j of point p at features[p + j*npoints]) and the cluster
// centers straight from global memory, instead of through a texture and a
// __constant__ copy of the centers (the host fills both from the same data).
// The optional GPU_DELTA_REDUCTION / GPU_NEW_CENTER_REDUCTION parts are off in the
// benchmark's build and are left out.
__global__ void
kmeansPoint(float  *features,          /* in: [npoints*nfeatures] */
            int     nfeatures,
            int     npoints,
            int     nclusters,
            int    *membership,
            float  *clusters,
            float  *block_clusters,
            int    *block_deltas)
{
    unsigned int block_id = gridDim.x * blockIdx.y + blockIdx.x;
    unsigned int point_id = block_id * blockDim.x * blockDim.y + threadIdx.x;

    if (point_id < npoints) {
        int index = -1;
        float min_dist = FLT_MAX;

        for (int i = 0; i < nclusters; i++) {
            float dist = 0.0;
            for (int j = 0; j < nfeatures; j++) {
                float diff = features[point_id + j * npoints] - clusters[i * nfeatures + j];
                dist += diff * diff;
            }
            if (dist < min_dist) {
                min_dist = dist;
                index = i;
            }
        }

        membership[point_id] = index;
    }
}
