// Stand-alone experiment (not gpubench; docs/suites/transpose.md): where the last few percent
// between the best transpose and the copy go on a Hopper GPU, and whether the bulk-copy / TMA
// engine closes them. N x N float32 (N a multiple of 256), CUDA events around one launch.
// Build: nvcc -O3 -std=c++17 -arch=sm_90a -o transpose_tile_placement transpose_tile_placement.cu
// Run:   ./transpose_tile_placement [N=16384] [rounds=2]
#include <cuda.h>
#include <functional>
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

typedef unsigned long long idx;
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("CUDA %s at %d: %s\n", #x, __LINE__, cudaGetErrorString(e)); exit(1); } } while (0)

template <int T, int BR>
__global__ void copy_k(float* __restrict__ out, const float* __restrict__ in, int rows, int cols) {
    const int x = blockIdx.x * T + threadIdx.x, y = blockIdx.y * T + threadIdx.y;
#pragma unroll
    for (int j = 0; j < T; j += BR) out[(idx)(y + j) * cols + x] = in[(idx)(y + j) * cols + x];
}

template <int T, int BR>
__global__ void padded_k(float* __restrict__ out, const float* __restrict__ in, int rows, int cols) {
    __shared__ float A[T][T + 1];
    int x = blockIdx.x * T + threadIdx.x, y = blockIdx.y * T + threadIdx.y;
#pragma unroll
    for (int j = 0; j < T; j += BR) A[threadIdx.y + j][threadIdx.x] = in[(idx)(y + j) * cols + x];
    __syncthreads();
    x = blockIdx.y * T + threadIdx.x; y = blockIdx.x * T + threadIdx.y;
#pragma unroll
    for (int j = 0; j < T; j += BR) out[(idx)(y + j) * rows + x] = A[threadIdx.x][threadIdx.y + j];
}

// The transposes' block-to-address pattern without the transposition inside the tile: tile
// (bx, by) of in is copied, unchanged, to tile (by, bx) of out (square matrices only).
template <int T, int BR>
__global__ void tileperm_k(float* __restrict__ out, const float* __restrict__ in, int rows, int cols) {
    const int x = blockIdx.x * T + threadIdx.x, y = blockIdx.y * T + threadIdx.y;
    const int ox = blockIdx.y * T + threadIdx.x, oy = blockIdx.x * T + threadIdx.y;
#pragma unroll
    for (int j = 0; j < T; j += BR) out[(idx)(oy + j) * cols + ox] = in[(idx)(y + j) * cols + x];
}

__device__ __forceinline__ unsigned saddr(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }

// Ordinary coalesced loads; the transposed tile is laid out row-contiguous in B and each of
// its output-row segments (M*T*4 bytes: M tiles of T input rows) leaves through one bulk
// copy (cp.async.bulk). SWAP: blockIdx.x walks input rows (output-row order). EVICT: the
// bulk stores carry an L2 evict-first hint.
template <int T, int BR, int ISSUERS, int M = 1, bool SWAP = false, bool EVICT = false>
__global__ void bulkstore_k(float* __restrict__ out, const float* __restrict__ in, int rows, int cols) {
    __shared__ float A[T][T + 1];
    __shared__ __align__(128) float B[T][M * T];
    const int bx = SWAP ? blockIdx.y : blockIdx.x, by = SWAP ? blockIdx.x : blockIdx.y;  // tile col, tile-group row
#pragma unroll
    for (int m = 0; m < M; ++m) {
        const int x = bx * T + threadIdx.x, y = (by * M + m) * T + threadIdx.y;
        if (m) __syncthreads();
#pragma unroll
        for (int j = 0; j < T; j += BR) A[threadIdx.y + j][threadIdx.x] = in[(idx)(y + j) * cols + x];
        __syncthreads();
#pragma unroll
        for (int j = 0; j < T; j += BR) B[threadIdx.y + j][m * T + threadIdx.x] = A[threadIdx.x][threadIdx.y + j];
    }
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    const int t = threadIdx.y * T + threadIdx.x;
    if (t < ISSUERS) {
        unsigned long long policy = 0;
        if (EVICT) asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
        for (int r = t; r < T; r += ISSUERS) {
            float* dst = out + (idx)(bx * T + r) * rows + by * M * T;
            if (EVICT)
                asm volatile("cp.async.bulk.global.shared::cta.bulk_group.L2::cache_hint [%0], [%1], %2, %3;"
                             :: "l"(dst), "r"(saddr(&B[r][0])), "r"(M * T * 4), "l"(policy) : "memory");
            else
                asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;"
                             :: "l"(dst), "r"(saddr(&B[r][0])), "r"(M * T * 4) : "memory");
        }
        asm volatile("cp.async.bulk.commit_group;" ::: "memory");
        asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
    }
}

