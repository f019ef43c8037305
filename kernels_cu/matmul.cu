// Matrix multiply C = A * B, float32, row-major: A is M x K, B is K x N, C is M x N.
// From one thread per output to register-blocked, software-pipelined tiles. Every kernel
// bounds-checks M, N and K, so any shape is correct. No tensor cores, no TF32: plain FFMA.
// Compile-time parameters (-D): BLOCK (naive/tiled/register thread block edge), MICRO
// (register micro-tile edge), BM, BN, BK (blocked/pipelined block tile), TM, TN (their
// per-thread micro-tile, multiples of 4); warp_tiled's own, listed in its section.

// A build names the kernels it needs where the harness knows them (a sweep of warp_tiled's
// tile shapes builds warp_tiled alone, about a tenth of the file's compile time); a build
// that names none compiles every kernel.
#ifndef GPUBENCH_SELECTED
#define GPUBENCH_WANTS_naive 1
#define GPUBENCH_WANTS_tiled 1
#define GPUBENCH_WANTS_register_tile 1
#define GPUBENCH_WANTS_blocked 1
#define GPUBENCH_WANTS_pipelined 1
#define GPUBENCH_WANTS_warp_tiled 1
#define GPUBENCH_WANTS_multistage 1
#define GPUBENCH_WANTS_multistage_edges 1
#endif

#ifndef BLOCK
#define BLOCK 16
#endif
#ifndef MICRO
#define MICRO 4
#endif
#ifndef BM
#define BM 128
#endif
#ifndef BN
#define BN 128
#endif
#ifndef BK
#define BK 8
#endif
#ifndef TM
#define TM 8
#endif
#ifndef TN
#define TN 8
#endif

#if TM % 4 != 0 || TN % 4 != 0 || BK % 4 != 0
#error "TM, TN and BK must be multiples of 4"
#endif

typedef unsigned long long index_t;

// naive: one thread per element of C, both operands straight from global memory: two loads
// per multiply-add (CGMA = 1), so the kernel is bound by memory traffic, not arithmetic.
#if GPUBENCH_WANTS_naive
extern "C" __global__ void naive(float* __restrict__ C, const float* __restrict__ A, const float* __restrict__ B,
                                 int M, int N, int K)
{
    const int row = blockIdx.y * BLOCK + threadIdx.y;
    const int col = blockIdx.x * BLOCK + threadIdx.x;
    if (row >= M || col >= N) return;
    float sum = 0.0f;
    for (int k = 0; k < K; ++k) sum += A[(index_t)row * K + k] * B[(index_t)k * N + col];
    C[(index_t)row * N + col] = sum;
}
#endif

// tiled: the block stages BLOCK x BLOCK tiles of A and B in shared memory; each element
// loaded from global memory is used BLOCK times (CGMA = BLOCK).
#if GPUBENCH_WANTS_tiled
extern "C" __global__ void tiled(float* __restrict__ C, const float* __restrict__ A, const float* __restrict__ B,
                                 int M, int N, int K)
{
    __shared__ float As[BLOCK][BLOCK];
    __shared__ float Bs[BLOCK][BLOCK + 1];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * BLOCK + ty;
    const int col = blockIdx.x * BLOCK + tx;
    float sum = 0.0f;
    for (int k0 = 0; k0 < K; k0 += BLOCK) {
        As[ty][tx] = (row < M && k0 + tx < K) ? A[(index_t)row * K + k0 + tx] : 0.0f;
        Bs[ty][tx] = (k0 + ty < K && col < N) ? B[(index_t)(k0 + ty) * N + col] : 0.0f;
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BLOCK; ++k) sum += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    if (row < M && col < N) C[(index_t)row * N + col] = sum;
}
#endif

