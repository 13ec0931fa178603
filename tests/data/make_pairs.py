#!/usr/bin/env python3
"""Writes tests/data/pairs.jsonl: small slow/fast pairs of our own kernels (never suite code)
covering every export case: verified natural and synthesized pairs, an identical control,
a pending pair, unverified statuses, an exact and a near duplicate, a non-redistributable
licence and an over-long kernel. Rerun after changing it; the output is committed."""
import hashlib, json, os

def cid(*parts):
    h = hashlib.sha256()
    for p in parts:
        h.update(p.encode()); h.update(b"\0")
    return h.hexdigest()[:16]

MIT = {"id": "MIT", "source": "LICENSE", "copyright": "Copyright (c) kernelpair authors", "redistributable": True}
PROP = {"id": "LicenseRef-proprietary", "source": "header", "copyright": "Copyright (c) Example Corp", "redistributable": False}

def unit(suite, bench, variant, kernel, params, source, licence=MIT):
    path = f"benchmarks/{bench}/src/{variant}/kernel.cu"
    return {
        "id": cid(suite, bench, variant, path, kernel, source), "suite": suite, "benchmark": bench,
        "variant": variant, "path": path, "line": 1, "kernel": kernel,
        "params": [{"name": n, "type": t} for t, n in params], "source": source,
        "symbol": kernel, "pulled": {}, "features": {k: False for k in [
            "shared_memory", "dynamic_shared_memory", "constant_memory", "texture_references",
            "atomics", "templates", "warp_primitives", "vector_types"]},
        "provenance": {"licence": licence},
    }

DEVICE = {"name": "NVIDIA H100 80GB HBM3", "sm_count": 132, "compute_capability": "9.0",
          "driver_version": "580.65.06", "cuda_version": "13.0"}

def verification(status, median=None):
    v = {"status": status, "reason": f"{status} on fixture", "tool_version": "0.1.0"}
    if status not in ("no_gpu",):
        v["device"] = DEVICE
    if median is not None:
        v["speedup"] = {"size_set": "large", "median": median, "ci_low": round(median * 0.95, 3), "ci_high": round(median * 1.05, 3)}
        # The verify worker's layout (`evidence.timings`, crate::evidence::TimingEvidence):
        # the fast kernel takes 1 ms, the slow one `speedup` ms.
        def timing(name, speedup, nbytes):
            t = lambda ms: {"median_ms": ms, "iqr_ms": 0.0, "min_ms": ms, "runs": 20}
            return {"size_set": name, "bytes": nbytes, "slow": t(speedup), "fast": t(1.0),
                    "speedup": speedup, "ci_low": round(speedup * 0.9, 3), "ci_high": round(speedup * 1.1, 3)}
        small = timing("small", round(median / 2, 3), 1 << 20)
        large = timing("large", median, 1 << 24)
        large["ci_low"], large["ci_high"] = v["speedup"]["ci_low"], v["speedup"]["ci_high"]
        v["evidence"] = {"harness": "harness.toml", "timings": [small, large]}
    return v

def pair(suite, bench, kernel, params, slow_src, fast_src, status="verified", median=2.0,
         techniques=(), description=None, origin=None, identical=False, licence=MIT, slow_missing=False):
    fast = unit(suite, bench, "cuda", kernel, params, fast_src, licence)
    slow = None if slow_missing else unit(suite, bench, "cuda_base", kernel, params, slow_src, licence)
    p = {"id": cid("pair", slow["id"] if slow else "", fast["id"]), "suite": suite, "benchmark": bench,
         "kernel": kernel, "fast": fast, "origin": origin or {"kind": "natural"}, "rule": "name_and_params",
         "identical": identical}
    if slow: p["slow"] = slow
    if techniques: p["techniques"] = list(techniques)
    if description: p["description"] = description
    if status: p["verification"] = verification(status, median if status in ("verified", "not_faster") else None)
    # Record version 2 on purpose: every reader converts it (src/record/upgrade.rs), so the
    # export tests also prove that old files are read.
    return {"version": 2, "type": "pair", "data": p}

