// Branch divergence: the lanes of a warp share one instruction stream, so when they take
// different sides of a branch the warp runs both sides, each with part of its lanes masked.
// Both sides below do equal work (WORK multiply-adds of an integer hash, differently
// seeded), so any difference in time is the cost of running both.
#define SIDE_A(x) for (unsigned k = 0; k < work; ++k) x = x * 1664525u + 1013904223u
#define SIDE_B(x) for (unsigned k = 0; k < work; ++k) x = x * 22695477u + 12345u

// uniform: every lane takes side A: no divergence (the baseline).
extern "C" __global__ void uniform(unsigned* out, const unsigned* in, unsigned n, unsigned work) {
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned x = in[i];
    SIDE_A(x);
    out[i] = x;
}

// odd_even: even lanes take side A, odd lanes side B: every warp runs both sides.
extern "C" __global__ void odd_even(unsigned* out, const unsigned* in, unsigned n, unsigned work) {
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned x = in[i];
    if (threadIdx.x % 2 == 0) {
        SIDE_A(x);
    } else {
        SIDE_B(x);
    }
    out[i] = x;
}

// warp_aligned: the same split by warp (threadIdx.x / 32 even or odd): as many lanes on
// each side, but each warp takes one side only.
extern "C" __global__ void warp_aligned(unsigned* out, const unsigned* in, unsigned n, unsigned work) {
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned x = in[i];
    if ((threadIdx.x / 32) % 2 == 0) {
        SIDE_A(x);
    } else {
        SIDE_B(x);
    }
    out[i] = x;
}

// predicated: a short choice per step (one multiplier or the other) that the compiler turns
// into a select: no branch, both lanes' work in one instruction stream.
extern "C" __global__ void predicated(unsigned* out, const unsigned* in, unsigned n, unsigned work) {
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned x = in[i];
    const bool even = threadIdx.x % 2 == 0;
    for (unsigned k = 0; k < work; ++k)
        x = even ? x * 1664525u + 1013904223u : x * 22695477u + 12345u;
    out[i] = x;
}

// lane_gt_2: the classic `if (threadIdx.x > 2)`: only the first warp of a block diverges.
extern "C" __global__ void lane_gt_2(unsigned* out, const unsigned* in, unsigned n, unsigned work) {
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned x = in[i];
    if (threadIdx.x > 2) {
        SIDE_A(x);
    } else {
        SIDE_B(x);
    }
    out[i] = x;
}

// warp_gt_2: `if (threadIdx.x / 32 > 2)`: the same kind of split on warp boundaries.
extern "C" __global__ void warp_gt_2(unsigned* out, const unsigned* in, unsigned n, unsigned work) {
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned x = in[i];
    if (threadIdx.x / 32 > 2) {
        SIDE_A(x);
    } else {
        SIDE_B(x);
    }
    out[i] = x;
}