// register: each thread keeps a MICRO x MICRO block of C in registers, so one value read
// from shared memory feeds MICRO multiply-adds; the block tile is (BLOCK*MICRO)^2 and each
// element loaded from global memory is used BLOCK*MICRO times. Rows and columns of a thread
// are BLOCK apart, so neighbouring threads touch neighbouring words (no bank conflicts,
// coalesced stores).
#define RT (BLOCK * MICRO)
// Static shared memory is limited to 48 KB per block: too large a tile is compiled out
// (the harness skips the variant and says why).
#if (RT * (BLOCK + 1) + BLOCK * RT) * 4 <= 49152
#if GPUBENCH_WANTS_register_tile
extern "C" __global__ void register_tile(float* __restrict__ C, const float* __restrict__ A, const float* __restrict__ B,
                                         int M, int N, int K)
{
    __shared__ float As[RT][BLOCK + 1];
    __shared__ float Bs[BLOCK][RT];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row0 = blockIdx.y * RT, col0 = blockIdx.x * RT;
    float acc[MICRO][MICRO] = {};
    for (int k0 = 0; k0 < K; k0 += BLOCK) {
#pragma unroll
        for (int i = 0; i < MICRO; ++i) {
            const int r = row0 + ty + i * BLOCK, k = k0 + tx;
            As[ty + i * BLOCK][tx] = (r < M && k < K) ? A[(index_t)r * K + k] : 0.0f;
            const int kb = k0 + ty, c = col0 + tx + i * BLOCK;
            Bs[ty][tx + i * BLOCK] = (kb < K && c < N) ? B[(index_t)kb * N + c] : 0.0f;
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BLOCK; ++k) {
            float a[MICRO], b[MICRO];
#pragma unroll
            for (int i = 0; i < MICRO; ++i) a[i] = As[ty + i * BLOCK][k];
#pragma unroll
            for (int j = 0; j < MICRO; ++j) b[j] = Bs[k][tx + j * BLOCK];
#pragma unroll
            for (int i = 0; i < MICRO; ++i)
#pragma unroll
                for (int j = 0; j < MICRO; ++j) acc[i][j] += a[i] * b[j];
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < MICRO; ++i)
#pragma unroll
        for (int j = 0; j < MICRO; ++j) {
            const int r = row0 + ty + i * BLOCK, c = col0 + tx + j * BLOCK;
            if (r < M && c < N) C[(index_t)r * N + c] = acc[i][j];
        }
}
#endif
#endif

// ---- blocked and pipelined: BM x BN block tiles, BK deep, TM x TN per thread ------------
// Threads: (BM / TM) x (BN / TN). A thread's rows are 4-row groups BM / (TM/4) apart and
// its columns 4-column groups BN / (TN/4) apart, so a warp reads consecutive 16-byte words
// of shared memory (no bank conflicts) and writes C in 16-byte pieces.
#define THREADS ((BM / TM) * (BN / TN))
#define A_CHUNKS (BM * BK / 4)  // float4 pieces of an A tile
#define B_CHUNKS (BK * BN / 4)
#define PER_THREAD(CHUNKS, NT) (((CHUNKS) + (NT) - 1) / (NT))  // pieces per thread of NT
#define A_PER_THREAD PER_THREAD(A_CHUNKS, THREADS)
#define B_PER_THREAD PER_THREAD(B_CHUNKS, THREADS)
#define AS_STRIDE (BM + 4)  // transposed A tile: padding keeps the transposing stores conflict-free

// Four consecutive elements of a row starting at `col`, zero past `limit`; 16-byte load when
// the row is 16-byte aligned and all four are inside.
__device__ __forceinline__ float4 load4(const float* __restrict__ row, int col, int limit, bool aligned)
{
    if (aligned && col + 3 < limit) return *reinterpret_cast<const float4*>(row + col);
    float4 v;
    v.x = col < limit ? row[col] : 0.0f;
    v.y = col + 1 < limit ? row[col + 1] : 0.0f;
    v.z = col + 2 < limit ? row[col + 2] : 0.0f;
    v.w = col + 3 < limit ? row[col + 3] : 0.0f;
    return v;
}

// The A-tile helpers take the tile (TM_ rows, TK_ deep) and the block's thread count NT as
// template parameters, by default the blocked/pipelined kernels' BM, BK and THREADS, so
// warp_tiled, with a tile shape of its own, shares them.
#define A_REGS(TM_, TK_, NT) PER_THREAD((TM_) * (TK_) / 4, NT)

// Global A tile (TM_ rows from row0, TK_ columns from k0) into registers.
template <int TM_ = BM, int TK_ = BK, int NT = THREADS>
__device__ __forceinline__ void load_a(float4 (&regs)[A_REGS(TM_, TK_, NT)], const float* __restrict__ A,
                                       int M, int K, int row0, int k0, bool aligned)
{
#pragma unroll
    for (int p = 0; p < A_REGS(TM_, TK_, NT); ++p) {
        const int chunk = threadIdx.x + p * NT;
        const int r = chunk / (TK_ / 4), c = (chunk % (TK_ / 4)) * 4;
        const int row = row0 + r;
        regs[p] = (chunk < TM_ * TK_ / 4 && row < M) ? load4(A + (index_t)row * K, k0 + c, K, aligned)
                                                      : make_float4(0.f, 0.f, 0.f, 0.f);
    }
}

// Registers → shared memory, transposed (As[k][m], rows STRIDE = TM_ + 4 apart by default: the
// padding keeps the transposing stores conflict-free): the compute loop then reads a column of
// A as contiguous 16-byte words.
template <int TM_ = BM, int TK_ = BK, int NT = THREADS, int STRIDE = TM_ + 4>
__device__ __forceinline__ void store_a_transposed(float* As, const float4 (&regs)[A_REGS(TM_, TK_, NT)])
{
#pragma unroll
    for (int p = 0; p < A_REGS(TM_, TK_, NT); ++p) {
        const int chunk = threadIdx.x + p * NT;
        if (chunk >= TM_ * TK_ / 4) break;
        const int r = chunk / (TK_ / 4), c = (chunk % (TK_ / 4)) * 4;
        As[(c + 0) * STRIDE + r] = regs[p].x;
        As[(c + 1) * STRIDE + r] = regs[p].y;
        As[(c + 2) * STRIDE + r] = regs[p].z;
        As[(c + 3) * STRIDE + r] = regs[p].w;
    }
}

// Global B tile (BK rows from k0, BN columns from col0) straight into shared memory.
__device__ __forceinline__ void load_b_sync(float* Bs, const float* __restrict__ B, int N, int K,
                                            int k0, int col0, bool aligned)
{
#pragma unroll
    for (int p = 0; p < B_PER_THREAD; ++p) {
        const int chunk = threadIdx.x + p * THREADS;
        if (chunk >= B_CHUNKS) break;
        const int r = chunk / (BN / 4), c = (chunk % (BN / 4)) * 4;
        const float4 v = (k0 + r < K) ? load4(B + (index_t)(k0 + r) * N, col0 + c, N, aligned)
                                      : make_float4(0.f, 0.f, 0.f, 0.f);
        *reinterpret_cast<float4*>(&Bs[r * BN + c]) = v;
    }
}

// The same with cp.async (sm_80+): the copy engine moves global → shared without passing
// through registers, and the kernel goes on computing while it does. Bytes past the matrix
// edge are zero-filled (the src-size operand). Rows that are not 16-byte aligned use the
// synchronous path.
__device__ __forceinline__ void load_b_async(float* Bs, const float* __restrict__ B, int N, int K,
                                             int k0, int col0, bool aligned)
{
#if __CUDA_ARCH__ >= 800
    if (aligned) {
#pragma unroll
        for (int p = 0; p < B_PER_THREAD; ++p) {
            const int chunk = threadIdx.x + p * THREADS;
            if (chunk >= B_CHUNKS) break;
            const int r = chunk / (BN / 4), c = (chunk % (BN / 4)) * 4;
            const int row = k0 + r, col = col0 + c;
            int valid = (row < K) ? max(0, min(4, N - col)) : 0;
            const float* src = valid ? B + (index_t)row * N + col : B;
            const unsigned dst = (unsigned)__cvta_generic_to_shared(&Bs[r * BN + c]);
            asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n"
                         :: "r"(dst), "l"(src), "r"(valid * 4));
        }
        asm volatile("cp.async.commit_group;\n" ::);
        return;
    }
#endif
    load_b_sync(Bs, B, N, K, k0, col0, aligned);
}

__device__ __forceinline__ void wait_async_copies()
{
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_all;\n" ::);
#endif
}

// One BK-deep slice: TM x TN multiply-adds per k, operands from shared memory as float4.
__device__ __forceinline__ void compute_tile(float (&acc)[TM][TN], const float* As, const float* Bs,
                                             int trow, int tcol)
{
#pragma unroll
    for (int k = 0; k < BK; ++k) {
        float a[TM], b[TN];
#pragma unroll
        for (int g = 0; g < TM / 4; ++g) {
            const float4 v = *reinterpret_cast<const float4*>(&As[k * AS_STRIDE + g * (BM / (TM / 4)) + trow * 4]);
            a[4 * g] = v.x; a[4 * g + 1] = v.y; a[4 * g + 2] = v.z; a[4 * g + 3] = v.w;
        }
#pragma unroll
        for (int g = 0; g < TN / 4; ++g) {
            const float4 v = *reinterpret_cast<const float4*>(&Bs[k * BN + g * (BN / (TN / 4)) + tcol * 4]);
            b[4 * g] = v.x; b[4 * g + 1] = v.y; b[4 * g + 2] = v.z; b[4 * g + 3] = v.w;
        }
#pragma unroll
        for (int i = 0; i < TM; ++i)
#pragma unroll
            for (int j = 0; j < TN; ++j) acc[i][j] += a[i] * b[j];
    }
}

