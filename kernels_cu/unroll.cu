// Loop unrolling: one loop, acc += (x ^ k) * 2654435761 for k < work (work known only at run
// time), unrolled 1, 2, 4, 8 or 16 times, and with four independent accumulators. Unrolling
// removes the counter, compare and branch from all but one copy of the body; independent
// accumulators also break the chain of dependent adds. Integer arithmetic wraps, so every
// version computes exactly the same sum.
template <int UNROLL>
__device__ __forceinline__ unsigned hash_sum(unsigned x, unsigned work) {
    unsigned acc = 0;
#pragma unroll UNROLL
    for (unsigned k = 0; k < work; ++k) acc += (x ^ k) * 2654435761u;
    return acc;
}

#define UNROLLED(name, factor)                                                                 \
    extern "C" __global__ void name(unsigned* out, const unsigned* in, unsigned n, unsigned work) { \
        const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;                              \
        if (i < n) out[i] = hash_sum<factor>(in[i], work);                                     \
    }

UNROLLED(unroll_1, 1)    // no unrolling: the loop as written
UNROLLED(unroll_2, 2)
UNROLLED(unroll_4, 4)
UNROLLED(unroll_8, 8)
UNROLLED(unroll_16, 16)

// independent_accumulators: four sums over k = 4j, 4j+1, 4j+2, 4j+3, added at the end; the
// four adds of one step do not wait for each other.
extern "C" __global__ void independent_accumulators(unsigned* out, const unsigned* in,
                                                    unsigned n, unsigned work) {
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const unsigned x = in[i];
    unsigned a0 = 0, a1 = 0, a2 = 0, a3 = 0, k = 0;
    for (; k + 4 <= work; k += 4) {
        a0 += (x ^ k) * 2654435761u;
        a1 += (x ^ (k + 1)) * 2654435761u;
        a2 += (x ^ (k + 2)) * 2654435761u;
        a3 += (x ^ (k + 3)) * 2654435761u;
    }
    for (; k < work; ++k) a0 += (x ^ k) * 2654435761u;
    out[i] = (a0 + a1) + (a2 + a3);
}
