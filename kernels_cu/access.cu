// Global-memory access patterns: what an offset and a stride do to coalescing, and what the
// working set does to where the data comes from (L1, L2 or DRAM). A warp's request is served
// in 32-byte sectors: a misaligned warp touches one sector more, a strided one up to a
// sector per element. DTYPE (-D) is float or double.
#ifndef DTYPE
#define DTYPE float
#endif
// Elements per thread, a block's width apart: every warp instruction still touches 32
// consecutive (or strided) elements, and a thread has four loads in flight before it stores,
// which a copy needs to come near the DRAM bandwidth.
#define PER_THREAD 4

// The body of every copy: READ(i) is the element element i reads, WRITE(i) the one it writes.
#define COPY(READ, WRITE)                                                                      \
    const unsigned long long base =                                                            \
        blockIdx.x * (unsigned long long)blockDim.x * PER_THREAD + threadIdx.x;               \
    DTYPE value[PER_THREAD];                                                                   \
    _Pragma("unroll") for (int k = 0; k < PER_THREAD; ++k) {                                   \
        const unsigned long long i = base + (unsigned long long)k * blockDim.x;                \
        if (i < n) value[k] = in[READ];                                                        \
    }                                                                                          \
    _Pragma("unroll") for (int k = 0; k < PER_THREAD; ++k) {                                   \
        const unsigned long long i = base + (unsigned long long)k * blockDim.x;                \
        if (i < n) out[WRITE] = value[k];                                                      \
    }

// read_offset: out[i] = in[i + offset]: the reads start `offset` elements past an aligned
// address, the writes are aligned.
extern "C" __global__ void read_offset(DTYPE* __restrict__ out, const DTYPE* __restrict__ in,
                                       unsigned long long n, unsigned offset) {
    COPY(i + offset, i)
}

// write_offset: out[i + offset] = in[i]: aligned reads, misaligned writes.
extern "C" __global__ void write_offset(DTYPE* __restrict__ out, const DTYPE* __restrict__ in,
                                        unsigned long long n, unsigned offset) {
    COPY(i, i + offset)
}

// read_stride: out[i] = in[i * stride]: a warp's 32 reads spread over 32 * stride elements.
extern "C" __global__ void read_stride(DTYPE* __restrict__ out, const DTYPE* __restrict__ in,
                                       unsigned long long n, unsigned stride) {
    COPY(i * stride, i)
}

// write_stride: out[i * stride] = in[i]: contiguous reads, scattered writes (a partial
// sector written costs a read-modify-write in L2).
extern "C" __global__ void write_stride(DTYPE* __restrict__ out, const DTYPE* __restrict__ in,
                                        unsigned long long n, unsigned stride) {
    COPY(i, i * stride)
}

// cached_read: the working set read `passes` times in 16-byte words, each thread always the
// same words, so what fits in an SM's L1 or in L2 is served from there after the first pass.
// The 32-bit words are summed (wrapping modulo 2^64) so no read can be left out and the sum
// is exact. The load is an `asm volatile` ld.global.ca (cached in L1 and L2), so the compiler
// can neither drop it nor keep a word in a register across passes.
// l2_read: the same with ld.global.cg, cached in L2 only: every pass goes past L1, so a
// working set that fits in L2 shows L2's bandwidth instead of L1's.
#define REPEATED_READ(NAME, LOAD)                                                              \
    __device__ __forceinline__ uint4 NAME##_load(const uint4* address) {                       \
        uint4 w;                                                                               \
        asm volatile(LOAD " {%0, %1, %2, %3}, [%4];"                                           \
                     : "=r"(w.x), "=r"(w.y), "=r"(w.z), "=r"(w.w)                              \
                     : "l"(address));                                                          \
        return w;                                                                              \
    }                                                                                          \
    extern "C" __global__ void NAME(const uint4* words, unsigned long long n16, unsigned passes, \
                                    unsigned long long* total) {                               \
        const unsigned long long first = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; \
        const unsigned long long step = (unsigned long long)gridDim.x * blockDim.x;            \
        unsigned long long sum = 0;                                                            \
        for (unsigned pass = 0; pass < passes; ++pass)                                         \
            for (unsigned long long i = first; i < n16; i += step) {                           \
                const uint4 w = NAME##_load(words + i);                                        \
                sum += (unsigned long long)w.x + w.y + w.z + w.w;                              \
            }                                                                                  \
        for (int offset = 16; offset > 0; offset /= 2)                                         \
            sum += __shfl_down_sync(0xffffffffu, sum, offset);                                 \
        if ((threadIdx.x & 31) == 0) atomicAdd(total, sum);                                    \
    }

REPEATED_READ(cached_read, "ld.global.ca.v4.u32")
REPEATED_READ(l2_read, "ld.global.cg.v4.u32")