__device__ __forceinline__ void store_c(float* __restrict__ C, const float (&acc)[TM][TN], int M, int N,
                                        int row0, int col0, int trow, int tcol, bool aligned)
{
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int row = row0 + (i / 4) * (BM / (TM / 4)) + trow * 4 + (i % 4);
        if (row >= M) continue;
#pragma unroll
        for (int g = 0; g < TN / 4; ++g) {
            const int col = col0 + g * (BN / (TN / 4)) + tcol * 4;
            float* out = C + (index_t)row * N + col;
            if (aligned && col + 3 < N) {
                *reinterpret_cast<float4*>(out) =
                    make_float4(acc[i][4 * g], acc[i][4 * g + 1], acc[i][4 * g + 2], acc[i][4 * g + 3]);
            } else {
#pragma unroll
                for (int e = 0; e < 4; ++e)
                    if (col + e < N) out[e] = acc[i][4 * g + e];
            }
        }
    }
}

// blocked: BM x BN x BK tiles in shared memory (A transposed), TM x TN per thread in
// registers, 16-byte loads, fully unrolled K slice. Each element loaded from global memory
// is used 2*BM*BN/(BM+BN) times (128 for 128 x 128). Load, sync, compute, sync: while a
// tile loads, nothing computes.
#if (BK * AS_STRIDE + BK * BN) * 4 <= 49152
#if GPUBENCH_WANTS_blocked
extern "C" __global__ void __launch_bounds__(THREADS)
blocked(float* __restrict__ C, const float* __restrict__ A, const float* __restrict__ B, int M, int N, int K)
{
    __shared__ __align__(16) float As[BK * AS_STRIDE];
    __shared__ __align__(16) float Bs[BK * BN];
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    const int trow = threadIdx.x / (BN / TN), tcol = threadIdx.x % (BN / TN);
    const bool a_aligned = (K % 4) == 0, b_aligned = (N % 4) == 0;
    float acc[TM][TN] = {};
    float4 a_regs[A_PER_THREAD];
    for (int k0 = 0; k0 < K; k0 += BK) {
        load_a(a_regs, A, M, K, row0, k0, a_aligned);
        store_a_transposed(As, a_regs);
        load_b_sync(Bs, B, N, K, k0, col0, b_aligned);
        __syncthreads();
        compute_tile(acc, As, Bs, trow, tcol);
        __syncthreads();
    }
    store_c(C, acc, M, N, row0, col0, trow, tcol, b_aligned);
}
#endif
#endif

// pipelined: blocked with two shared-memory buffers. While the threads compute on tile t,
// tile t+1 is already on its way: B by cp.async into the other buffer, A into registers
// (stored transposed after the compute). One barrier per tile instead of two, and global
// latency hidden behind arithmetic.
#if 2 * (BK * AS_STRIDE + BK * BN) * 4 <= 49152
#if GPUBENCH_WANTS_pipelined
extern "C" __global__ void __launch_bounds__(THREADS)
pipelined(float* __restrict__ C, const float* __restrict__ A, const float* __restrict__ B, int M, int N, int K)
{
    __shared__ __align__(16) float As[2][BK * AS_STRIDE];
    __shared__ __align__(16) float Bs[2][BK * BN];
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    const int trow = threadIdx.x / (BN / TN), tcol = threadIdx.x % (BN / TN);
    const bool a_aligned = (K % 4) == 0, b_aligned = (N % 4) == 0;
    const int tiles = (K + BK - 1) / BK;
    float acc[TM][TN] = {};
    float4 a_regs[A_PER_THREAD];

    load_a(a_regs, A, M, K, row0, 0, a_aligned);
    store_a_transposed(As[0], a_regs);
    load_b_async(Bs[0], B, N, K, 0, col0, b_aligned);
    wait_async_copies();
    __syncthreads();
    for (int t = 0; t < tiles; ++t) {
        const int cur = t & 1, next = cur ^ 1;
        const bool more = t + 1 < tiles;
        if (more) {
            load_b_async(Bs[next], B, N, K, (t + 1) * BK, col0, b_aligned);
            load_a(a_regs, A, M, K, row0, (t + 1) * BK, a_aligned);
        }
        compute_tile(acc, As[cur], Bs[cur], trow, tcol);
        if (more) {
            store_a_transposed(As[next], a_regs);
            wait_async_copies();
        }
        __syncthreads();
    }
    store_c(C, acc, M, N, row0, col0, trow, tcol, b_aligned);
}
#endif
#endif

// ---- warp_tiled: the block tile split among warps, each warp's among its threads --------
// Each of the block's (WBM / WM) x (WBN / WN) warps owns a WM x WN sub-tile of C; inside it a
// thread owns WMITER x WNITER micro-tiles of WTM x WTN, WSUBM rows and WSUBN columns apart.
// All 32 lanes of a warp read neighbouring 16-byte words of the shared A and B tiles (no
// bank conflicts, broadcasts between lanes that share a row or column), and a warp's
// operands come from a small region of shared memory, so fewer distinct values are loaded
// per FMA than with threads laid out over the whole block tile.
// B travels by cp.async (16 bytes at a time) into a ring of STAGES buffers, so STAGES - 1
// tiles are in flight while one is computed; one barrier per tile. A is stored transposed
// (As[k][m]) and comes one of two ways: A_ASYNC 1, by cp.async too, four bytes at a time
// (no registers, four times the copy instructions); A_ASYNC 0, through registers like
// pipelined (16-byte loads issued before the compute, stored transposed after it).
// Blocks are numbered GROUP block-rows at a time (column by column inside a group), so the
// blocks resident together share rows of A and columns of B in L2.
// Its tile shape has names of its own (WBM x WBN blocks, WBK deep, WTM x WTN per thread),
// so one compile holds it and the blocked/pipelined kernels at different shapes.
#ifndef WBM
#define WBM 128
#endif
#ifndef WBN
#define WBN 128
#endif
#ifndef WBK
#define WBK 8
#endif
#ifndef WTM
#define WTM 8
#endif
#ifndef WTN
#define WTN 8
#endif
#ifndef WM
#define WM 64
#endif
#ifndef WN
#define WN 64
#endif
#ifndef WNITER
#define WNITER 2
#endif
#ifndef STAGES
#define STAGES 3
#endif
#ifndef GROUP
#define GROUP 8
#endif
#ifndef A_ASYNC
#define A_ASYNC 0
#endif
#ifndef FRAGMENTS
#define FRAGMENTS 1
#endif
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 1
#endif
// Padding of the transposed A tile's rows: 4 keeps the transposing stores free of bank
// conflicts; 0 saves WBK x 4 floats a stage, which can let one more stage fit in 48 KB.
#ifndef A_PAD
#define A_PAD 4
#endif
#define WT_THREADS ((WBM / WM) * (WBN / WN) * 32)
#define WMITER ((WM * WN) / (32 * WTM * WTN * WNITER))
#define WSUBM (WM / WMITER)
#define WSUBN (WN / WNITER)
#define WAS_STRIDE (WBM + A_PAD)
#define WA_CHUNKS (WBM * WBK / 4)
#define WB_CHUNKS (WBK * WBN / 4)
#define WA_PER_THREAD A_REGS(WBM, WBK, WT_THREADS)  // load_a's register array for warp_tiled
#define WB_PER_THREAD PER_THREAD(WB_CHUNKS, WT_THREADS)  // B pieces a thread copies

