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

#define LOG_DIVISIONS	10
#define DIVISIONS		(1 << LOG_DIVISIONS)

// first float4 of each division (host-filled table)
__constant__ int constStartAddr[DIVISIONS + 1];

// the list as sorted so far, four floats per texel (bound by the host to it)
__device__ kernelpair_legacy_texture<float4, 1> tex;

// one float4 of the list, read as four scalar floats
__device__ float4 loadGroup(const float *src, int group)
{
	return make_float4(src[4 * group], src[4 * group + 1], src[4 * group + 2], src[4 * group + 3]);
}

// the four values in ascending order (insertion sort)
__device__ float4 sort4(float4 g)
{
	float v[4] = {g.x, g.y, g.z, g.w};
	for (int k = 1; k < 4; k++) {
		float x = v[k];
		int j = k;
		while (j > 0 && v[j - 1] > x) {
			v[j] = v[j - 1];
			j--;
		}
		v[j] = x;
	}
	return make_float4(v[0], v[1], v[2], v[3]);
}

// Naive merge pass: the same four-at-a-time merge of the thread's two sorted runs
// (nrElems/2 float4 groups each, the second cut at the division's end), but every group
// is read as four scalar floats from global memory when it is needed (no texture
// prefetch of the next groups) and written as four scalar floats.
__global__ void
mergeSortPass(float4 *result, int nrElems, int threadsPerDiv)
{
	int tid = (blockIdx.x * blockDim.x) + threadIdx.x;
	int division = tid / threadsPerDiv;
	if (division >= DIVISIONS) return;
	int int_tid = tid - division * threadsPerDiv;
	int Astart = constStartAddr[division] + int_tid * nrElems;
	int Bstart = Astart + nrElems / 2;
	int end = constStartAddr[division + 1];

	const float *src = (const float *) tex.ptr;
	float *dst = (float *) result + 4 * Astart;

	if (Astart >= end)
		return;
	if (Bstart >= end) {
		// a lone run: copied as it is
		for (int i = 0; i < 4 * (end - Astart); i++)
			dst[i] = src[4 * Astart + i];
		return;
	}

	int aidx = 0, bidx = 0, out = 0;
	float4 a = loadGroup(src, Astart);
	float4 b = loadGroup(src, Bstart);

	while (true) {
		// the four smallest of the eight values go out, the four largest stay in b
		float4 lo, hi;
		lo.x = (a.x < b.w) ? a.x : b.w;
		lo.y = (a.y < b.z) ? a.y : b.z;
		lo.z = (a.z < b.y) ? a.z : b.y;
		lo.w = (a.w < b.x) ? a.w : b.x;
		hi.x = (a.w >= b.x) ? a.w : b.x;
		hi.y = (a.z >= b.y) ? a.z : b.y;
		hi.z = (a.y >= b.z) ? a.y : b.z;
		hi.w = (a.x >= b.w) ? a.x : b.w;
		a = sort4(lo);
		b = sort4(hi);
		dst[4 * out] = a.x;
		dst[4 * out + 1] = a.y;
		dst[4 * out + 2] = a.z;
		dst[4 * out + 3] = a.w;
		out++;

		bool leftInA = (aidx + 1 < nrElems / 2);
		bool leftInB = (bidx + 1 < nrElems / 2) && (Bstart + bidx + 1 < end);

		if (leftInA && leftInB) {
			if (src[4 * (Astart + aidx + 1)] < src[4 * (Bstart + bidx + 1)]) {
				aidx += 1;
				a = loadGroup(src, Astart + aidx);
			} else {
				bidx += 1;
				a = loadGroup(src, Bstart + bidx);
			}
		} else if (leftInA) {
			aidx += 1;
			a = loadGroup(src, Astart + aidx);
		} else if (leftInB) {
			bidx += 1;
			a = loadGroup(src, Bstart + bidx);
		} else {
			break;
		}
	}
	dst[4 * out] = b.x;
	dst[4 * out + 1] = b.y;
	dst[4 * out + 2] = b.z;
	dst[4 * out + 3] = b.w;
}
