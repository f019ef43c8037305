// Example kernels for configs/examples/gemm.yaml: C = A @ B for row-major float32 matrices
// (A is M x K, B is K x N, C is M x N), checked against the reference `A @ B` (NumPy, float64).
// Compile-time parameter (-D, from the YAML's `defines`): TILE, the block's side in threads.

#ifndef TILE
#define TILE 16
#endif

// matmul_naive: one thread per element of C, every operand read from global memory (a row
// of A and a column of B per thread: K loads each, mostly served by the caches).
extern "C" __global__ void __launch_bounds__(TILE * TILE)
matmul_naive(float* __restrict__ C, const float* __restrict__ A, const float* __restrict__ B,
             unsigned int M, unsigned int N, unsigned int K)
{
    const unsigned int row = blockIdx.y * TILE + threadIdx.y;
    const unsigned int col = blockIdx.x * TILE + threadIdx.x;
    if (row >= M || col >= N) return;
    float acc = 0.0f;
    for (unsigned int i = 0; i < K; ++i)
        acc += A[(size_t)row * K + i] * B[(size_t)i * N + col];
    C[(size_t)row * N + col] = acc;
}

// matmul_tiled: the block stages a TILE x TILE tile of A and of B in shared memory per step
// along K, so each global element is loaded once per block instead of once per thread.
// Edges (sizes that are not multiples of TILE) are padded with zeros.
extern "C" __global__ void __launch_bounds__(TILE * TILE)
matmul_tiled(float* __restrict__ C, const float* __restrict__ A, const float* __restrict__ B,
             unsigned int M, unsigned int N, unsigned int K)
{
    __shared__ float a_tile[TILE][TILE];
    __shared__ float b_tile[TILE][TILE];
    const unsigned int tx = threadIdx.x, ty = threadIdx.y;
    const unsigned int row = blockIdx.y * TILE + ty;
    const unsigned int col = blockIdx.x * TILE + tx;
    float acc = 0.0f;
    for (unsigned int t = 0; t < K; t += TILE) {
        a_tile[ty][tx] = (row < M && t + tx < K) ? A[(size_t)row * K + t + tx] : 0.0f;
        b_tile[ty][tx] = (t + ty < K && col < N) ? B[(size_t)(t + ty) * N + col] : 0.0f;
        __syncthreads();
        for (unsigned int i = 0; i < TILE; ++i) acc += a_tile[ty][i] * b_tile[i][tx];
        __syncthreads();
    }
    if (row < M && col < N) C[(size_t)row * N + col] = acc;
}
