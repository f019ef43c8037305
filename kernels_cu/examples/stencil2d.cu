// Example kernels for configs/examples/stencil2d.yaml: one Jacobi step of the 5-point
// stencil out = 0.2 * (centre + north + south + west + east) on a periodic (wrapped) grid.
// A 2-D grid of 2-D blocks; TILE_X and TILE_Y (-D, from the YAML's `defines`) are the block.

#ifndef TILE_X
#define TILE_X 32
#endif
#ifndef TILE_Y
#define TILE_Y 8
#endif

// stencil_global: every neighbour read from global memory (the L1/L2 caches catch the reuse).
extern "C" __global__ void __launch_bounds__(TILE_X * TILE_Y)
stencil_global(float* __restrict__ out, const float* __restrict__ in, int width, int height)
{
    const int x = blockIdx.x * TILE_X + threadIdx.x;
    const int y = blockIdx.y * TILE_Y + threadIdx.y;
    if (x >= width || y >= height) return;
    const int west = x == 0 ? width - 1 : x - 1, east = x == width - 1 ? 0 : x + 1;
    const int north = y == 0 ? height - 1 : y - 1, south = y == height - 1 ? 0 : y + 1;
    out[(size_t)y * width + x] = 0.2f * (in[(size_t)y * width + x] + in[(size_t)north * width + x]
                                         + in[(size_t)south * width + x] + in[(size_t)y * width + west]
                                         + in[(size_t)y * width + east]);
}

// stencil_shared: the block's tile and a one-cell halo staged in dynamic shared memory
// ((TILE_X + 2) * (TILE_Y + 2) floats, sized by the YAML's `shared` expression), so each
// input element is read from global memory about once.
extern "C" __global__ void __launch_bounds__(TILE_X * TILE_Y)
stencil_shared(float* __restrict__ out, const float* __restrict__ in, int width, int height)
{
    extern __shared__ float tile[];  // [TILE_Y + 2][TILE_X + 2]
    const int pitch = TILE_X + 2;
    const int x0 = blockIdx.x * TILE_X - 1, y0 = blockIdx.y * TILE_Y - 1;
    for (int j = threadIdx.y; j < TILE_Y + 2; j += TILE_Y) {
        for (int i = threadIdx.x; i < TILE_X + 2; i += TILE_X) {
            // The wrap without a division: the cells a valid thread reads lie in
            // [-1, width]; cells further right belong to threads past the edge (they return
            // before using them), so any valid address will do for those.
            int gx = x0 + i, gy = y0 + j;
            gx = gx < 0 ? width - 1 : (gx == width ? 0 : min(gx, width - 1));
            gy = gy < 0 ? height - 1 : (gy == height ? 0 : min(gy, height - 1));
            tile[j * pitch + i] = in[(size_t)gy * width + gx];
        }
    }
    __syncthreads();
    const int x = blockIdx.x * TILE_X + threadIdx.x;
    const int y = blockIdx.y * TILE_Y + threadIdx.y;
    if (x >= width || y >= height) return;
    const int c = (threadIdx.y + 1) * pitch + threadIdx.x + 1;
    out[(size_t)y * width + x] =
        0.2f * (tile[c] + tile[c - pitch] + tile[c + pitch] + tile[c - 1] + tile[c + 1]);
}
