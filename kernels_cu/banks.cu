// Shared-memory bank conflicts: 32 banks of 4-byte words; the lanes of a warp that hit
// different words of one bank are served one after another (a conflict), lanes that hit the
// same word share it (a broadcast). A stride of s words hits gcd(s, 32) words per bank.
// WORD (-D) is 4 or 8 bytes. Each thread reads its word `iterations` times (volatile: every
// load is issued) and the SM's clock counts the cycles the loop took.
#ifndef WORD
#define WORD 4
#endif
#if WORD == 8
typedef unsigned long long word_t;
#else
typedef unsigned int word_t;
#endif
#define SLOTS (32 * 33)

__device__ __forceinline__ void read_loop(const word_t* in, word_t* out, unsigned index,
                                          unsigned iterations, unsigned long long* cycles) {
    __shared__ word_t tile[SLOTS];
    for (unsigned i = threadIdx.x; i < SLOTS; i += blockDim.x) tile[i] = in[i];
    __syncthreads();
    const volatile word_t* slot = tile + index;
    word_t sum = 0;
    const long long start = clock64();
    for (unsigned k = 0; k < iterations; k += 4) {
        sum += *slot;
        sum += *slot;
        sum += *slot;
        sum += *slot;
    }
    const long long stop = clock64();
    out[blockIdx.x * blockDim.x + threadIdx.x] = sum;
    if ((threadIdx.x & 31) == 0) atomicAdd(cycles, (unsigned long long)(stop - start));
}

// strided: lane l reads word l * stride.
extern "C" __global__ void strided(const word_t* in, word_t* out, unsigned stride,
                                   unsigned iterations, unsigned long long* cycles) {
    read_loop(in, out, (threadIdx.x & 31) * stride, iterations, cycles);
}

// padded: the same with one padding word after every 32, as a [32][33] tile pads its rows:
// word l * stride moves to l * stride + l * stride / 32, which spreads a column over banks.
extern "C" __global__ void padded(const word_t* in, word_t* out, unsigned stride,
                                  unsigned iterations, unsigned long long* cycles) {
    const unsigned word = (threadIdx.x & 31) * stride;
    read_loop(in, out, word + word / 32, iterations, cycles);
}

// broadcast: every lane reads the same word: one access serves the warp.
extern "C" __global__ void broadcast(const word_t* in, word_t* out, unsigned stride,
                                     unsigned iterations, unsigned long long* cycles) {
    read_loop(in, out, 7, iterations, cycles);
}