SAXPY_P = [("int", "n"), ("float", "a"), ("const float *", "x"), ("float *", "y")]
SAXPY_SLOW = """__global__ void saxpy(int n, float a, const float *x, float *y)
{
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        y[i] = a * x[i] + y[i];
    }
}
"""
SAXPY_FAST = """__global__ void saxpy(int n, float a, const float *x, float *y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int stride = gridDim.x * blockDim.x;
    for (; i < n; i += stride) {
        y[i] = a * x[i] + y[i];
    }
}
"""
RED_P = [("const float *", "in"), ("float *", "out"), ("int", "n")]
RED_SLOW = """__global__ void reduce_sum(const float *in, float *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        atomicAdd(out, in[i]);
    }
}
"""
RED_FAST = """__global__ void reduce_sum(const float *in, float *out, int n)
{
    __shared__ float partial[256];
    int t = threadIdx.x;
    int i = blockIdx.x * blockDim.x * 2 + t;
    float v = 0.0f;
    if (i < n) v += in[i];
    if (i + blockDim.x < n) v += in[i + blockDim.x];
    partial[t] = v;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 32; s >>= 1) {
        if (t < s) partial[t] += partial[t + s];
        __syncthreads();
    }
    if (t < 32) {
        v = partial[t] + partial[t + 32];
        for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffff, v, o);
        if (t == 0) atomicAdd(out, v);
    }
}
"""
TR_P = [("const float *", "in"), ("float *", "out"), ("int", "w"), ("int", "h")]
TR_SLOW = """__global__ void transpose(const float *in, float *out, int w, int h)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < w && y < h) {
        out[x * h + y] = in[y * w + x];
    }
}
"""
TR_FAST = """#define TILE 32
__global__ void transpose(const float *in, float *out, int w, int h)
{
    __shared__ float tile[TILE][TILE + 1];
    int x = blockIdx.x * TILE + threadIdx.x;
    int y = blockIdx.y * TILE + threadIdx.y;
    if (x < w && y < h) tile[threadIdx.y][threadIdx.x] = in[y * w + x];
    __syncthreads();
    x = blockIdx.y * TILE + threadIdx.x;
    y = blockIdx.x * TILE + threadIdx.y;
    if (x < h && y < w) out[y * h + x] = tile[threadIdx.x][threadIdx.y];
}
"""
MM_P = [("const float *", "A"), ("const float *", "B"), ("float *", "C"), ("int", "n")]
MM_SLOW = """__global__ void matmul(const float *A, const float *B, float *C, int n)
{
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < n && col < n) {
        float acc = 0.0f;
        for (int k = 0; k < n; ++k) acc += A[row * n + k] * B[k * n + col];
        C[row * n + col] = acc;
    }
}
"""
MM_FAST = """#define T 16
__global__ void matmul(const float *A, const float *B, float *C, int n)
{
    __shared__ float As[T][T];
    __shared__ float Bs[T][T];
    int row = blockIdx.y * T + threadIdx.y;
    int col = blockIdx.x * T + threadIdx.x;
    float acc = 0.0f;
    for (int t0 = 0; t0 < n; t0 += T) {
        As[threadIdx.y][threadIdx.x] = (row < n && t0 + threadIdx.x < n) ? A[row * n + t0 + threadIdx.x] : 0.0f;
        Bs[threadIdx.y][threadIdx.x] = (col < n && t0 + threadIdx.y < n) ? B[(t0 + threadIdx.y) * n + col] : 0.0f;
        __syncthreads();
#pragma unroll
        for (int k = 0; k < T; ++k) acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
        __syncthreads();
    }
    if (row < n && col < n) C[row * n + col] = acc;
}
"""
HIST_P = [("const unsigned char *", "data"), ("unsigned int *", "bins"), ("int", "n")]
HIST_SLOW = """__global__ void histogram(const unsigned char *data, unsigned int *bins, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(&bins[data[i]], 1u);
}
"""
HIST_FAST = """__global__ void histogram(const unsigned char *data, unsigned int *bins, int n)
{
    __shared__ unsigned int local[256];
    for (int b = threadIdx.x; b < 256; b += blockDim.x) local[b] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        atomicAdd(&local[data[i]], 1u);
    __syncthreads();
    for (int b = threadIdx.x; b < 256; b += blockDim.x) atomicAdd(&bins[b], local[b]);
}
"""
ST_P = [("const float *", "in"), ("float *", "out"), ("int", "n")]
ST_SLOW = """__global__ void stencil3(const float *in, float *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i > 0 && i < n - 1) out[i] = (in[i - 1] + in[i] + in[i + 1]) / 3.0f;
}
"""
ST_FAST = """__global__ void stencil3(const float *in, float *out, int n)
{
    extern __shared__ float s[];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int t = threadIdx.x + 1;
    if (i < n) s[t] = in[i];
    if (threadIdx.x == 0 && i > 0) s[0] = in[i - 1];
    if (threadIdx.x == blockDim.x - 1 && i + 1 < n) s[t + 1] = in[i + 1];
    __syncthreads();
    if (i > 0 && i < n - 1) out[i] = (s[t - 1] + s[t] + s[t + 1]) * (1.0f / 3.0f);
}
"""
SCALE_P = [("float *", "v"), ("float", "k"), ("int", "n")]
SCALE_SLOW = """__global__ void scale(float *v, float k, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) v[i] = v[i] * k;
}
"""
SCALE_FAST = """__global__ void scale(float *v, float k, int n)
{
    int i = (blockIdx.x * blockDim.x + threadIdx.x) * 4;
    if (i + 3 < n) {
        float4 q = reinterpret_cast<float4 *>(v)[i / 4];
        q.x *= k; q.y *= k; q.z *= k; q.w *= k;
        reinterpret_cast<float4 *>(v)[i / 4] = q;
    } else {
        for (; i < n; ++i) v[i] *= k;
    }
}
"""
# A long kernel: 1500 unrolled statements, far over the default 16,384-token cap.
LONG_BODY = "".join(f"    acc += x[{i}] * {i}.0f;\n" for i in range(1500))
LONG_SLOW = "__global__ void poly(const float *x, float *y)\n{\n    float acc = 0.0f;\n" + LONG_BODY + "    y[0] = acc;\n}\n"
LONG_FAST = LONG_SLOW.replace("float acc = 0.0f;", "float acc = 0.0f;\n#pragma unroll 8")

