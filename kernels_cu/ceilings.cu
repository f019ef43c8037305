// Ceilings: the fastest this GPU moves bytes (DRAM, L2, shared memory) and does arithmetic
// (FP32, FP64, FP16 FMA), each kernel's result checked exactly, so no work can be dropped by
// the compiler or skipped by a bug without the check failing.
// Compile-time parameter (-D): BLOCK, threads per block.

// Half precision through PTX instead of cuda_fp16.h (NVRTC without a CUDA toolkit has no such
// header): a half2 is two 16-bit halves in one 32-bit register, and fma.rn.f16x2 is the
// instruction __hfma2 compiles to.
__device__ __forceinline__ unsigned int half2_from_float(float f)  // both halves f, rounded
{
    unsigned short h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return (unsigned int)h * 0x10001u;
}

__device__ __forceinline__ unsigned int hfma2(unsigned int a, unsigned int b, unsigned int c)
{
    unsigned int d;
    asm("fma.rn.f16x2 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
    return d;
}

__device__ __forceinline__ float half_to_float(unsigned int half2, int high)
{
    const unsigned short h = (unsigned short)(high ? half2 >> 16 : half2 & 0xFFFFu);
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
}

#ifndef BLOCK
#define BLOCK 256
#endif
#if BLOCK % 32 != 0 || BLOCK > 1024
#error "BLOCK must be a multiple of 32, at most 1024"
#endif

// Sum of a thread's 64-bit values over the block, added once to *total.
__device__ void add_block_sum(unsigned long long value, unsigned long long* total)
{
    __shared__ unsigned long long warp_sums[BLOCK / 32];
    for (int offset = 16; offset > 0; offset /= 2) value += __shfl_down_sync(0xffffffffu, value, offset);
    if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = value;
    __syncthreads();
    if (threadIdx.x == 0) {
        unsigned long long sum = 0;
        for (int w = 0; w < BLOCK / 32; ++w) sum += warp_sums[w];
        atomicAdd(total, sum);
    }
}

__device__ unsigned long long sum4(uint4 v)
{
    return (unsigned long long)v.x + v.y + v.z + v.w;
}

// dram_read: every 16-byte word of a buffer far larger than L2 read once (four loads in
// flight per thread, L1 bypassed), summed so the loads cannot be dropped.
extern "C" __global__ void __launch_bounds__(BLOCK)
dram_read(const uint4* __restrict__ in, unsigned long long n4, unsigned long long* __restrict__ total)
{
    const unsigned long long stride = (unsigned long long)gridDim.x * BLOCK;
    unsigned long long i = (unsigned long long)blockIdx.x * BLOCK + threadIdx.x;
    unsigned long long sum = 0;
    for (; i + 3 * stride < n4; i += 4 * stride) {
        const uint4 a = __ldcs(in + i), b = __ldcs(in + i + stride);
        const uint4 c = __ldcs(in + i + 2 * stride), d = __ldcs(in + i + 3 * stride);
        sum += sum4(a) + sum4(b) + sum4(c) + sum4(d);
    }
    for (; i < n4; i += stride) sum += sum4(__ldcs(in + i));
    add_block_sum(sum, total);
}

// dram_write: every 16-byte word written once with its own index (streaming stores).
extern "C" __global__ void __launch_bounds__(BLOCK)
dram_write(uint4* __restrict__ out, unsigned long long n4)
{
    const unsigned long long stride = (unsigned long long)gridDim.x * BLOCK;
    for (unsigned long long i = (unsigned long long)blockIdx.x * BLOCK + threadIdx.x; i < n4; i += stride) {
        const unsigned int w = (unsigned int)(4 * i);
        __stcs(out + i, make_uint4(w, w + 1, w + 2, w + 3));
    }
}

// dram_copy: read and write, 16 bytes each per element.
extern "C" __global__ void __launch_bounds__(BLOCK)
dram_copy(uint4* __restrict__ out, const uint4* __restrict__ in, unsigned long long n4)
{
    const unsigned long long stride = (unsigned long long)gridDim.x * BLOCK;
    unsigned long long i = (unsigned long long)blockIdx.x * BLOCK + threadIdx.x;
    for (; i + stride < n4; i += 2 * stride) {
        const uint4 a = __ldcs(in + i), b = __ldcs(in + i + stride);
        __stcs(out + i, a);
        __stcs(out + i + stride, b);
    }
    for (; i < n4; i += stride) __stcs(out + i, __ldcs(in + i));
}

// l2_read: a working set well inside L2 read `passes` times with loads that skip L1
// (__ldcg), so every load after the first pass is an L2 hit.
extern "C" __global__ void __launch_bounds__(BLOCK)
l2_read(const uint4* __restrict__ in, unsigned long long n4, unsigned int passes,
        unsigned long long* __restrict__ total)
{
    const unsigned long long stride = (unsigned long long)gridDim.x * BLOCK;
    unsigned long long sum = 0;
    for (unsigned int p = 0; p < passes; ++p) {
        unsigned long long i = (unsigned long long)blockIdx.x * BLOCK + threadIdx.x;
        for (; i + 3 * stride < n4; i += 4 * stride) {
            const uint4 a = __ldcg(in + i), b = __ldcg(in + i + stride);
            const uint4 c = __ldcg(in + i + 2 * stride), d = __ldcg(in + i + 3 * stride);
            sum += sum4(a) + sum4(b) + sum4(c) + sum4(d);
        }
        for (; i < n4; i += stride) sum += sum4(__ldcg(in + i));
    }
    add_block_sum(sum, total);
}

// shared_read: 16-byte shared-memory loads, a warp's 32 consecutive words per request (no
// bank conflicts), `iterations` per thread. The loads are ld.volatile in PTX: a plain load
// (even inside `asm volatile`) lets ptxas see that the four addresses repeat and load them
// once before the loop, which "measured" 60 TB/s on an H100 with no loads in the loop.
#define SHARED_WORDS (4 * BLOCK)
extern "C" __global__ void __launch_bounds__(BLOCK)
shared_read(const uint4* __restrict__ in, unsigned int iterations, unsigned long long* __restrict__ total)
{
    __shared__ uint4 words[SHARED_WORDS];
    for (int w = threadIdx.x; w < SHARED_WORDS; w += BLOCK) words[w] = in[w];
    __syncthreads();
    unsigned long long sum = 0;
    unsigned int x = 0, y = 0, z = 0, v = 0;
    for (unsigned int k = 0; k < iterations; ++k) {
        const unsigned int address =
            (unsigned int)__cvta_generic_to_shared(&words[(threadIdx.x + (k % 4) * BLOCK)]);
        unsigned int a, b, c, d;
        asm volatile("ld.volatile.shared.v4.u32 {%0, %1, %2, %3}, [%4];"
                     : "=r"(a), "=r"(b), "=r"(c), "=r"(d) : "r"(address));
        // Four 32-bit running sums (wrapping) keep the adds off the critical path; they are
        // folded into 64 bits every 4096 loads, before they could wrap twice.
        x += a; y += b; z += c; v += d;
        if ((k & 4095) == 4095) {
            sum += (unsigned long long)x + y + z + v;
            x = y = z = v = 0;
        }
    }
    sum += (unsigned long long)x + y + z + v;
    add_block_sum(sum, total);
}

// fp32_fma, fp64_fma, fp16_fma: eight independent FMA chains per thread, a = a * b + c with
// b = 1 and c a power of two given at run time: every step is exact, so the result
// (start + iterations * c) shows that every FMA ran, and the compiler, which does not know b
// and c, cannot fold the chain.
#define CHAINS 8
extern "C" __global__ void __launch_bounds__(BLOCK)
fp32_fma(float* __restrict__ out, float b, float c, unsigned int iterations)
{
    const unsigned int t = blockIdx.x * BLOCK + threadIdx.x;
    float a[CHAINS];
#pragma unroll
    for (int j = 0; j < CHAINS; ++j) a[j] = 1.0f + (float)((t * CHAINS + j) % 8) / 8.0f;
    // Unrolled so the loop's own counter, compare and branch cost little beside 8 FMAs.
#pragma unroll 16
    for (unsigned int k = 0; k < iterations; ++k) {
#pragma unroll
        for (int j = 0; j < CHAINS; ++j) a[j] = fmaf(a[j], b, c);
    }
    float sum = 0.0f;
#pragma unroll
    for (int j = 0; j < CHAINS; ++j) sum += a[j];
    out[t] = sum;
}

extern "C" __global__ void __launch_bounds__(BLOCK)
fp64_fma(double* __restrict__ out, double b, double c, unsigned int iterations)
{
    const unsigned int t = blockIdx.x * BLOCK + threadIdx.x;
    double a[CHAINS];
#pragma unroll
    for (int j = 0; j < CHAINS; ++j) a[j] = 1.0 + (double)((t * CHAINS + j) % 8) / 8.0;
#pragma unroll 16
    for (unsigned int k = 0; k < iterations; ++k) {
#pragma unroll
        for (int j = 0; j < CHAINS; ++j) a[j] = fma(a[j], b, c);
    }
    double sum = 0.0;
#pragma unroll
    for (int j = 0; j < CHAINS; ++j) sum += a[j];
    out[t] = sum;
}

// fp16_fma: half2 FMAs (two lanes, four flops each). Chains start at integers in [1024, 1080]
// where half's spacing is 1, so with c = 1 every step is exact for up to 967 iterations; the
// sum is taken in float, exactly.
extern "C" __global__ void __launch_bounds__(BLOCK)
fp16_fma(float* __restrict__ out, float b, float c, unsigned int iterations)
{
    const unsigned int t = blockIdx.x * BLOCK + threadIdx.x;
    const unsigned int b2 = half2_from_float(b), c2 = half2_from_float(c);
    unsigned int a[CHAINS];
#pragma unroll
    for (int j = 0; j < CHAINS; ++j) a[j] = half2_from_float(1024.0f + 8.0f * ((t * CHAINS + j) % 8));
#pragma unroll 16
    for (unsigned int k = 0; k < iterations; ++k) {
#pragma unroll
        for (int j = 0; j < CHAINS; ++j) a[j] = hfma2(a[j], b2, c2);
    }
    float sum = 0.0f;
#pragma unroll
    for (int j = 0; j < CHAINS; ++j) sum += half_to_float(a[j], 0) + half_to_float(a[j], 1);
    out[t] = sum;
}
