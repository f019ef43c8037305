// Example kernels for configs/examples/histogram.yaml: count how often each value in
// [0, bins) occurs, with atomics. The output is integers: the check is exact.
// Compile-time parameter (-D, from the YAML's `defines`): BLOCK, threads per block.

#ifndef BLOCK
#define BLOCK 256
#endif

// histogram_global: one atomicAdd in global memory per element; with few bins, thousands of
// threads contend for the same addresses.
extern "C" __global__ void __launch_bounds__(BLOCK)
histogram_global(unsigned int* __restrict__ hist, const unsigned int* __restrict__ data,
                 unsigned int n, unsigned int bins)
{
    for (size_t i = (size_t)blockIdx.x * BLOCK + threadIdx.x; i < n; i += (size_t)gridDim.x * BLOCK)
        atomicAdd(&hist[data[i]], 1u);
}

// histogram_shared: each block counts into its own copy in shared memory (bins * 4 bytes of
// dynamic shared memory, from the YAML's `shared` expression) and adds it to the global
// histogram once at the end: contention moves to fast shared-memory atomics.
extern "C" __global__ void __launch_bounds__(BLOCK)
histogram_shared(unsigned int* __restrict__ hist, const unsigned int* __restrict__ data,
                 unsigned int n, unsigned int bins)
{
    extern __shared__ unsigned int local[];
    for (unsigned int b = threadIdx.x; b < bins; b += BLOCK) local[b] = 0;
    __syncthreads();
    for (size_t i = (size_t)blockIdx.x * BLOCK + threadIdx.x; i < n; i += (size_t)gridDim.x * BLOCK)
        atomicAdd(&local[data[i]], 1u);
    __syncthreads();
    for (unsigned int b = threadIdx.x; b < bins; b += BLOCK)
        if (local[b]) atomicAdd(&hist[b], local[b]);
}
