// Parallel reduction (sum): the classic seven-step optimisation ladder, then past it.
//
// Every kernel reads `n` elements of `in` and writes one partial sum per block to
// out[blockIdx.x]; the harness launches it again on the partials until one value is left
// (single_pass needs one launch in total). Sums wrap around for integers, like C.
// Compile-time parameters (-D): DTYPE (int or float), BLOCK_SIZE (a power of two, 64..1024).
// Steps 1-5 use blockDim.x and dynamic shared memory, as the classic code did, so only
// step 6 onwards profits from knowing the block size at compile time.

#ifndef DTYPE
#define DTYPE float
#endif
#ifndef BLOCK_SIZE
#define BLOCK_SIZE 256
#endif
#if BLOCK_SIZE < 64 || BLOCK_SIZE > 1024 || (BLOCK_SIZE & (BLOCK_SIZE - 1)) != 0
#error "BLOCK_SIZE must be a power of two from 64 to 1024"
#endif

typedef unsigned long long index_t;

// (*) Steps 1, 3, 4 and 5 reach their partner through a pointer to their own element, mine[s],
// not sdata[tid + s]: with unsigned indices NVRTC (the cuda-core backend's compiler), whose
// shared-memory pointers are 64-bit, must form tid + s before scaling it, one more dependent
// instruction per step than nvcc needs; both compile mine[s] to the same single instruction.
#define FULL_MASK 0xffffffffu

// The last 32 partial sums of a block, in shared memory, by the first warp (tid < 32).
// The classic code declared sdata volatile and relied on the 32 threads of a warp running
// in lockstep. Since Volta, independent thread scheduling lets lanes of a warp interleave,
// so that is no longer guaranteed: every step reads its partner, __syncwarp() makes all
// reads finish before any lane writes, and a second __syncwarp() publishes the writes.
__device__ __forceinline__ void warp_reduce_shared(DTYPE* sdata, unsigned int tid)
{
    DTYPE* mine = &sdata[tid];  // (*)
    DTYPE v = *mine;
#pragma unroll
    for (int offset = 32; offset > 0; offset >>= 1) {
        v += mine[offset];
        __syncwarp();
        *mine = v;
        __syncwarp();
    }
}

// Step 1. Interleaved addressing with a divergent branch: `tid % (2*s) == 0` keeps only
// every 2s-th thread busy, so the active threads of each warp are scattered (divergence)
// and the modulo is slow.
extern "C" __global__ void interleaved_divergent(const DTYPE* __restrict__ in, DTYPE* __restrict__ out, unsigned int n)
{
    extern __shared__ DTYPE sdata[];
    const unsigned int tid = threadIdx.x;
    const index_t i = (index_t)blockIdx.x * blockDim.x + tid;
    DTYPE* mine = &sdata[tid];  // this thread's element: sdata[tid + s] is mine[s] (*)
    *mine = i < n ? in[i] : (DTYPE)0;
    __syncthreads();
    for (unsigned int s = 1; s < blockDim.x; s *= 2) {
        if (tid % (2 * s) == 0) *mine += mine[s];
        __syncthreads();
    }
    if (tid == 0) out[blockIdx.x] = sdata[0];
}

// Step 2. Interleaved addressing with a strided index: the active threads are now
// contiguous (no divergence within warps), but index = 2*s*tid makes threads of a warp hit
// the same shared-memory bank: bank conflicts.
extern "C" __global__ void interleaved_strided(const DTYPE* __restrict__ in, DTYPE* __restrict__ out, unsigned int n)
{
    extern __shared__ DTYPE sdata[];
    const unsigned int tid = threadIdx.x;
    const index_t i = (index_t)blockIdx.x * blockDim.x + tid;
    sdata[tid] = i < n ? in[i] : (DTYPE)0;
    __syncthreads();
    for (unsigned int s = 1; s < blockDim.x; s *= 2) {
        const unsigned int index = 2 * s * tid;
        if (index < blockDim.x) sdata[index] += sdata[index + s];
        __syncthreads();
    }
    if (tid == 0) out[blockIdx.x] = sdata[0];
}

// Step 3. Sequential addressing: thread tid adds element tid + s, consecutive threads touch
// consecutive words, no conflicts. But half the threads are idle from the first step.
extern "C" __global__ void sequential(const DTYPE* __restrict__ in, DTYPE* __restrict__ out, unsigned int n)
{
    extern __shared__ DTYPE sdata[];
    const unsigned int tid = threadIdx.x;
    const index_t i = (index_t)blockIdx.x * blockDim.x + tid;
    DTYPE* mine = &sdata[tid];  // (*)
    *mine = i < n ? in[i] : (DTYPE)0;
    __syncthreads();
    for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) *mine += mine[s];
        __syncthreads();
    }
    if (tid == 0) out[blockIdx.x] = sdata[0];
}

