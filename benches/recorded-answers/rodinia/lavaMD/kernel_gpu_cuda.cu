#define fp double
#define NUMBER_PAR_PER_BOX 100
#if (defined(RD_WG_SIZE_0_0))
#define NUMBER_THREADS RD_WG_SIZE_0_0
#endif
#if !(defined(RD_WG_SIZE_0_0)) && (defined(RD_WG_SIZE_0))
#define NUMBER_THREADS RD_WG_SIZE_0
#endif
#if !(defined(RD_WG_SIZE_0_0)) && !(defined(RD_WG_SIZE_0)) && (defined(RD_WG_SIZE))
#define NUMBER_THREADS RD_WG_SIZE
#endif
#if !(defined(RD_WG_SIZE_0_0)) && !(defined(RD_WG_SIZE_0)) && !(defined(RD_WG_SIZE))
#define NUMBER_THREADS 128
#endif
#define DOT(A,B) ((A.x)*(B.x)+(A.y)*(B.y)+(A.z)*(B.z))

typedef struct par_str
{
	fp alpha;
} par_str;

typedef struct dim_str
{
	// input arguments
	int cur_arg;
	int arch_arg;
	int cores_arg;
	int boxes1d_arg;

	// system memory
	long number_boxes;
	long box_mem;
	long space_elem;
	long space_mem;
	long space_mem2;
} dim_str;

typedef struct nei_str
{
	// neighbor box
	int x, y, z;
	int number;
	long offset;
} nei_str;

typedef struct box_str
{
	// home box
	int x, y, z;
	int number;
	long offset;

	// neighbor boxes
	int nn;
	nei_str nei[26];
} box_str;

typedef struct
{
	fp v, x, y, z;
} FOUR_VECTOR;

typedef struct
{
	fp x, y, z;
} THREE_VECTOR;

// Naive force accumulation: one block per home box, each thread handles home particles
// tx, tx + NUMBER_THREADS, ...; the home and neighbour particles and charges are read
// straight from global memory (no shared-memory copies of the boxes).
__global__ void kernel_gpu_cuda(par_str d_par_gpu,
								dim_str d_dim_gpu,
								box_str* d_box_gpu,
								FOUR_VECTOR* d_rv_gpu,
								fp* d_qv_gpu,
								FOUR_VECTOR* d_fv_gpu)
{
	int bx = blockIdx.x;
	int tx = threadIdx.x;

	if (bx < d_dim_gpu.number_boxes) {
		fp a2 = 2.0 * d_par_gpu.alpha * d_par_gpu.alpha;

		int first_i = d_box_gpu[bx].offset;
		FOUR_VECTOR* rA = &d_rv_gpu[first_i];
		FOUR_VECTOR* fA = &d_fv_gpu[first_i];

		for (int k = 0; k < (1 + d_box_gpu[bx].nn); k++) {
			int pointer;
			if (k == 0) {
				pointer = bx;
			} else {
				pointer = d_box_gpu[bx].nei[k - 1].number;
			}

			int first_j = d_box_gpu[pointer].offset;
			FOUR_VECTOR* rB = &d_rv_gpu[first_j];
			fp* qB = &d_qv_gpu[first_j];

			for (int i = tx; i < NUMBER_PAR_PER_BOX; i = i + NUMBER_THREADS) {
				for (int j = 0; j < NUMBER_PAR_PER_BOX; j++) {
					fp r2 = rA[i].v + rB[j].v - DOT(rA[i], rB[j]);
					fp u2 = a2 * r2;
					fp vij = exp(-u2);
					fp fs = 2 * vij;

					THREE_VECTOR d;
					d.x = rA[i].x - rB[j].x;
					fp fxij = fs * d.x;
					d.y = rA[i].y - rB[j].y;
					fp fyij = fs * d.y;
					d.z = rA[i].z - rB[j].z;
					fp fzij = fs * d.z;

					fA[i].v += qB[j] * vij;
					fA[i].x += qB[j] * fxij;
					fA[i].y += qB[j] * fyij;
					fA[i].z += qB[j] * fzij;
				}
			}
		}
	}
}
