// A kernel file's variants, one of them wrong on purpose (tests/suites/kernel_file_wrong.yaml):
// the harness must report it `incorrect` at every size.

#ifndef BLOCK
#define BLOCK 256
#endif

// saxpy: right.
extern "C" __global__ void saxpy(float* __restrict__ y, const float* __restrict__ x, float a,
                                 unsigned int n)
{
    const unsigned int i = blockIdx.x * BLOCK + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

// saxpy_drops_last: forgets the last element (an off-by-one bound).
extern "C" __global__ void saxpy_drops_last(float* __restrict__ y, const float* __restrict__ x,
                                            float a, unsigned int n)
{
    const unsigned int i = blockIdx.x * BLOCK + threadIdx.x;
    if (i + 1 < n) y[i] = a * x[i] + y[i];
}

// scale_out: writes a fresh output (out = a * x), every element.
extern "C" __global__ void scale_out(float* __restrict__ out, const float* __restrict__ x, float a,
                                     unsigned int n)
{
    const unsigned int i = blockIdx.x * BLOCK + threadIdx.x;
    if (i < n) out[i] = a * x[i];
}

// scale_out_half: writes only the first half of its output (the rest stays poisoned).
extern "C" __global__ void scale_out_half(float* __restrict__ out, const float* __restrict__ x,
                                          float a, unsigned int n)
{
    const unsigned int i = blockIdx.x * BLOCK + threadIdx.x;
    if (i < n / 2) out[i] = a * x[i];
}