// Step 4. First add during the global load: each thread loads two elements and adds them,
// so a block covers 2 * blockDim.x elements and no thread is idle at the start.
extern "C" __global__ void first_add_on_load(const DTYPE* __restrict__ in, DTYPE* __restrict__ out, unsigned int n)
{
    extern __shared__ DTYPE sdata[];
    const unsigned int tid = threadIdx.x;
    const index_t i = (index_t)blockIdx.x * (blockDim.x * 2) + tid;
    DTYPE v = i < n ? in[i] : (DTYPE)0;
    if (i + blockDim.x < n) v += in[i + blockDim.x];
    DTYPE* mine = &sdata[tid];  // (*)
    *mine = v;
    __syncthreads();
    for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) *mine += mine[s];
        __syncthreads();
    }
    if (tid == 0) out[blockIdx.x] = sdata[0];
}

// Step 5. Unroll the last warp: once s <= 32 only one warp works, so the block-wide
// __syncthreads() and the loop bookkeeping are replaced by warp-level steps
// (warp_reduce_shared: __syncwarp, not volatile, to be correct on Volta and later).
extern "C" __global__ void unroll_last_warp(const DTYPE* __restrict__ in, DTYPE* __restrict__ out, unsigned int n)
{
    extern __shared__ DTYPE sdata[];
    const unsigned int tid = threadIdx.x;
    const index_t i = (index_t)blockIdx.x * (blockDim.x * 2) + tid;
    DTYPE v = i < n ? in[i] : (DTYPE)0;
    if (i + blockDim.x < n) v += in[i + blockDim.x];
    DTYPE* mine = &sdata[tid];  // (*)
    *mine = v;
    __syncthreads();
    for (unsigned int s = blockDim.x / 2; s > 32; s >>= 1) {
        if (tid < s) *mine += mine[s];
        __syncthreads();
    }
    if (tid < 32) warp_reduce_shared(sdata, tid);
    if (tid == 0) out[blockIdx.x] = sdata[0];
}

// The block-wide tree with BLOCK_SIZE known at compile time: every `if (BLOCK_SIZE >= ...)`
// is resolved by the compiler, so no loop, no loop counter, no dead steps.
__device__ __forceinline__ void block_reduce_unrolled(DTYPE* sdata, unsigned int tid)
{
    if (BLOCK_SIZE >= 1024) { if (tid < 512) sdata[tid] += sdata[tid + 512]; __syncthreads(); }
    if (BLOCK_SIZE >= 512) { if (tid < 256) sdata[tid] += sdata[tid + 256]; __syncthreads(); }
    if (BLOCK_SIZE >= 256) { if (tid < 128) sdata[tid] += sdata[tid + 128]; __syncthreads(); }
    if (BLOCK_SIZE >= 128) { if (tid < 64) sdata[tid] += sdata[tid + 64]; __syncthreads(); }
    if (tid < 32) warp_reduce_shared(sdata, tid);
}

// Step 6. Complete unrolling: the block size is a compile-time constant (-DBLOCK_SIZE),
// so the whole tree is straight-line code.
extern "C" __global__ void complete_unroll(const DTYPE* __restrict__ in, DTYPE* __restrict__ out, unsigned int n)
{
    __shared__ DTYPE sdata[BLOCK_SIZE];
    const unsigned int tid = threadIdx.x;
    const index_t i = (index_t)blockIdx.x * (BLOCK_SIZE * 2) + tid;
    DTYPE v = i < n ? in[i] : (DTYPE)0;
    if (i + BLOCK_SIZE < n) v += in[i + BLOCK_SIZE];
    sdata[tid] = v;
    __syncthreads();
    block_reduce_unrolled(sdata, tid);
    if (tid == 0) out[blockIdx.x] = sdata[0];
}

// Step 7. Many elements per thread: a grid-stride loop over the input with the grid sized
// to fill the device once (not one block per 2*BLOCK_SIZE elements). Each thread's serial
// adds are cheap; the tree and the second pass shrink to almost nothing.
extern "C" __global__ void grid_stride(const DTYPE* __restrict__ in, DTYPE* __restrict__ out, unsigned int n)
{
    __shared__ DTYPE sdata[BLOCK_SIZE];
    const unsigned int tid = threadIdx.x;
    const index_t stride = (index_t)BLOCK_SIZE * 2 * gridDim.x;
    DTYPE v = 0;
    for (index_t i = (index_t)blockIdx.x * (BLOCK_SIZE * 2) + tid; i < n; i += stride) {
        v += in[i];
        if (i + BLOCK_SIZE < n) v += in[i + BLOCK_SIZE];
    }
    sdata[tid] = v;
    __syncthreads();
    block_reduce_unrolled(sdata, tid);
    if (tid == 0) out[blockIdx.x] = sdata[0];
}

