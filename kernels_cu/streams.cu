// The streams suite reuses the matmul suite's kernels: `tiled` multiplies each matrix of the
// batch (BLOCK x BLOCK shared-memory tiles). See matmul.cu.
#include "matmul.cu"