// The ring of STAGES A and B tiles, in bytes. Up to 48 KB it is a static array; past that,
// dynamic shared memory the launch gives (the backend opts the kernel in, up to the device's
// limit, 227 KB on an H100), for deeper rings and larger tiles. Static where it fits: the
// fixed addresses save the address arithmetic a dynamic base costs in the ring's indexing.
#define WT_RING_BYTES (STAGES * (WBK * WAS_STRIDE + WBK * WBN) * 4)
#define WT_RING_DYNAMIC (WT_RING_BYTES > 49152)

// cp.async and shared-window helpers, shared by warp_tiled and multistage.
// One 4- or 16-byte global → shared copy that does not wait; `bytes` below `size` are
// zero-filled (bytes = 0 for an element outside the matrix). Before sm_80: a plain copy.
// `to` is the destination's shared-window address (what __cvta_generic_to_shared gives).
template <int SIZE>
__device__ __forceinline__ void copy_async_to(unsigned to, const float* src, int bytes)
{
#if __CUDA_ARCH__ >= 800
    if (SIZE == 16)
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" :: "r"(to), "l"(src), "r"(bytes));
    else
        asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" :: "r"(to), "l"(src), "r"(bytes));
#else
    for (int e = 0; e < SIZE / 4; ++e)
        asm volatile("st.shared.f32 [%0], %1;\n" :: "r"(to + 4 * e), "f"(4 * e < bytes ? src[e] : 0.0f) : "memory");
#endif
}

// A shared array element's shared-window address.
__device__ __forceinline__ unsigned shared_address(const float* p)
{
    return (unsigned)__cvta_generic_to_shared(p);
}

__device__ __forceinline__ void commit_copies()
{
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.commit_group;\n" ::);
#endif
}

// The 16 bytes at a shared-window address.
__device__ __forceinline__ float4 load_shared4(unsigned address)
{
    float4 v;
    asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];\n"
                 : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "r"(address));
    return v;
}

// Waits until at most IN_FLIGHT groups of this thread's copies are still in flight. With a ring
// of S tiles and one commit group per tile, IN_FLIGHT = S - 2: the next tile has landed.
template <int IN_FLIGHT>
__device__ __forceinline__ void wait_copy_groups()
{
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_group %0;\n" :: "n"(IN_FLIGHT));
#endif
}

// Grouped block order: blocks are numbered GROUP block-rows at a time (column by column inside
// a group), so the blocks resident together share rows of A and columns of B in L2. Block b of
// the launch computes tile (tile_row, tile_col).
__device__ __forceinline__ void grouped_tile(int& tile_row, int& tile_col)
{
    const int linear = blockIdx.y * gridDim.x + blockIdx.x;
    const int per_group = GROUP * gridDim.x;
    const int first_row = linear / per_group * GROUP;
    const int rows_here = min((int)gridDim.y - first_row, GROUP);
    tile_row = first_row + (linear % per_group) % rows_here;
    tile_col = (linear % per_group) / rows_here;
}

#if WBM % WM == 0 && WBN % WN == 0 && WMITER >= 1 && (WSUBM / WTM) * (WSUBN / WTN) == 32 \
    && WT_RING_BYTES <= 232448
template <int SIZE>
__device__ __forceinline__ void copy_async(float* dst, const float* src, int bytes)
{
    copy_async_to<SIZE>(shared_address(dst), src, bytes);
}

// The A tile (WBM rows from row0, WBK columns from k0), one element per copy, k fastest so a
// warp reads whole 32-byte sectors of A's rows; stored transposed, As[k][m].
template <bool CHECKED>
__device__ __forceinline__ void copy_a_tile(float* As, const float* __restrict__ A, int M, int K,
                                            int row0, int k0)
{
#pragma unroll
    for (int p = 0; p < PER_THREAD(WBM * WBK, WT_THREADS); ++p) {
        const int e = threadIdx.x + p * WT_THREADS;
        if (e >= WBM * WBK) break;
        const int r = e / WBK, c = e % WBK;
        const bool inside = !CHECKED || (row0 + r < M && k0 + c < K);
        copy_async<4>(&As[c * WAS_STRIDE + r], inside ? A + (index_t)(row0 + r) * K + k0 + c : A,
                      inside ? 4 : 0);
    }
}

// The B tile (WBK rows from k0, WBN columns from col0): 16 bytes per copy where B's rows are
// 16-byte aligned (N % 4 == 0), else one element per copy.
template <bool CHECKED>
__device__ __forceinline__ void copy_b_tile(float* Bs, const float* __restrict__ B, int N, int K,
                                            int k0, int col0, bool aligned)
{
    if (aligned) {
#pragma unroll
        for (int p = 0; p < WB_PER_THREAD; ++p) {
            const int chunk = threadIdx.x + p * WT_THREADS;
            if (chunk >= WB_CHUNKS) break;
            const int r = chunk / (WBN / 4), c = (chunk % (WBN / 4)) * 4;
            const int valid = !CHECKED ? 4 : k0 + r < K ? max(0, min(4, N - col0 - c)) : 0;
            copy_async<16>(&Bs[r * WBN + c], valid ? B + (index_t)(k0 + r) * N + col0 + c : B,
                           valid * 4);
        }
    } else {
#pragma unroll
        for (int p = 0; p < PER_THREAD(WBK * WBN, WT_THREADS); ++p) {
            const int e = threadIdx.x + p * WT_THREADS;
            if (e >= WBK * WBN) break;
            const int r = e / WBN, c = e % WBN;
            const bool inside = k0 + r < K && col0 + c < N;
            copy_async<4>(&Bs[r * WBN + c], inside ? B + (index_t)(k0 + r) * N + col0 + c : B,
                          inside ? 4 : 0);
        }
    }
}

// Blocks wholly inside C copy their full tiles through source pointers set up once, one per
// 16-byte piece a thread copies, and moved one tile along K after each copy: no per-tile
// address arithmetic (with two warps per scheduler its dependent integer chains stall).
struct InsideSources {
    const float* a[WA_PER_THREAD];
    const float* b[WB_PER_THREAD];
    index_t b_step;                // WBK rows of B
    unsigned b_dst[WB_PER_THREAD]; // shared-window address of each B piece in ring position 0
};