// The copy with the same bulk stores: input rows staged in shared memory, each T-wide row
// segment leaving through one bulk copy.
template <int T, int BR>
__global__ void copybulk_k(float* __restrict__ out, const float* __restrict__ in, int rows, int cols) {
    __shared__ __align__(128) float B[T][T];
    const int x = blockIdx.x * T + threadIdx.x, y = blockIdx.y * T + threadIdx.y;
#pragma unroll
    for (int j = 0; j < T; j += BR) B[threadIdx.y + j][threadIdx.x] = in[(idx)(y + j) * cols + x];
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    const int t = threadIdx.y * T + threadIdx.x;
    if (t < T) {
        float* dst = out + (idx)(blockIdx.y * T + t) * cols + blockIdx.x * T;
        asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" :: "l"(dst), "r"(saddr(&B[t][0])), "r"(T * 4) : "memory");
        asm volatile("cp.async.bulk.commit_group;" ::: "memory");
        asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
    }
}

// 128-byte swizzle: 16-byte chunk c of row r sits at chunk c ^ (r % 8).
__device__ __forceinline__ int sw(int row, int col) { return row * 32 + ((((col >> 2) ^ (row & 7))) << 2) + (col & 3); }

// TMA both ways: the 64x64 input tile arrives as two 32-column boxes (128B-swizzled), is
// transposed between shared buffers, and leaves as two 32-column boxes of the output.
// Threads: 32 x NW warps.
template <int NW>
__global__ void tma_k(const __grid_constant__ CUtensorMap tin, const __grid_constant__ CUtensorMap tout) {
    __shared__ __align__(1024) float A[2][64 * 32];
    __shared__ __align__(1024) float B[2][64 * 32];
    __shared__ __align__(8) unsigned long long bar;
    const int lane = threadIdx.x, warp = threadIdx.y, tid = warp * 32 + lane;
    const int c0 = blockIdx.x * 64, r0 = blockIdx.y * 64;  // input tile origin (col, row)
    if (tid == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(saddr(&bar)) : "memory");
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    }
    __syncthreads();
    if (tid == 0) {
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(saddr(&bar)), "r"(2 * 64 * 32 * 4) : "memory");
#pragma unroll
        for (int b = 0; b < 2; ++b)
            asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
                         :: "r"(saddr(&A[b][0])), "l"(&tin), "r"(c0 + 32 * b), "r"(r0), "r"(saddr(&bar)) : "memory");
    }
    asm volatile("{\n.reg .pred p;\nWAIT_%=:\nmbarrier.try_wait.parity.shared::cta.b64 p, [%0], 0;\n@!p bra WAIT_%=;\n}" :: "r"(saddr(&bar)) : "memory");
    // out tile row oc (= input tile column), out col orr (= input tile row) = 32*b + lane
    for (int k = warp; k < 128; k += NW) {
        const int b = k & 1, oc = k >> 1, orr = 32 * b + lane;
        B[b][sw(oc, lane)] = A[oc >> 5][sw(orr, oc & 31)];
    }
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    if (tid == 0) {
#pragma unroll
        for (int b = 0; b < 2; ++b)
            asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%0, {%1, %2}], [%3];"
                         :: "l"(&tout), "r"(r0 + 32 * b), "r"(c0), "r"(saddr(&B[b][0])) : "memory");
        asm volatile("cp.async.bulk.commit_group;" ::: "memory");
        asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
    }
}

