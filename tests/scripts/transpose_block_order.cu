// Stand-alone experiment (not gpubench; docs/suites/transpose.md): the transpose and the copy
// with their blocks numbered G tile-rows at a time, column by column inside a group (matmul's
// grouped order), so the blocks resident together read and write squarer regions; and with
// 128 x 128 tiles (512-byte segments both ways). N x N float32 (N a multiple of 128), CUDA
// events around one launch, every output checked first.
// Build: nvcc -O3 -std=c++17 -arch=sm_90 -o transpose_block_order transpose_block_order.cu
// Run:   ./transpose_block_order [N=16384] [rounds=3]
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>
typedef unsigned long long idx;
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("CUDA %s at %d: %s\n", #x, __LINE__, cudaGetErrorString(e)); exit(1); } } while (0)

__device__ __forceinline__ void tile_of(int G, int& tx, int& ty) {
    if (G == 0) { tx = blockIdx.x; ty = blockIdx.y; return; }
    const int linear = blockIdx.y * gridDim.x + blockIdx.x, per_group = G * gridDim.x;
    const int first = linear / per_group * G, here = min((int)gridDim.y - first, G);
    ty = first + (linear % per_group) % here; tx = (linear % per_group) / here;
}
template <int T, int BR>
__global__ void copy_k(float* __restrict__ out, const float* __restrict__ in, int n, int G) {
    int tx, ty; tile_of(G, tx, ty);
    const int x = tx * T + threadIdx.x, y = ty * T + threadIdx.y;
#pragma unroll
    for (int j = 0; j < T; j += BR) out[(idx)(y + j) * n + x] = in[(idx)(y + j) * n + x];
}
template <int T, int BR>
__global__ void padded_k(float* __restrict__ out, const float* __restrict__ in, int n, int G) {
    __shared__ float A[T][T + 1];
    int tx, ty; tile_of(G, tx, ty);
    int x = tx * T + threadIdx.x, y = ty * T + threadIdx.y;
#pragma unroll
    for (int j = 0; j < T; j += BR) A[threadIdx.y + j][threadIdx.x] = in[(idx)(y + j) * n + x];
    __syncthreads();
    x = ty * T + threadIdx.x; y = tx * T + threadIdx.y;
#pragma unroll
    for (int j = 0; j < T; j += BR) out[(idx)(y + j) * n + x] = A[threadIdx.x][threadIdx.y + j];
}
template <int T, int BR>
__global__ void padded_dynamic_k(float* __restrict__ out, const float* __restrict__ in, int n, int G) {
    extern __shared__ float A[];  // T x (T + 1): past 48 KB for T = 128
    int tx, ty; tile_of(G, tx, ty);
    int x = tx * T + threadIdx.x, y = ty * T + threadIdx.y;
#pragma unroll
    for (int j = 0; j < T; j += BR) A[(threadIdx.y + j) * (T + 1) + threadIdx.x] = in[(idx)(y + j) * n + x];
    __syncthreads();
    x = ty * T + threadIdx.x; y = tx * T + threadIdx.y;
#pragma unroll
    for (int j = 0; j < T; j += BR) out[(idx)(y + j) * n + x] = A[threadIdx.x * (T + 1) + threadIdx.y + j];
}
__global__ void fill_k(unsigned* p, idx n) {
    for (idx i = blockIdx.x * (idx)blockDim.x + threadIdx.x; i < n; i += (idx)gridDim.x * blockDim.x)
        p[i] = (unsigned)(i * 2654435761ull) ^ (unsigned)(i >> 13) * 40503u;
}
__global__ void check_k(const unsigned* out, const unsigned* in, int n, int transposed, unsigned long long* bad) {
    idx N = (idx)n * n; unsigned long long local = 0;
    for (idx i = blockIdx.x * (idx)blockDim.x + threadIdx.x; i < N; i += (idx)gridDim.x * blockDim.x) {
        idx r = i / n, c = i % n; local += out[transposed ? c * n + r : i] != in[i];
    }
    if (local) atomicAdd(bad, local);
}
struct K { char name[64]; bool transposed; std::function<void()> launch; };
int main(int argc, char** argv) {
    const int N = argc > 1 ? atoi(argv[1]) : 16384, rounds = argc > 2 ? atoi(argv[2]) : 3, samples = 30;
    const idx n = (idx)N * N;
    float *in, *out; CK(cudaMalloc(&in, n * 4)); CK(cudaMalloc(&out, n * 4));
    unsigned long long* bad; CK(cudaMalloc(&bad, 8));
    fill_k<<<1024, 256>>>((unsigned*)in, n); CK(cudaDeviceSynchronize());
    std::vector<K> ks;
    auto add = [&](const char* what, int G, bool tr, std::function<void()> f) { K k; snprintf(k.name, 64, "%s G=%d", what, G); k.transposed = tr; k.launch = f; ks.push_back(k); };
    for (int G : {0, 8, 32}) add("copy 64x8", G, false, [=] { copy_k<64, 8><<<dim3(N / 64, N / 64), dim3(64, 8)>>>(out, in, N, G); });
    for (int G : {0, 1, 2, 4, 8, 16, 32, 64, 128}) add("padded 64x8", G, true, [=] { padded_k<64, 8><<<dim3(N / 64, N / 64), dim3(64, 8)>>>(out, in, N, G); });
    for (int G : {0, 8, 16, 32, 64}) add("padded 64x16", G, true, [=] { padded_k<64, 16><<<dim3(N / 64, N / 64), dim3(64, 16)>>>(out, in, N, G); });
    for (int G : {0, 16, 32, 64}) add("padded 32x8", G, true, [=] { padded_k<32, 8><<<dim3(N / 32, N / 32), dim3(32, 8)>>>(out, in, N, G); });
    // 128 x 128 tiles: 512-byte segments both ways, 66 KB of dynamic shared memory.
    add("copy 128x8", 0, false, [=] { copy_k<128, 8><<<dim3(N / 128, N / 128), dim3(128, 8)>>>(out, in, N, 0); });
    CK(cudaFuncSetAttribute(padded_dynamic_k<128, 8>, cudaFuncAttributeMaxDynamicSharedMemorySize, 128 * 129 * 4));
    CK(cudaFuncSetAttribute(padded_dynamic_k<128, 2>, cudaFuncAttributeMaxDynamicSharedMemorySize, 128 * 129 * 4));
    add("padded 128x8", 0, true, [=] { padded_dynamic_k<128, 8><<<dim3(N / 128, N / 128), dim3(128, 8), 128 * 129 * 4>>>(out, in, N, 0); });
    add("padded 128x2", 0, true, [=] { padded_dynamic_k<128, 2><<<dim3(N / 128, N / 128), dim3(128, 2), 128 * 129 * 4>>>(out, in, N, 0); });
    cudaEvent_t e0, e1; CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
    for (auto& k : ks) {
        CK(cudaMemset(out, 0xFF, n * 4)); CK(cudaMemset(bad, 0, 8));
        k.launch(); CK(cudaGetLastError()); CK(cudaDeviceSynchronize());
        check_k<<<1024, 256>>>((unsigned*)out, (unsigned*)in, N, k.transposed, bad);
        unsigned long long h; CK(cudaMemcpy(&h, bad, 8, cudaMemcpyDeviceToHost));
        if (h) printf("check %s FAIL (%llu wrong)\n", k.name, h);
    }
    std::vector<std::vector<float>> all(ks.size());
    for (int r = 0; r < rounds; ++r)
        for (size_t i = 0; i < ks.size(); ++i) {
            for (int w = 0; w < 3; ++w) ks[i].launch();
            for (int s = 0; s < samples; ++s) {
                CK(cudaEventRecord(e0)); ks[i].launch(); CK(cudaEventRecord(e1)); CK(cudaEventSynchronize(e1));
                float ms; CK(cudaEventElapsedTime(&ms, e0, e1)); all[i].push_back(ms * 1000);
            }
        }
    double best = 1e30; std::vector<double> med(ks.size());
    for (size_t i = 0; i < ks.size(); ++i) { auto v = all[i]; std::sort(v.begin(), v.end()); med[i] = v[v.size() / 2]; if (!ks[i].transposed) best = std::min(best, med[i]); }
    for (size_t i = 0; i < ks.size(); ++i) printf("%-22s median %7.1f us  %5.0f GB/s  best copy / it %5.1f%%\n", ks[i].name, med[i], 2.0 * n * 4 / med[i] / 1e3, 100 * best / med[i]);
}