__device__ __forceinline__ void inside_sources(InsideSources& src, const float* __restrict__ A,
                                               const float* __restrict__ B, const float* Bs,
                                               int N, int K, int row0, int col0)
{
#pragma unroll
    for (int p = 0; p < WA_PER_THREAD; ++p) {
        const int chunk = min(threadIdx.x + p * WT_THREADS, WA_CHUNKS - 1);
        src.a[p] = A + (index_t)(row0 + chunk / (WBK / 4)) * K + (chunk % (WBK / 4)) * 4;
    }
#pragma unroll
    for (int p = 0; p < WB_PER_THREAD; ++p) {
        const int chunk = min(threadIdx.x + p * WT_THREADS, WB_CHUNKS - 1);
        src.b[p] = B + (index_t)(chunk / (WBN / 4)) * N + col0 + (chunk % (WBN / 4)) * 4;
        src.b_dst[p] = shared_address(&Bs[(chunk / (WBN / 4)) * WBN + (chunk % (WBN / 4)) * 4]);
    }
    src.b_step = (index_t)WBK * N;
}

// The next full tile of an inside block, A into registers (16-byte loads, stored
// transposed by store_a_transposed after the compute) and B by 16-byte cp.async into ring
// position `slot`. The pointers move on to the next tile if there is one (`more`), else stay
// on this one, so a copy past the last tile re-reads it instead of reading past the matrix.
__device__ __forceinline__ void load_a_inside(float4 (&a_regs)[WA_PER_THREAD], InsideSources& src, bool more)
{
#pragma unroll
    for (int p = 0; p < WA_PER_THREAD; ++p) {
        if (WA_CHUNKS % WT_THREADS == 0 || threadIdx.x + p * WT_THREADS < WA_CHUNKS)
            a_regs[p] = *reinterpret_cast<const float4*>(src.a[p]);
        src.a[p] += more ? WBK : 0;
    }
}

__device__ __forceinline__ void copy_b_inside(int slot, InsideSources& src, bool more)
{
#pragma unroll
    for (int p = 0; p < WB_PER_THREAD; ++p) {
        if (WB_CHUNKS % WT_THREADS == 0 || threadIdx.x + p * WT_THREADS < WB_CHUNKS)
            copy_async_to<16>(src.b_dst[p] + slot * (WBK * WBN * 4), src.b[p], 16);
        src.b[p] += more ? src.b_step : 0;
    }
}

// warp_tiled addresses its shared tiles through 32-bit shared-window addresses (what
// __cvta_generic_to_shared gives), in PTX of its own, so nvcc and NVRTC compile it alike:
// left to itself NVRTC indexes shared arrays with 64-bit generic pointers where nvcc uses
// 32-bit ones, and ptxas, given the other address arithmetic, schedules the products
// differently (the cuda-core backend's warp_tiled ran 30% slower at 4096 on an H100 so).

// store_a_transposed, for a tile at a shared-window address.
template <int TM_, int TK_, int NT, int STRIDE>
__device__ __forceinline__ void store_a_transposed_at(unsigned As, const float4 (&regs)[A_REGS(TM_, TK_, NT)])
{
#pragma unroll
    for (int p = 0; p < A_REGS(TM_, TK_, NT); ++p) {
        const int chunk = threadIdx.x + p * NT;
        if (chunk >= TM_ * TK_ / 4) break;
        const int r = chunk / (TK_ / 4), c = (chunk % (TK_ / 4)) * 4;
        const unsigned at = As + 4 * (c * STRIDE + r);
        asm volatile("st.shared.f32 [%0], %1;\n" :: "r"(at), "f"(regs[p].x));
        asm volatile("st.shared.f32 [%0], %1;\n" :: "r"(at + 4 * STRIDE), "f"(regs[p].y));
        asm volatile("st.shared.f32 [%0], %1;\n" :: "r"(at + 8 * STRIDE), "f"(regs[p].z));
        asm volatile("st.shared.f32 [%0], %1;\n" :: "r"(at + 12 * STRIDE), "f"(regs[p].w));
    }
}

// One WBK-deep slice for one thread: per k, WMITER x WTM values of A and WNITER x WTN of B
// from shared memory as float4, then all their products. With FRAGMENTS 2 the values for
// k + 1 are loaded before the products of k (register double buffering), so the shared-memory
// latency overlaps the FMAs instead of stalling them. The products run along a row of the
// micro-tile and back along the next (a serpentine), so consecutive FMAs share an operand.
__device__ __forceinline__ void load_fragments(float* a, float* b, unsigned As, unsigned Bs, int k)
{
#pragma unroll
    for (int wm = 0; wm < WMITER; ++wm)
#pragma unroll
        for (int g = 0; g < WTM / 4; ++g) {
            // Row groups of 4 are WSUBM / (WTM / 4) apart: lane rows are 4 apart, so the
            // row positions of a warp read consecutive float4s.
            const float4 v = load_shared4(As + 4 * (k * WAS_STRIDE + wm * WSUBM + g * (WSUBM / (WTM / 4))));
            a[wm * WTM + 4 * g] = v.x; a[wm * WTM + 4 * g + 1] = v.y;
            a[wm * WTM + 4 * g + 2] = v.z; a[wm * WTM + 4 * g + 3] = v.w;
        }
#pragma unroll
    for (int wn = 0; wn < WNITER; ++wn)
#pragma unroll
        for (int g = 0; g < WTN / 4; ++g) {
            const float4 v = load_shared4(Bs + 4 * (k * WBN + wn * WSUBN + g * (WSUBN / (WTN / 4))));
            b[wn * WTN + 4 * g] = v.x; b[wn * WTN + 4 * g + 1] = v.y;
            b[wn * WTN + 4 * g + 2] = v.z; b[wn * WTN + 4 * g + 3] = v.w;
        }
}

__device__ __forceinline__ void warp_tile_slice(float (&acc)[WMITER * WTM][WNITER * WTN],
                                                const float* As, const float* Bs,
                                                int a_base, int b_base)
{
    float a[FRAGMENTS][WMITER * WTM], b[FRAGMENTS][WNITER * WTN];
    // This thread's first A and B words of the tiles, as shared-window addresses.
    const unsigned as = shared_address(As + a_base), bs = shared_address(Bs + b_base);
    if (FRAGMENTS == 2) load_fragments(a[0], b[0], as, bs, 0);
#pragma unroll
    for (int k = 0; k < WBK; ++k) {
        const int cur = FRAGMENTS == 2 ? k % 2 : 0;
        if (FRAGMENTS == 1) load_fragments(a[0], b[0], as, bs, k);
        else if (k + 1 < WBK) load_fragments(a[(k + 1) % 2], b[(k + 1) % 2], as, bs, k + 1);
#pragma unroll
        for (int i = 0; i < WMITER * WTM; ++i)
#pragma unroll
            for (int jj = 0; jj < WNITER * WTN; ++jj) {
                const int j = (i % 2) ? WNITER * WTN - 1 - jj : jj;
                acc[i][j] += a[cur][i] * b[cur][j];
            }
    }
}

