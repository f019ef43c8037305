// Iteration to convergence on the GPU: every value counts down to zero, one step per launch,
// and a launch that changed anything raises the flag the harness reads back (Repeat).

// count_down: one relaxation step; `changed` tells the host whether to go on.
extern "C" __global__ void count_down(int* __restrict__ values, int* __restrict__ changed,
                                      unsigned int n)
{
    const unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && values[i] > 0) {
        values[i] -= 1;
        *changed = 1;  // a benign race: every writer writes the same value
    }
}

// never_done: raises the flag every time, so the Repeat hits its max_iterations.
extern "C" __global__ void never_done(int* __restrict__ values, int* __restrict__ changed,
                                      unsigned int n)
{
    if (blockIdx.x == 0 && threadIdx.x == 0) *changed = 1;
}
