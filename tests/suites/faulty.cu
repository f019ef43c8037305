// Kernels that go wrong on purpose, for the harness's isolation tests.
// FAULT (compile-time): 0 a correct kernel, 1 writes far out of bounds (illegal address),
// 2 never ends, 3 does not compile, 4 misaligned address, 5 trap (unspecified launch
// failure), 6 breakpoint with no debugger (illegal instruction). UNROLL: elements per thread.

#ifndef FAULT
#define FAULT 0
#endif
#ifndef UNROLL
#define UNROLL 4
#endif

#if FAULT == 3
#error "this configuration is broken on purpose"
#endif

// out = 2 * in + 1; each thread handles UNROLL elements, UNROLL * blockDim apart.
extern "C" __global__ void kernel(float* __restrict__ out, const float* __restrict__ in, unsigned int n)
{
    const unsigned long long base = (unsigned long long)blockIdx.x * blockDim.x * UNROLL + threadIdx.x;
#pragma unroll
    for (int k = 0; k < UNROLL; ++k) {
        const unsigned long long i = base + (unsigned long long)k * blockDim.x;
        if (i < n) {
#if FAULT == 1
            out[i + (1ull << 36)] = 2.0f * in[i] + 1.0f;  // 256 GiB past the buffer
#else
            out[i] = 2.0f * in[i] + 1.0f;
#endif
        }
    }
#if FAULT == 4
    if (base == 0) *reinterpret_cast<float*>(reinterpret_cast<char*>(out) + 1) = 1.0f;
#elif FAULT == 5
    if (base == 0) __trap();
#elif FAULT == 6
    if (base == 0) asm volatile("brkpt;");
#endif
#if FAULT == 2
    // Spin on a value the compiler cannot know (inputs are >= 1): never ends.
    while (reinterpret_cast<const volatile float*>(in)[0] > 0.0f) {
    }
#endif
}

// Needs more registers per thread than 1024 threads per block can have: the harness must
// skip its 1024-thread launch with the reason, not fail it.
extern "C" __global__ void register_hog(float* __restrict__ out, const float* __restrict__ in, unsigned int n)
{
    float acc[96];
#pragma unroll
    for (int k = 0; k < 96; ++k) acc[k] = in[(threadIdx.x + k) % n];
#pragma unroll
    for (int r = 0; r < 4; ++r) {
#pragma unroll
        for (int k = 0; k < 96; ++k) acc[k] = acc[k] * acc[(k + r + 1) % 96] + 1.0f;
    }
    float sum = 0.0f;
#pragma unroll
    for (int k = 0; k < 96; ++k) sum += acc[k];
    if (threadIdx.x < n) out[threadIdx.x] = sum;
}

// Asks for more dynamic shared memory than a block may have, even opted in (227 KB on an H100).
extern "C" __global__ void shared_hog(float* __restrict__ out, const float* __restrict__ in, unsigned int n)
{
    extern __shared__ float scratch[];
    scratch[threadIdx.x] = in[threadIdx.x % n];
    __syncthreads();
    if (threadIdx.x < n) out[threadIdx.x] = scratch[blockDim.x - 1 - threadIdx.x];
}
