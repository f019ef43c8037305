// Global-memory access patterns: what an offset and a stride do to coalescing, and what the
// working set does to where the data comes from (L1, L2 or DRAM). A warp's request is served
// in 32-byte sectors: a misaligned warp touches one sector more, a strided one up to a
// sector per element. DTYPE (-D) is float or double.
#ifndef DTYPE
#define DTYPE float
#endif

// read_offset: out[i] = in[i + offset]: the reads start `offset` elements past an aligned
// address, the writes are aligned.
extern "C" __global__ void read_offset(DTYPE* __restrict__ out, const DTYPE* __restrict__ in,
                                       unsigned long long n, unsigned offset) {
    const unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[i + offset];
}

// write_offset: out[i + offset] = in[i]: aligned reads, misaligned writes.
extern "C" __global__ void write_offset(DTYPE* __restrict__ out, const DTYPE* __restrict__ in,
                                        unsigned long long n, unsigned offset) {
    const unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    if (i < n) out[i + offset] = in[i];
}

// read_stride: out[i] = in[i * stride]: a warp's 32 reads spread over 32 * stride elements.
extern "C" __global__ void read_stride(DTYPE* __restrict__ out, const DTYPE* __restrict__ in,
                                       unsigned long long n, unsigned stride) {
    const unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[i * stride];
}

// write_stride: out[i * stride] = in[i]: contiguous reads, scattered writes (a partial
// sector written costs a read-modify-write in L2).
extern "C" __global__ void write_stride(DTYPE* __restrict__ out, const DTYPE* __restrict__ in,
                                        unsigned long long n, unsigned stride) {
    const unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    if (i < n) out[i * stride] = in[i];
}

// cached_read: the working set read `passes` times, each thread always the same words, so
// what fits in a SM's L1 or in L2 is served from there after the first pass. The words are
// summed (wrapping modulo 2^64) so the reads cannot be optimised away and the sum is exact.
extern "C" __global__ void cached_read(const unsigned* __restrict__ words, unsigned long long n,
                                       unsigned passes, unsigned long long* total) {
    const unsigned long long first = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    const unsigned long long step = (unsigned long long)gridDim.x * blockDim.x;
    unsigned long long sum = 0;
    for (unsigned pass = 0; pass < passes; ++pass)
        for (unsigned long long i = first; i < n; i += step) sum += words[i];
    for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_down_sync(0xffffffffu, sum, offset);
    if ((threadIdx.x & 31) == 0) atomicAdd(total, sum);
}