// Sum of a warp through register shuffles: no shared memory, no barriers.
__device__ __forceinline__ DTYPE warp_sum(DTYPE v)
{
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(FULL_MASK, v, offset);
    return v;
}

// Sum of a block: each warp shuffles down to one value, the warps' values go through
// 32 words of shared memory, and the first warp shuffles those. Valid in thread 0.
__device__ __forceinline__ DTYPE block_sum_shuffle(DTYPE v)
{
    __shared__ DTYPE warp_sums[BLOCK_SIZE / 32];
    const unsigned int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    v = warp_sum(v);
    if (lane == 0) warp_sums[warp] = v;
    __syncthreads();
    if (warp == 0) v = warp_sum(lane < BLOCK_SIZE / 32 ? warp_sums[lane] : (DTYPE)0);
    return v;
}

// Beyond the classic: warp shuffles instead of the shared-memory tree. One barrier per
// block instead of log2(BLOCK_SIZE), and shuffles move data register to register.
extern "C" __global__ void warp_shuffle(const DTYPE* __restrict__ in, DTYPE* __restrict__ out, unsigned int n)
{
    const index_t stride = (index_t)BLOCK_SIZE * 2 * gridDim.x;
    DTYPE v = 0;
    for (index_t i = (index_t)blockIdx.x * (BLOCK_SIZE * 2) + threadIdx.x; i < n; i += stride) {
        v += in[i];
        if (i + BLOCK_SIZE < n) v += in[i + BLOCK_SIZE];
    }
    v = block_sum_shuffle(v);
    if (threadIdx.x == 0) out[blockIdx.x] = v;
}

// 16-byte loads: four elements per load instruction (LDG.128), a quarter of the load
// instructions and more bytes in flight per thread. cudaMalloc'd buffers are 256-byte
// aligned; the last n % 4 elements are read one by one.
struct __align__(16) vec4_t { DTYPE v[4]; };

__device__ __forceinline__ DTYPE thread_sum_vectorized(const DTYPE* __restrict__ in, unsigned int n)
{
    const index_t n4 = n / 4;
    const vec4_t* in4 = reinterpret_cast<const vec4_t*>(in);
    const index_t stride = (index_t)BLOCK_SIZE * gridDim.x;
    DTYPE a = 0, b = 0;  // two accumulators: two independent add chains per thread
    index_t i = (index_t)blockIdx.x * BLOCK_SIZE + threadIdx.x;
    for (; i + stride < n4; i += 2 * stride) {
        const vec4_t x = in4[i], y = in4[i + stride];
        a += (x.v[0] + x.v[1]) + (x.v[2] + x.v[3]);
        b += (y.v[0] + y.v[1]) + (y.v[2] + y.v[3]);
    }
    if (i < n4) {
        const vec4_t x = in4[i];
        a += (x.v[0] + x.v[1]) + (x.v[2] + x.v[3]);
    }
    const index_t tail = n4 * 4 + (index_t)blockIdx.x * BLOCK_SIZE + threadIdx.x;
    if (blockIdx.x == 0 && tail < n) a += in[tail];
    return a + b;
}

extern "C" __global__ void vectorized(const DTYPE* __restrict__ in, DTYPE* __restrict__ out, unsigned int n)
{
    const DTYPE v = block_sum_shuffle(thread_sum_vectorized(in, n));
    if (threadIdx.x == 0) out[blockIdx.x] = v;
}

// Single pass: one launch in total. Each block writes its partial, makes it visible to
// the whole device (__threadfence), and takes a ticket; the block that takes the last
// ticket sums all partials and resets the counter to 0 for the next launch. No second
// kernel launch, no host round trip, and the result is deterministic (unlike atomicAdd of
// floats).
extern "C" __global__ void single_pass(const DTYPE* __restrict__ in, DTYPE* __restrict__ out,
                                       DTYPE* __restrict__ partials, unsigned int* counter, unsigned int n)
{
    __shared__ bool is_last_block;
    DTYPE v = block_sum_shuffle(thread_sum_vectorized(in, n));
    if (threadIdx.x == 0) {
        partials[blockIdx.x] = v;
        __threadfence();
        const unsigned int ticket = atomicAdd(counter, 1u);
        is_last_block = (ticket == gridDim.x - 1);
    }
    __syncthreads();
    if (!is_last_block) return;
    DTYPE w = 0;
    for (unsigned int i = threadIdx.x; i < gridDim.x; i += BLOCK_SIZE) w += __ldcg(&partials[i]);
    __syncthreads();  // block_sum_shuffle reuses its shared words: the first use must be over
    w = block_sum_shuffle(w);
    if (threadIdx.x == 0) {
        out[0] = w;
        *counter = 0;
    }
}