// MIN_BLOCKS 2 asks ptxas for at most half the registers, so two blocks share an SM.
#if GPUBENCH_WANTS_warp_tiled
extern "C" __global__ void __launch_bounds__(WT_THREADS, MIN_BLOCKS)
warp_tiled(float* __restrict__ C, const float* __restrict__ A, const float* __restrict__ B, int M, int N, int K)
{
#if WT_RING_DYNAMIC
    extern __shared__ __align__(16) float warp_tiled_ring[];  // WT_RING_BYTES, from the launch
    float (*As)[WBK * WAS_STRIDE] = reinterpret_cast<float (*)[WBK * WAS_STRIDE]>(warp_tiled_ring);
    float (*Bs)[WBK * WBN] = reinterpret_cast<float (*)[WBK * WBN]>(warp_tiled_ring + STAGES * WBK * WAS_STRIDE);
#else
    __shared__ __align__(16) float As[STAGES][WBK * WAS_STRIDE];
    __shared__ __align__(16) float Bs[STAGES][WBK * WBN];
#endif
    int tile_row, tile_col;
    grouped_tile(tile_row, tile_col);
    const int row0 = tile_row * WBM, col0 = tile_col * WBN;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int warp_row = warp / (WBN / WN), warp_col = warp % (WBN / WN);
    const int lane_row = lane / (WSUBN / WTN), lane_col = lane % (WSUBN / WTN);
    // Where this thread's first 4 rows of A and 4 columns of B start inside the block tile.
    const int a_base = warp_row * WM + lane_row * 4, b_base = warp_col * WN + lane_col * 4;
    const bool a_aligned = (K % 4) == 0, b_aligned = (N % 4) == 0;
    // A block whose tile lies wholly inside C, with 16-byte aligned rows, copies every tile
    // but a partial last one without bounds checks: fewer instructions per FMA.
    const bool inside = row0 + WBM <= M && col0 + WBN <= N && a_aligned && b_aligned;
    const int tiles = (K + WBK - 1) / WBK;
    float acc[WMITER * WTM][WNITER * WTN] = {};
#if !A_ASYNC
    float4 a_regs[WA_PER_THREAD];
    InsideSources sources;
    if (inside) inside_sources(sources, A, B, Bs[0], N, K, row0, col0);
#endif
    // Tile `tile` into ring position `slot` (A: as far as registers, unless A_ASYNC).
    auto fetch = [&](int tile, int slot) {
        const int k0 = tile * WBK;
        if (inside && k0 + WBK <= K) {
#if A_ASYNC
            copy_a_tile<false>(As[slot], A, M, K, row0, k0);
            copy_b_tile<false>(Bs[slot], B, N, K, k0, col0, true);
#else
            load_a_inside(a_regs, sources, true);
            copy_b_inside(slot, sources, true);
#endif
        } else {
#if A_ASYNC
            copy_a_tile<true>(As[slot], A, M, K, row0, k0);
#else
            load_a<WBM, WBK, WT_THREADS>(a_regs, A, M, K, row0, k0, a_aligned);
#endif
            copy_b_tile<true>(Bs[slot], B, N, K, k0, col0, b_aligned);
        }
    };

    // The two ways of copying a tile: `whole` (every tile whole, the copies unchecked; see
    // below) or the general fetch. `whole` is a constant at each call of `pipeline`, so each
    // inlined copy of the ring keeps only its own way. (A flag, not a generic lambda taking the
    // way as a functor: NVRTC compiles a generic lambda as host code.)
    auto fetch_tile = [&](bool whole, int tile, int slot) {
#if !A_ASYNC
        if (whole) {
            if (tile < tiles) load_a_inside(a_regs, sources, tile + 1 < tiles);
            copy_b_inside(slot, sources, tile + 1 < tiles);
            return;
        }
#endif
        if (tile < tiles) fetch(tile, slot);
    };
    // The ring: the first STAGES - 1 tiles on their way, then per tile: wait for the oldest,
    // one barrier, the copies of tile t + STAGES - 1, the products of tile t. One commit
    // group per tile, empty past the last, so "wait for the oldest" counts the same in every
    // iteration.
    auto pipeline = [&](bool whole) {
#pragma unroll
        for (int s = 0; s < STAGES - 1; ++s) {
            fetch_tile(whole, s, s);
#if !A_ASYNC
            if (s < tiles) store_a_transposed_at<WBM, WBK, WT_THREADS, WAS_STRIDE>(shared_address(As[s]), a_regs);
#endif
            commit_copies();
        }
        int compute = 0, refill = STAGES - 1;  // ring positions of tile t and tile t + STAGES - 1
        for (int t = 0; t < tiles; ++t) {
            wait_copy_groups<STAGES - 2>();  // the oldest tile has landed
            // Tile t is in every thread's view, and every thread is done with tile t - 1,
            // whose buffer the copies below overwrite.
            __syncthreads();
            const int ahead = t + STAGES - 1;
            fetch_tile(whole, ahead, refill);
            commit_copies();
            warp_tile_slice(acc, As[compute], Bs[compute], a_base, b_base);
#if !A_ASYNC
            // Tile `ahead` is computed after the next barrier at the earliest.
            if (ahead < tiles) store_a_transposed_at<WBM, WBK, WT_THREADS, WAS_STRIDE>(shared_address(As[refill]), a_regs);
#endif
            compute = compute + 1 == STAGES ? 0 : compute + 1;
            refill = refill + 1 == STAGES ? 0 : refill + 1;
        }
        wait_async_copies();  // copies past the last tile (below), before the block exits
    };
#if !A_ASYNC
    if (inside && K % WBK == 0) {
        // Every tile whole, no checks: no branch around B's copies (past the last tile they
        // re-read it into a ring position no tile uses), so ptxas can interleave their address
        // arithmetic with the products instead of running it alone after each barrier. A's
        // loads keep theirs: without it ptxas sinks them to just before the stores that use
        // them, exposing their whole latency.
        pipeline(true);
    } else
#endif
    {
        pipeline(false);
    }
    // Epilogue: each 4 x 4 piece as four 16-byte stores where the row is aligned and inside.
#pragma unroll
    for (int wm = 0; wm < WMITER; ++wm)
#pragma unroll
        for (int i = 0; i < WTM; ++i) {
            const int row = row0 + a_base + wm * WSUBM + (i / 4) * (WSUBM / (WTM / 4)) + (i % 4);
            if (row >= M) continue;
#pragma unroll
            for (int wn = 0; wn < WNITER; ++wn)
#pragma unroll
                for (int g = 0; g < WTN / 4; ++g) {
                    const int col = col0 + b_base + wn * WSUBN + g * (WSUBN / (WTN / 4));
                    const float* v = &acc[wm * WTM + i][wn * WTN + 4 * g];
                    float* out = C + (index_t)row * N + col;
                    if (b_aligned && col + 3 < N) {
                        *reinterpret_cast<float4*>(out) = make_float4(v[0], v[1], v[2], v[3]);
                    } else {
#pragma unroll
                        for (int e = 0; e < 4; ++e)
                            if (col + e < N) out[e] = v[e];
                    }
                }
        }
}
#endif
#endif