__global__ void fill_k(unsigned* p, idx n) {
    for (idx i = blockIdx.x * (idx)blockDim.x + threadIdx.x; i < n; i += (idx)gridDim.x * blockDim.x) {
        unsigned h = (unsigned)(i * 2654435761ull) ^ (unsigned)(i >> 13) * 40503u; p[i] = h;
    }
}
__global__ void check_k(const unsigned* out, const unsigned* in, int rows, int cols, int mode, unsigned long long* bad) {
    idx n = (idx)rows * cols; unsigned long long local = 0;
    for (idx i = blockIdx.x * (idx)blockDim.x + threadIdx.x; i < n; i += (idx)gridDim.x * blockDim.x) {
        idx r = i / cols, c = i % cols;  // in[r][c]
        idx o = mode == 1 ? c * rows + r : mode == 2 ? ((c / 64) * 64 + r % 64) * (idx)cols + (r / 64) * 64 + c % 64 : i;
        local += out[o] != in[i];
    }
    if (local) atomicAdd(bad, local);
}

typedef CUresult (*EncodeTiled)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*, const cuuint64_t*,
                                const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave, CUtensorMapSwizzle,
                                CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

struct Kernel { const char* name; bool transposed; std::function<void()> launch; size_t shift = 0; int mode = -1; };