lines = [
    pair("mini", "saxpy", "saxpy", SAXPY_P, SAXPY_SLOW, SAXPY_FAST, median=1.8, techniques=["grid_stride_loop"],
         description="Computes y = a*x + y over n floats."),
    # Exact duplicate of saxpy (comment and layout only) in another benchmark.
    pair("mini", "saxpy2", "saxpy", SAXPY_P, SAXPY_SLOW.replace("{\n", "{ // same\n", 1), SAXPY_FAST, median=1.7),
    pair("mini", "reduce", "reduce_sum", RED_P, RED_SLOW, RED_FAST, median=12.5,
         techniques=["shared_memory", "warp_shuffle"], description="Sums n floats into *out."),
    # Near duplicate of reduce: one constant changed.
    pair("mini", "reduce-copy", "reduce_sum", RED_P, RED_SLOW, RED_FAST.replace("s > 32", "s > 16"), median=11.0),
    pair("mini", "transpose", "transpose", TR_P, TR_SLOW, TR_FAST, median=3.4, techniques=["shared_memory", "coalescing"],
         description="Transposes a w x h matrix."),
    pair("mini", "matmul", "matmul", MM_P, MM_SLOW, MM_FAST, median=6.2, techniques=["shared_memory", "loop_unrolling"],
         origin={"kind": "synthesized", "model": "gemma-3-270m", "prompt_hash": "abc123", "attempts": 2, "checks": ["compiles"]}),
    pair("extra", "histogram", "histogram", HIST_P, HIST_SLOW, HIST_FAST, median=4.0, techniques=["shared_memory", "atomics"]),
    pair("extra", "stencil", "stencil3", ST_P, ST_SLOW, ST_FAST, median=1.3, techniques=["shared_memory"]),
    pair("extra", "scale", "scale", SCALE_P, SCALE_SLOW, SCALE_FAST, median=1.6, techniques=["vector_types"],
         licence=PROP),
    pair("extra", "poly", "poly", [("const float *", "x"), ("float *", "y")], LONG_SLOW, LONG_FAST, median=1.2,
         techniques=["loop_unrolling"]),
    # Not exportable by default:
    pair("extra", "copy", "scale", SCALE_P, SCALE_SLOW, SCALE_SLOW, status=None, identical=True),
    pair("extra", "pending", "scale", SCALE_P, None, SCALE_FAST.replace("4;", "4; // p"), status=None,
         origin={"kind": "pending"}, slow_missing=True),
    pair("extra", "slowfast", "stencil3", ST_P, ST_SLOW.replace("3.0f", "3.0"), ST_FAST, status="not_faster", median=1.02),
    pair("extra", "mismatch", "histogram", HIST_P, HIST_SLOW.replace("1u", "2u"), HIST_FAST, status="mismatch"),
    pair("extra", "nogpu", "transpose", TR_P, TR_SLOW.replace("w && y", "w && 0 <= y"), TR_FAST, status="no_gpu"),
    pair("extra", "fresh", "matmul", MM_P, MM_SLOW.replace("++k", "k++"), MM_FAST.replace("T 16", "T 32"), status=None),
]
out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pairs.jsonl")
with open(out, "w") as f:
    for l in lines:
        f.write(json.dumps(l, separators=(",", ":"), ensure_ascii=False) + "\n")
print(f"wrote {len(lines)} pairs to {out}")