// ---- multistage: 128 accumulators per thread, both operands by cp.async --------------------
// The structure of CUTLASS's SIMT "multistage" SGEMM (cuBLAS runs one such kernel at 16384^3
// on an H100), in a fixed shape: 128 x 256 x 8 block tiles, 8 warps of 64 x 64, each lane
// 16 rows x 8 columns of C, i.e. 128 accumulators where warp_tiled's tuned shape has 64.
// - Per k a lane loads 16 values of A and 8 of B (six 16-byte shared loads) for 128 FMAs:
//   half warp_tiled's shared loads per FMA, so the shared-memory pipe is no longer near full.
// - Both operands travel by cp.async into a ring of MS_STAGES tiles, MS_STAGES - 1 of them in
//   flight: A 4 bytes a copy, transposed on the way (As[k][m]), so no registers hold a tile
//   between its load and its store and the ring, not one register buffer, covers the latency.
// - The fragments of k + 1 load during the FMAs of k, across the tile boundary too: the barrier
//   sits before the last k, so the next tile's first fragments load during its FMAs.
// - The results leave as scalar stores. With float4 stores ptxas keeps each row's four
//   accumulators in an aligned quad of registers, in step with the aligned quad each B
//   fragment lands in, so nearly every FFMA read its accumulator and its B value from
//   registers of the same parity, a register-bank conflict (Nsight Compute: 11% of cycles in
//   dispatch stalls); scalar stores leave the allocation free (8.9%, and about 3% faster).
#ifndef MS_STAGES
#define MS_STAGES 3
#endif
#define MS_BM 128
#define MS_BN 256
#define MS_BK 8
#define MS_WM 64
#define MS_WN 64
#define MS_THREADS ((MS_BM / MS_WM) * (MS_BN / MS_WN) * 32)
#define MS_LANE_ROWS 4                      // a warp's lanes: 4 rows x 8 columns
#define MS_LANE_COLS (32 / MS_LANE_ROWS)
#define MS_TM (MS_WM / MS_LANE_ROWS)        // 16 rows of C per lane, in groups of 4
#define MS_TN (MS_WN / MS_LANE_COLS)        // 8 columns, in groups of 4
#define MS_AS_STRIDE (MS_BM + 4)            // padding: the transposing copies hit 32 banks
#define MS_A_STAGE (MS_BK * MS_AS_STRIDE)   // floats per ring position
#define MS_B_STAGE (MS_BK * MS_BN)
#define MS_RING_BYTES (MS_STAGES * (MS_A_STAGE + MS_B_STAGE) * 4)
#define MS_A_COPIES (MS_BM * MS_BK / MS_THREADS)       // 4-byte copies of A per thread
#define MS_B_COPIES (MS_BN * MS_BK / 4 / MS_THREADS)   // 16-byte copies of B per thread

