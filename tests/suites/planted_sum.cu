// An int32 sum with atomics, and the same losing the last element (see planted.cu).
extern "C" __global__ void sum(int* out, const int* x, unsigned int n)
{
    int partial = 0;
    for (unsigned int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        partial += x[i];
    atomicAdd(out, partial);
}

extern "C" __global__ void sum_loses_tail_bug(int* out, const int* x, unsigned int n)
{
    int partial = 0;
    for (unsigned int i = blockIdx.x * blockDim.x + threadIdx.x; i + 1 < n;
         i += gridDim.x * blockDim.x)
        partial += x[i];
    atomicAdd(out, partial);
}

// y = x, and the same leaving the last element unwritten.
extern "C" __global__ void copy(float* y, const float* x, unsigned int n)
{
    const size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i];
}

extern "C" __global__ void copy_skips_last_bug(float* y, const float* x, unsigned int n)
{
    const size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i + 1 < n) y[i] = x[i];
}
