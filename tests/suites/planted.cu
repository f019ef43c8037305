// Bugs planted on purpose, beside the right kernels, at sizes where they are easy to miss:
// the checks must call every `_bug` variant incorrect, on the GPU path and on the host path
// (tests/test_planted_bugs.py).

// matmul: C = A·B, one thread per element of C (M×K times K×N, row-major).
extern "C" __global__ void matmul(float* C, const float* A, const float* B, unsigned int M,
                                  unsigned int N, unsigned int K)
{
    const unsigned int row = blockIdx.y * blockDim.y + threadIdx.y;
    const unsigned int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= M || col >= N) return;
    float sum = 0.0f;
    for (unsigned int k = 0; k < K; ++k) sum += A[row * K + k] * B[k * N + col];
    C[row * N + col] = sum;
}

// The same, dropping the last k-term: one product of 16384 missing from every element.
extern "C" __global__ void matmul_drops_k_bug(float* C, const float* A, const float* B,
                                              unsigned int M, unsigned int N, unsigned int K)
{
    const unsigned int row = blockIdx.y * blockDim.y + threadIdx.y;
    const unsigned int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= M || col >= N) return;
    float sum = 0.0f;
    for (unsigned int k = 0; k + 1 < K; ++k) sum += A[row * K + k] * B[k * N + col];
    C[row * N + col] = sum;
}
