// kernelpair reads legacy textures through this struct ({ptr, width, height, pitch}, in
// elements), which the harness fills; the naive kernels below read `ptr` as a plain
// global array.
template <class KpT, int KpDim>
struct kernelpair_legacy_texture {
  const KpT* ptr;
  int width;
  int height;
  int pitch;
};

// the unsorted list, four floats per texel (bound by the host to the input list)
__device__ kernelpair_legacy_texture<float4, 1> tex;

// Naive first pass: each thread sorts its group of four floats with a plain insertion
// sort, reading and writing the four values one float at a time.
__global__ void
mergeSortFirst(float4 *result, int listsize)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < listsize / 4) {
		const float *src = (const float *) tex.ptr;
		float *dst = (float *) result;
		float v[4];
		for (int k = 0; k < 4; k++) {
			float x = src[4 * i + k];
			int j = k;
			while (j > 0 && v[j - 1] > x) {
				v[j] = v[j - 1];
				j--;
			}
			v[j] = x;
		}
		for (int k = 0; k < 4; k++)
			dst[4 * i + k] = v[k];
	}
}
