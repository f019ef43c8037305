// Matrix transpose: the classic study of memory coalescing and shared-memory bank conflicts.
//
// in is ROWS x COLS, row-major; out is COLS x ROWS, row-major (out[c][r] = in[r][c]).
// Each block owns one TILE x TILE tile; its TILE x BLOCK_ROWS threads walk the tile in
// TILE / BLOCK_ROWS steps, so every thread moves several elements.
// Compile-time parameters (-D): DTYPE (element type), TILE, BLOCK_ROWS.
// Every kernel bounds-checks both dimensions, so any ROWS x COLS is correct.

#ifndef DTYPE
#define DTYPE float
#endif
#ifndef TILE
#define TILE 32
#endif
#ifndef BLOCK_ROWS
#define BLOCK_ROWS 8
#endif

#if TILE % BLOCK_ROWS != 0
#error "BLOCK_ROWS must divide TILE"
#endif

typedef unsigned long long index_t;  // 64-bit offsets: rows * cols may pass 2^31

// copy: the same-shape copy with the same thread layout as the transposes.
// Reads and writes are both coalesced, so this is the ceiling a transpose can aim for.
extern "C" __global__ void copy(DTYPE* __restrict__ out, const DTYPE* __restrict__ in, int rows, int cols)
{
    const int x = blockIdx.x * TILE + threadIdx.x;
    const int y = blockIdx.y * TILE + threadIdx.y;
    if (x >= cols) return;
#pragma unroll
    for (int j = 0; j < TILE; j += BLOCK_ROWS) {
        if (y + j < rows) out[(index_t)(y + j) * cols + x] = in[(index_t)(y + j) * cols + x];
    }
}

// naive: reads are coalesced (a warp reads one row segment), writes are strided by ROWS
// elements, so each warp's store touches 32 different memory segments: the slow baseline.
extern "C" __global__ void naive(DTYPE* __restrict__ out, const DTYPE* __restrict__ in, int rows, int cols)
{
    const int x = blockIdx.x * TILE + threadIdx.x;
    const int y = blockIdx.y * TILE + threadIdx.y;
    if (x >= cols) return;
#pragma unroll
    for (int j = 0; j < TILE; j += BLOCK_ROWS) {
        if (y + j < rows) out[(index_t)x * rows + (y + j)] = in[(index_t)(y + j) * cols + x];
    }
}

// Shared by the tiled variants: load a tile with coalesced reads, transpose it through
// shared memory, store it with coalesced writes. Only the tile's shape and the block order
// differ between them. The load ends with the barrier the store needs.
#define TILE_LOAD(tile, bx, by)                                                             \
    {                                                                                       \
        const int x = (bx) * TILE + threadIdx.x;                                            \
        const int y = (by) * TILE + threadIdx.y;                                            \
        _Pragma("unroll") for (int j = 0; j < TILE; j += BLOCK_ROWS) {                      \
            if (x < cols && y + j < rows) tile[threadIdx.y + j][threadIdx.x] =              \
                in[(index_t)(y + j) * cols + x];                                            \
        }                                                                                   \
    }                                                                                       \
    __syncthreads();

#define TILE_STORE(tile, bx, by)                                                            \
    {                                                                                       \
        const int x = (by) * TILE + threadIdx.x; /* column of out = row of in */            \
        const int y = (bx) * TILE + threadIdx.y; /* row of out = column of in */            \
        _Pragma("unroll") for (int j = 0; j < TILE; j += BLOCK_ROWS) {                      \
            if (x < rows && y + j < cols) out[(index_t)(y + j) * rows + x] =                \
                tile[threadIdx.x][threadIdx.y + j];                                         \
        }                                                                                   \
    }

#define TILED_TRANSPOSE_BODY(tile, bx, by) TILE_LOAD(tile, bx, by) TILE_STORE(tile, bx, by)

// coalesced: stage the tile in shared memory so both global reads and global writes are
// coalesced. Reading a column of tile[TILE][TILE] hits one bank 32 times: bank conflicts.
extern "C" __global__ void coalesced(DTYPE* __restrict__ out, const DTYPE* __restrict__ in, int rows, int cols)
{
    __shared__ DTYPE tile[TILE][TILE];
    TILED_TRANSPOSE_BODY(tile, blockIdx.x, blockIdx.y)
}

// padded: one extra column (tile[TILE][TILE+1]) shifts each row by one bank, so a column
// of the tile falls in 32 different banks: the conflicts are gone.
extern "C" __global__ void padded(DTYPE* __restrict__ out, const DTYPE* __restrict__ in, int rows, int cols)
{
    __shared__ DTYPE tile[TILE][TILE + 1];
    TILED_TRANSPOSE_BODY(tile, blockIdx.x, blockIdx.y)
}

// diagonal: padded, with blocks renumbered along diagonals so that blocks running at the
// same time spread their writes over all memory partitions ("partition camping" on
// GT200-era GPUs). Hashed address mapping on modern GPUs makes this mostly irrelevant.
extern "C" __global__ void diagonal(DTYPE* __restrict__ out, const DTYPE* __restrict__ in, int rows, int cols)
{
    __shared__ DTYPE tile[TILE][TILE + 1];
    // A bijection of block ids that also works for non-square grids.
    const unsigned block_id = blockIdx.x + gridDim.x * blockIdx.y;
    const unsigned by = block_id % gridDim.y;
    const unsigned bx = (block_id / gridDim.y + by) % gridDim.x;
    TILED_TRANSPOSE_BODY(tile, bx, by)
}