int main(int argc, char** argv) {
    const int N = argc > 1 ? atoi(argv[1]) : 16384, rounds = argc > 2 ? atoi(argv[2]) : 2, samples = 40;
    const idx n = (idx)N * N;
    float *in, *out; CK(cudaMalloc(&in, n * 4)); CK(cudaMalloc(&out, n * 4 + (8 << 20)));
    unsigned long long* bad; CK(cudaMalloc(&bad, 8));
    fill_k<<<1024, 256>>>((unsigned*)in, n); CK(cudaDeviceSynchronize());

    void* fn = nullptr; cudaDriverEntryPointQueryResult q;
    CK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &q));
    EncodeTiled encode = (EncodeTiled)fn;
    CUtensorMap tin, tout;
    cuuint64_t dims[2] = {(cuuint64_t)N, (cuuint64_t)N}, strides[1] = {(cuuint64_t)N * 4};
    cuuint32_t box[2] = {32, 64}, es[2] = {1, 1};
    for (auto [m, p] : {std::pair{&tin, (void*)in}, std::pair{&tout, (void*)out}}) {
        CUresult r = encode(m, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, p, dims, strides, box, es, CU_TENSOR_MAP_INTERLEAVE_NONE,
                            CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
        if (r != CUDA_SUCCESS) { printf("encode failed %d\n", (int)r); return 1; }
    }
    auto sh = [&](size_t bytes) { return out + bytes / 4; };
    std::vector<Kernel> ks = {
        {"copy 64x8", false, [&] { copy_k<64, 8><<<dim3(N / 64, N / 64), dim3(64, 8)>>>(out, in, N, N); }},
        {"copy 32x8", false, [&] { copy_k<32, 8><<<dim3(N / 32, N / 32), dim3(32, 8)>>>(out, in, N, N); }},
        {"copy 64x8 out+4KB", false, [&] { copy_k<64, 8><<<dim3(N / 64, N / 64), dim3(64, 8)>>>(sh(4096), in, N, N); }, 4096},
        {"copy 64x8 out+1MB+2KB", false, [&] { copy_k<64, 8><<<dim3(N / 64, N / 64), dim3(64, 8)>>>(sh((1 << 20) + 2048), in, N, N); }, (1 << 20) + 2048},
        {"copy 64x8 out+3MB+768", false, [&] { copy_k<64, 8><<<dim3(N / 64, N / 64), dim3(64, 8)>>>(sh((3 << 20) + 768), in, N, N); }, (3 << 20) + 768},
        {"tile placement only 64x8", true, [&] { tileperm_k<64, 8><<<dim3(N / 64, N / 64), dim3(64, 8)>>>(out, in, N, N); }, 0, 2},
        {"padded 64x8", true, [&] { padded_k<64, 8><<<dim3(N / 64, N / 64), dim3(64, 8)>>>(out, in, N, N); }},
        {"padded 32x8", true, [&] { padded_k<32, 8><<<dim3(N / 32, N / 32), dim3(32, 8)>>>(out, in, N, N); }},
        {"bulk 64x8", true, [&] { bulkstore_k<64, 8, 64><<<dim3(N / 64, N / 64), dim3(64, 8)>>>(out, in, N, N); }},
        {"bulk 64x8 out-row order", true, [&] { bulkstore_k<64, 8, 64, 1, true><<<dim3(N / 64, N / 64), dim3(64, 8)>>>(out, in, N, N); }},
        {"bulk 64x8 evict-first", true, [&] { bulkstore_k<64, 8, 64, 1, false, true><<<dim3(N / 64, N / 64), dim3(64, 8)>>>(out, in, N, N); }},
        {"bulk 64x8 512B segments", true, [&] { bulkstore_k<64, 8, 64, 2><<<dim3(N / 64, N / 128), dim3(64, 8)>>>(out, in, N, N); }},
        {"bulk 64x8 1KB segments", true, [&] { bulkstore_k<64, 8, 64, 4><<<dim3(N / 64, N / 256), dim3(64, 8)>>>(out, in, N, N); }},
        {"tma both ways, 4 warps", true, [&] { tma_k<4><<<dim3(N / 64, N / 64), dim3(32, 4)>>>(tin, tout); }},
        {"tma both ways, 16 warps", true, [&] { tma_k<16><<<dim3(N / 64, N / 64), dim3(32, 16)>>>(tin, tout); }},
    };
    cudaEvent_t e0, e1; CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
    std::vector<std::vector<float>> all(ks.size());
    for (size_t k = 0; k < ks.size(); ++k) {  // check each on poisoned output first
        CK(cudaMemset(out, 0xFF, n * 4 + (8 << 20))); CK(cudaMemset(bad, 0, 8));
        ks[k].launch();
        cudaError_t le = cudaGetLastError();
        if (le != cudaSuccess) { printf("check %-30s launch failed: %s\n", ks[k].name, cudaGetErrorString(le)); ks[k].name = nullptr; continue; }
        CK(cudaDeviceSynchronize());
        check_k<<<1024, 256>>>((unsigned*)(out + ks[k].shift / 4), (unsigned*)in, N, N, ks[k].mode >= 0 ? ks[k].mode : (int)ks[k].transposed, bad);
        unsigned long long h; CK(cudaMemcpy(&h, bad, 8, cudaMemcpyDeviceToHost));
        printf("check %-30s %s (%llu wrong)\n", ks[k].name, h ? "FAIL" : "ok", h);
    }
    for (int r = 0; r < rounds; ++r)
        for (size_t k = 0; k < ks.size(); ++k) {
            if (!ks[k].name) continue;
            for (int w = 0; w < 3; ++w) ks[k].launch();
            for (int s = 0; s < samples; ++s) {
                CK(cudaEventRecord(e0)); ks[k].launch(); CK(cudaEventRecord(e1)); CK(cudaEventSynchronize(e1));
                float ms; CK(cudaEventElapsedTime(&ms, e0, e1)); all[k].push_back(ms * 1000);
            }
        }
    double best_copy = 1e30;
    std::vector<double> med(ks.size());
    for (size_t k = 0; k < ks.size(); ++k) {
        if (!ks[k].name) continue;
        auto v = all[k]; std::sort(v.begin(), v.end()); med[k] = v[v.size() / 2];
        if (!ks[k].transposed) best_copy = std::min(best_copy, med[k]);
    }
    for (size_t k = 0; k < ks.size(); ++k) {
        if (!ks[k].name) continue;
        auto v = all[k]; std::sort(v.begin(), v.end());
        printf("%-30s median %8.1f us  min %8.1f  max %8.1f  %7.0f GB/s  best copy / it %5.1f%%\n", ks[k].name, med[k], v.front(),
               v.back(), 2.0 * n * 4 / med[k] / 1e3, 100.0 * best_copy / med[k]);
    }
    return 0;
}
