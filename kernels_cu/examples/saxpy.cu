// Example kernels for "Benchmark your own kernel" (configs/examples/saxpy.yaml): y = a*x + y.
// Nothing here knows about gpubench: the YAML file says how to call these kernels.
// Compile-time parameter (-D, from the YAML's `defines`): BLOCK, threads per block.

#ifndef BLOCK
#define BLOCK 256
#endif

// saxpy: one element per thread, one 4-byte load of x and of y each.
extern "C" __global__ void __launch_bounds__(BLOCK)
saxpy(float* __restrict__ y, const float* __restrict__ x, float a, unsigned int n)
{
    const unsigned int i = blockIdx.x * BLOCK + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

// saxpy_vec4: four elements per thread through 16-byte float4 loads and stores (fewer
// instructions per byte); the last n % 4 elements are done one by one.
extern "C" __global__ void __launch_bounds__(BLOCK)
saxpy_vec4(float* __restrict__ y, const float* __restrict__ x, float a, unsigned int n)
{
    const unsigned long long first = 4ull * (blockIdx.x * BLOCK + threadIdx.x);
    if (first + 3 < n) {
        const float4 xv = reinterpret_cast<const float4*>(x)[first / 4];
        float4 yv = reinterpret_cast<float4*>(y)[first / 4];
        yv.x = a * xv.x + yv.x;
        yv.y = a * xv.y + yv.y;
        yv.z = a * xv.z + yv.z;
        yv.w = a * xv.w + yv.w;
        reinterpret_cast<float4*>(y)[first / 4] = yv;
    } else {
        for (unsigned long long i = first; i < n; ++i) y[i] = a * x[i] + y[i];
    }
}