// One block's tile of C, by one of the two kernels below: CHECKED false for blocks wholly inside
// C with 16-byte aligned rows of B and whole K tiles (copies without bounds checks, from source
// pointers set up once), true for the others. Two kernels, not one with both ways: in one
// kernel ptxas allocates the registers for both loops, and the unchecked one ran 1.5-2% slower.
template <bool CHECKED>
__device__ __forceinline__ void multistage_block(float* __restrict__ C, const float* __restrict__ A,
                                                 const float* __restrict__ B, int M, int N, int K)
{
#if MS_RING_BYTES > 49152
    extern __shared__ __align__(16) float multistage_ring[];  // MS_RING_BYTES, from the launch
#else
    __shared__ __align__(16) float multistage_ring[MS_STAGES * (MS_A_STAGE + MS_B_STAGE)];
#endif
    const unsigned as0 = shared_address(multistage_ring);
    const unsigned bs0 = as0 + MS_STAGES * MS_A_STAGE * 4;

    int tile_row, tile_col;
    grouped_tile(tile_row, tile_col);
    const int row0 = tile_row * MS_BM, col0 = tile_col * MS_BN;

    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int warp_row = warp / (MS_BN / MS_WN), warp_col = warp % (MS_BN / MS_WN);
    const int lane_row = lane / MS_LANE_COLS, lane_col = lane % MS_LANE_COLS;
    // This lane's first A and B words in a ring position (bytes, k = 0); its groups of 4 rows
    // are 16 apart and its groups of 4 columns 32 apart, so a warp's loads read neighbouring
    // 16-byte words.
    const unsigned a_frag = 4 * (warp_row * MS_WM + lane_row * 4);
    const unsigned b_frag = 4 * (warp_col * MS_WN + lane_col * 4);

    // Copy positions. A: element tid + q * MS_THREADS of the tile is row (tid / 8 + 32 q),
    // k tid % 8, so a warp reads 4 rows x 32 bytes. B: 16-byte piece tid + v * MS_THREADS is
    // row (tid / 64 + 4 v), columns (tid % 64) * 4 .. + 3.
    const int a_row = tid / MS_BK, a_k = tid % MS_BK;
    const unsigned a_dst = 4 * (a_k * MS_AS_STRIDE + a_row);
    const int b_row = tid / (MS_BN / 4), b_col = (tid % (MS_BN / 4)) * 4;
    const unsigned b_dst = 4 * (b_row * MS_BN + b_col);
    constexpr int a_rows_apart = MS_THREADS / MS_BK, b_rows_apart = MS_THREADS / (MS_BN / 4);
    const bool b_aligned = N % 4 == 0;
    const bool whole = row0 + MS_BM <= M && col0 + MS_BN <= N && b_aligned && K % MS_BK == 0;
    if (whole == CHECKED) return;  // the other kernel's block
    const float* a_src = A + (index_t)min(row0 + a_row, M - 1) * K + a_k;
    const float* b_src = B + (index_t)b_row * N + min(col0 + b_col, N - 1);
    const index_t a_step = (index_t)a_rows_apart * K, b_step = (index_t)b_rows_apart * N;
    const int tiles = (K + MS_BK - 1) / MS_BK;

    // Tile `tile` (the last one again past the end: a ring position no tile uses) into ring
    // position `slot`.
    constexpr bool checked = CHECKED;
    auto copy_a = [&](int tile, int slot) {
        tile = min(tile, tiles - 1);
        const unsigned to = as0 + slot * (MS_A_STAGE * 4) + a_dst;
#pragma unroll
        for (int q = 0; q < MS_A_COPIES; ++q) {
            const unsigned at = to + q * a_rows_apart * 4;
            if (!checked) {
                copy_async_to<4>(at, a_src + (index_t)tile * MS_BK + q * a_step, 4);
            } else {
                const int row = row0 + a_row + q * a_rows_apart, k = tile * MS_BK + a_k;
                const bool inside = row < M && k < K;
                copy_async_to<4>(at, inside ? A + (index_t)row * K + k : A, inside ? 4 : 0);
            }
        }
    };
    auto copy_b = [&](int tile, int slot) {
        tile = min(tile, tiles - 1);
        const unsigned to = bs0 + slot * (MS_B_STAGE * 4);
        if (!checked) {
#pragma unroll
            for (int v = 0; v < MS_B_COPIES; ++v)
                copy_async_to<16>(to + b_dst + v * b_rows_apart * MS_BN * 4,
                                  b_src + (index_t)tile * MS_BK * N + v * b_step, 16);
        } else if (b_aligned) {
#pragma unroll
            for (int v = 0; v < MS_B_COPIES; ++v) {
                const int row = tile * MS_BK + b_row + v * b_rows_apart, col = col0 + b_col;
                const int valid = row < K ? max(0, min(4, N - col)) : 0;
                copy_async_to<16>(to + b_dst + v * b_rows_apart * MS_BN * 4,
                                  valid ? B + (index_t)row * N + col : B, valid * 4);
            }
        } else {
            // Rows of B not 16-byte aligned: one element per copy, row e / MS_BN, column e % MS_BN.
#pragma unroll
            for (int e = tid; e < MS_BK * MS_BN; e += MS_THREADS) {
                const int row = tile * MS_BK + e / MS_BN, col = col0 + e % MS_BN;
                const bool inside = row < K && col < N;
                copy_async_to<4>(to + 4 * e, inside ? B + (index_t)row * N + col : B, inside ? 4 : 0);
            }
        }
    };

    float acc[MS_TM][MS_TN];
#pragma unroll
    for (int i = 0; i < MS_TM; ++i)
#pragma unroll
        for (int j = 0; j < MS_TN; ++j) acc[i][j] = 0.0f;
    float a[2][MS_TM], b[2][MS_TN];
    // The operands of step k of the tile in ring position `slot`, into register buffer `buf`.
    auto load_fragments = [&](int buf, int slot, int k) {
        const unsigned at = as0 + slot * (MS_A_STAGE * 4) + k * (MS_AS_STRIDE * 4) + a_frag;
        const unsigned bt = bs0 + slot * (MS_B_STAGE * 4) + k * (MS_BN * 4) + b_frag;
#pragma unroll
        for (int g = 0; g < MS_TM / 4; ++g) {
            const float4 v = load_shared4(at + g * MS_LANE_ROWS * 16);
            a[buf][4 * g] = v.x; a[buf][4 * g + 1] = v.y; a[buf][4 * g + 2] = v.z; a[buf][4 * g + 3] = v.w;
        }
#pragma unroll
        for (int g = 0; g < MS_TN / 4; ++g) {
            const float4 v = load_shared4(bt + g * MS_LANE_COLS * 16);
            b[buf][4 * g] = v.x; b[buf][4 * g + 1] = v.y; b[buf][4 * g + 2] = v.z; b[buf][4 * g + 3] = v.w;
        }
    };

    // The ring: tiles 0 .. MS_STAGES - 2 on their way; then per tile, per k: the fragments of
    // k + 1 (of the next tile's k = 0 at the last k, after the barrier that publishes it), the
    // copies of tile t + MS_STAGES - 1 (A at k = 0, B at k = 1, one commit group per tile) into
    // the ring position the barrier of tile t - 1 freed, then the FMAs of k.
#pragma unroll
    for (int s = 0; s < MS_STAGES - 1; ++s) {
        copy_a(s, s);
        copy_b(s, s);
        commit_copies();
    }
    wait_copy_groups<MS_STAGES - 2>();
    __syncthreads();
    load_fragments(0, 0, 0);
    int slot = 0, refill = MS_STAGES - 1;
    for (int t = 0; t < tiles; ++t) {
#pragma unroll
        for (int k = 0; k < MS_BK; ++k) {
            if (k == MS_BK - 1) {
                // Tile t + 1 is in every thread's view, and every thread has loaded its last
                // fragments of tile t, whose ring position the next copies overwrite.
                wait_copy_groups<MS_STAGES - 2>();
                __syncthreads();
                slot = slot + 1 == MS_STAGES ? 0 : slot + 1;
                refill = refill + 1 == MS_STAGES ? 0 : refill + 1;
            }
            load_fragments((k + 1) % 2, slot, (k + 1) % MS_BK);
            if (k == 0) copy_a(t + MS_STAGES - 1, refill);
            if (k == 1) {
                copy_b(t + MS_STAGES - 1, refill);
                commit_copies();
            }
#pragma unroll
            for (int i = 0; i < MS_TM; ++i)
#pragma unroll
                for (int j = 0; j < MS_TN; ++j) acc[i][j] += a[k % 2][i] * b[k % 2][j];
        }
    }
    wait_async_copies();  // the copies past the last tile, before the block exits

#pragma unroll
    for (int i = 0; i < MS_TM; ++i) {
        const int row = row0 + warp_row * MS_WM + (i / 4) * (MS_LANE_ROWS * 4) + lane_row * 4 + i % 4;
        if (row >= M) continue;
#pragma unroll
        for (int j = 0; j < MS_TN; ++j) {
            const int col = col0 + warp_col * MS_WN + (j / 4) * (MS_LANE_COLS * 4) + lane_col * 4 + j % 4;
            if (col < N) C[(index_t)row * N + col] = acc[i][j];
        }
    }
}

#if GPUBENCH_WANTS_multistage
extern "C" __global__ void __launch_bounds__(MS_THREADS, 1)
multistage(float* __restrict__ C, const float* __restrict__ A, const float* __restrict__ B, int M, int N, int K)
{
    multistage_block<false>(C, A, B, M, N, K);
}
#endif

// The blocks `multistage` leaves: on C's edges, or every block where B's rows are not 16-byte
// aligned or K is not a multiple of MS_BK. The host launches it only where there are some.
#if GPUBENCH_WANTS_multistage_edges
extern "C" __global__ void __launch_bounds__(MS_THREADS, 1)
multistage_edges(float* __restrict__ C, const float* __restrict__ A, const float* __restrict__ B, int M, int N, int K)
{
    multistage_block<true>(C, A, B, M, N, K);
}
#endif