// bulk_store: padded, with each output-row segment of the tile (TILE elements) written by
// one bulk copy (cp.async.bulk: the Hopper TMA engine moves shared memory to global memory)
// instead of TILE / BLOCK_ROWS warps' store instructions, and blocks numbered along output
// rows. The tile is read out of its padded layout into registers and laid back row by row,
// so each segment is contiguous and 16-byte aligned in shared memory, as a bulk copy needs.
// Tiles on the matrix edge, output rows that are not 16-byte aligned and GPUs before sm_90
// store as padded does. What it shows: on an H100 it is no faster than padded, so the last
// few percent to the copy are in where the tiles go, not in how they are stored.
extern "C" __global__ void bulk_store(DTYPE* __restrict__ out, const DTYPE* __restrict__ in, int rows, int cols)
{
    __shared__ __align__(16) DTYPE tile[TILE][TILE + 1];
    // Consecutive blocks walk down the input (along a row of the output): a bijection of
    // block ids, like diagonal's.
    const unsigned block_id = blockIdx.x + gridDim.x * blockIdx.y;
    const unsigned by = block_id % gridDim.y;
    const unsigned bx = block_id / gridDim.y;
    TILE_LOAD(tile, bx, by)
#if __CUDA_ARCH__ >= 900
    const bool whole_tile = (index_t)(bx + 1) * TILE <= (index_t)cols && (index_t)(by + 1) * TILE <= (index_t)rows;
    const bool aligned = ((index_t)rows * sizeof(DTYPE)) % 16 == 0 && reinterpret_cast<index_t>(out) % 16 == 0;
    if (whole_tile && aligned) {  // the same for every thread of the block
        DTYPE column[TILE / BLOCK_ROWS];  // this thread's elements of the output tile
#pragma unroll
        for (int j = 0; j < TILE; j += BLOCK_ROWS) column[j / BLOCK_ROWS] = tile[threadIdx.x][threadIdx.y + j];
        __syncthreads();
        DTYPE* segments = &tile[0][0];  // output row r of the tile at segments[r * TILE]
#pragma unroll
        for (int j = 0; j < TILE; j += BLOCK_ROWS) segments[(threadIdx.y + j) * TILE + threadIdx.x] = column[j / BLOCK_ROWS];
        // Make the ordinary shared-memory stores visible to the bulk copy's (async) reads.
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
        __syncthreads();
        const int r = threadIdx.y * TILE + threadIdx.x;
        if (r < TILE) {
            DTYPE* dst = out + (index_t)(bx * TILE + r) * rows + by * TILE;
            const unsigned src = (unsigned)__cvta_generic_to_shared(segments + r * TILE);
            asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;"
                         :: "l"(dst), "r"(src), "r"((unsigned)(TILE * sizeof(DTYPE))) : "memory");
            asm volatile("cp.async.bulk.commit_group;" ::: "memory");
            // Shared memory must outlive the copy's reads of it; the writes finish by the
            // kernel's end.
            asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
        }
        return;
    }
#endif
    TILE_STORE(tile, bx, by)
}

// vectorized: padded, but each thread moves 16 bytes per global access (4 floats or
// 2 doubles), a quarter of the load/store instructions and full 16-byte transactions per
// thread. Threads: (TILE / VEC) x BLOCK_ROWS. Falls back to scalar accesses where a row
// is not 16-byte aligned or the tile hangs over the matrix edge.
#define VEC (16 / sizeof(DTYPE))
struct __align__(16) vec_t { DTYPE v[16 / sizeof(DTYPE)]; };

extern "C" __global__ void vectorized(DTYPE* __restrict__ out, const DTYPE* __restrict__ in, int rows, int cols)
{
    __shared__ DTYPE tile[TILE][TILE + 1];
    const int lane_col = threadIdx.x * VEC;  // first tile column this thread handles
    const bool in_rows_aligned = (cols % VEC) == 0;
    const bool out_rows_aligned = (rows % VEC) == 0;

    const int col0 = blockIdx.x * TILE + lane_col;
#pragma unroll
    for (int r = threadIdx.y; r < TILE; r += BLOCK_ROWS) {
        const int row = blockIdx.y * TILE + r;
        if (row >= rows) break;
        const index_t offset = (index_t)row * cols + col0;
        if (in_rows_aligned && col0 + (int)VEC <= cols) {
            const vec_t v = *reinterpret_cast<const vec_t*>(in + offset);
#pragma unroll
            for (int k = 0; k < (int)VEC; ++k) tile[r][lane_col + k] = v.v[k];
        } else {
            for (int k = 0; k < (int)VEC && col0 + k < cols; ++k) tile[r][lane_col + k] = in[offset + k];
        }
    }
    __syncthreads();

    const int out_col0 = blockIdx.y * TILE + lane_col;  // column of out = row of in
#pragma unroll
    for (int c = threadIdx.y; c < TILE; c += BLOCK_ROWS) {
        const int out_row = blockIdx.x * TILE + c;      // row of out = column of in
        if (out_row >= cols) break;
        const index_t offset = (index_t)out_row * rows + out_col0;
        vec_t v;
#pragma unroll
        for (int k = 0; k < (int)VEC; ++k) v.v[k] = tile[lane_col + k][c];
        if (out_rows_aligned && out_col0 + (int)VEC <= rows) {
            *reinterpret_cast<vec_t*>(out + offset) = v;
        } else {
            for (int k = 0; k < (int)VEC && out_col0 + k < rows; ++k) out[offset + k] = v.v[k];
        }
    }
}
