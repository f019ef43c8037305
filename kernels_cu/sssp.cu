// Single-source shortest paths on road graphs: Bellman-Ford from an edge list to a
// work-efficient near-far worklist whose blocks take several hops per grid barrier.
// Distances are int32 and exact; INF marks a vertex the source does not reach. Weights are
// non-negative integers, so no path sum overflows as long as the longest distance plus the
// largest weight fits (the suite checks that).
// No includes: the source compiles under nvcc and under NVRTC (which has no C++ standard
// library headers and, without a CUDA toolkit, no cooperative_groups.h).
#define INF 0x7fffffff  // INT_MAX

// Every distance INF except the source's, which is 0; the solvers' counters zeroed.
extern "C" __global__ void init_distances(int* dist, unsigned n, const int* sources, int which,
                                          unsigned long long* stats) {
    const int source = sources[which];
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        dist[i] = (i == (unsigned)source) ? 0 : INF;
    if (blockIdx.x == 0 && threadIdx.x < 4) stats[threadIdx.x] = 0;
}

// ---------------------------------------------------------------------------------------
// edges: one thread per edge, every edge every iteration, plain stores. Two threads that
// improve the same vertex race and the larger value may win; the next iteration sees the
// edge still improvable and fixes it, so the answer is exact, it may only take longer.
// The edge order (by source, by destination, random) decides which loads coalesce and how
// far one sweep propagates: an edge whose source was improved earlier in the same sweep
// passes the news on at once.
extern "C" __global__ void edges(const int* __restrict__ src, const int* __restrict__ dst,
                                 const int* __restrict__ weight, unsigned m, int* dist,
                                 int* changed) {
    for (unsigned e = blockIdx.x * blockDim.x + threadIdx.x; e < m; e += gridDim.x * blockDim.x) {
        const int du = dist[src[e]];
        if (du == INF) continue;
        const int candidate = du + weight[e];
        const int v = dst[e];
        if (candidate < dist[v]) {
            dist[v] = candidate;
            *changed = 1;
        }
    }
}

// edges_atomic: the same sweep with atomicMin, so no improvement is lost to a race; the
// read before the atomic keeps the atomics to the edges that improve something.
extern "C" __global__ void edges_atomic(const int* __restrict__ src, const int* __restrict__ dst,
                                        const int* __restrict__ weight, unsigned m, int* dist,
                                        int* changed) {
    for (unsigned e = blockIdx.x * blockDim.x + threadIdx.x; e < m; e += gridDim.x * blockDim.x) {
        const int du = dist[src[e]];
        if (du == INF) continue;
        const int candidate = du + weight[e];
        const int v = dst[e];
        if (candidate < dist[v] && candidate < atomicMin(&dist[v], candidate)) *changed = 1;
    }
}

// pull: one thread per vertex takes the minimum over its incoming edges (CSR by
// destination): each distance has one writer, so no atomics and no lost updates.
extern "C" __global__ void pull(const long long* __restrict__ in_offsets,
                                const int* __restrict__ in_sources,
                                const int* __restrict__ in_weights, unsigned n, int* dist,
                                int* changed) {
    for (unsigned v = blockIdx.x * blockDim.x + threadIdx.x; v < n; v += gridDim.x * blockDim.x) {
        const int current = dist[v];
        int best = current;
        for (long long e = in_offsets[v]; e < in_offsets[v + 1]; ++e) {
            const int du = dist[in_sources[e]];
            if (du != INF && du + in_weights[e] < best) best = du + in_weights[e];
        }
        if (best < current) {
            dist[v] = best;
            *changed = 1;
        }
    }
}

// ---------------------------------------------------------------------------------------
// The worklist solvers run as one persistent launch: one 1024-thread block per SM, all
// resident at once, so blocks can wait for each other at a grid-wide barrier between
// steps. Deciding "done" on the device removes the host round trip per iteration that
// dominates the edge sweeps on a graph thousands of hops across.

// All blocks wait here until every block has arrived. Thread 0 of each block counts in; the
// last one resets the count and bumps the generation the others spin on. As in cooperative
// groups' grid.sync(): the block barrier orders the block's writes before thread 0's fence,
// which makes them visible to every block that passes the barrier after it.
__device__ __forceinline__ void grid_barrier(unsigned* arrived, volatile unsigned* generation) {
    __syncthreads();
    if (threadIdx.x == 0) {
        const unsigned seen = *generation;
        __threadfence();
        if (atomicAdd(arrived, 1u) == gridDim.x - 1) {
            atomicExch(arrived, 0u);
            __threadfence();
            atomicAdd((unsigned*)generation, 1u);
        } else {
            while (*generation == seen) __nanosleep(20);
        }
        __threadfence();
    }
    __syncthreads();
}

// Appends v to a worklist with one atomicAdd per group of converged threads instead of one
// per thread: thousands of pushes a step into one counter would otherwise queue at its L2
// slice (the warp-aggregated atomics of the CUDA programming guide).
// The group is the warp's active lanes: the lowest one adds for all, then broadcasts where
// the group's slots start; each lane's slot is its rank among the active lanes.
__device__ __forceinline__ void push(int* list, unsigned* count, int v) {
    const unsigned active = __activemask();
    unsigned lane;
    asm("mov.u32 %0, %%laneid;" : "=r"(lane));
    const int leader = __ffs(active) - 1;
    const unsigned rank = __popc(active & ((1u << lane) - 1));
    unsigned base = 0;
    if ((int)lane == leader) base = atomicAdd(count, __popc(active));
    list[__shfl_sync(active, base, leader) + rank] = v;
}

// Entries of each of near_far_local's two block-local lists (32 KiB of shared memory).
#define LOCAL_CAPACITY 4096

// The worklist solvers read a vertex's first SLOTS out-edges from fixed-width slots,
// (neighbour, weight) pairs at slots[2u], slots[2u + 1] (neighbour -1: empty), found without
// reading an offset first; most road junctions have at most four roads. Further edges are in
// a CSR of their own (extra_offsets), relaxed EDGE_BATCH at a time.
#define SLOTS 4
#define EDGE_BATCH 4

// Clears the dedup stamps and lists the source as the first step's only vertex.
extern "C" __global__ void init_worklist(int* near_stamp, int* far_stamp, unsigned n,
                                         const int* sources, int which, int* near0,
                                         unsigned* counts, unsigned* barrier) {
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        near_stamp[i] = -1;
        far_stamp[i] = -1;
    }
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        const int source = sources[which];
        near0[0] = source;  // its stamp stays -1: nothing improves a distance of 0
        counts[0] = 1;  // near counts, one per step modulo 3
        counts[1] = 0;
        counts[2] = 0;
        counts[3] = 0;  // far counts, one per phase modulo 3
        counts[4] = 0;
        counts[5] = 0;
        barrier[0] = 0;
    }
}

// near_far (Davidson et al., 2014): vertices improved below the threshold go to the near
// list, the others to a far pile; when the near list runs dry the threshold rises by delta
// and the far pile is split. Processing vertices roughly in distance order means a vertex
// is rarely improved twice, so far fewer edges are relaxed than by a plain worklist.
// frontier is the same code with delta = INF: every improved vertex is near, which is the
// deduplicated Bellman-Ford worklist of the GPU graph frameworks.
//
// Lists are ping-pong pairs; their counts rotate over three slots so the slot a step reads
// is never written in that step and the slot it zeroes is neither read nor written in it:
// every block takes the same decisions from the same numbers.
extern "C" __global__ void __launch_bounds__(1024, 1)
worklist_sssp(const int4* __restrict__ slots, const long long* __restrict__ extra_offsets,
              const int* __restrict__ extra_neighbours, const int* __restrict__ extra_weights,
              int* dist, int* near0, int* near1, int* far0,
              int* far1, int* near_stamp, int* far_stamp, unsigned* counts, unsigned* barrier,
              int delta, int local_rounds, unsigned long long* stats) {
    // near_far_local's block-local worklists (ping-pong) and their counts.
    __shared__ int local_list[2][LOCAL_CAPACITY];
    __shared__ unsigned local_count[2];
    unsigned* arrived = barrier;
    volatile unsigned* generation = barrier + 1;
    const unsigned thread = blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned threads = gridDim.x * blockDim.x;
    unsigned long long relaxed = 0;
    unsigned step = 0, phase = 0;
    if (threadIdx.x == 0) local_count[0] = local_count[1] = 0;
    __syncthreads();
    for (;;) {
        // The values this step decides on: written before the last barrier, stable now.
        const unsigned near_count = __ldcg(&counts[step % 3]);
        const unsigned far_count = __ldcg(&counts[3 + phase % 3]);
        if (near_count == 0 && far_count == 0) break;
        // The list for the next step; its stamp value is that step's number.
        int* near_next = (step & 1) ? near0 : near1;
        unsigned* near_next_count = &counts[(step + 1) % 3];
        const int next_stamp = (int)(step + 1);
        if (blockIdx.x == 0 && threadIdx.x == 0) counts[(step + 2) % 3] = 0;
        if (near_count > 0) {
            // Relax the out-edges of every near vertex.
            const int* near_list = (step & 1) ? near1 : near0;
            int* far_list = (phase & 1) ? far1 : far0;
            unsigned* far_list_count = &counts[3 + phase % 3];
            const long long threshold_wide = (long long)(phase + 1) * delta;
            const int threshold = threshold_wide > INF ? INF : (int)threshold_wide;
            // What follows one edge's atomicMin: an improved vertex below the threshold goes
            // to this block's next local list when `local` (and it has room), else to the next
            // step's list; one above it to the far pile.
            auto improved = [&](int v, int candidate, int before, bool local, int* list_to,
                                unsigned* count_to) {
                ++relaxed;
                if (candidate >= before) return;
                if (candidate < threshold) {
                    if (local) {
                        // No dedup stamp: a vertex listed twice is relaxed twice, cheaper
                        // than one more global round trip per improvement.
                        const unsigned slot = atomicAdd(count_to, 1u);
                        if (slot < LOCAL_CAPACITY) {
                            list_to[slot] = v;
                            return;
                        }
                    }
                    if (atomicExch(&near_stamp[v], next_stamp) != next_stamp)
                        push(near_next, near_next_count, v);
                } else if (atomicExch(&far_stamp[v], (int)phase) != (int)phase) {
                    push(far_list, far_list_count, v);
                }
            };
            // Relaxes u's out-edges. A hop is a chain of round trips to memory, so each
            // link is one group of accesses in flight together: u's distance, its slots and
            // where its further edges start; then the slots' atomics. Straight to the atomic:
            // the GPU is latency-bound here, not busy, and a load first would add a round trip
            // to every improving edge.
            auto relax = [&](int u, bool local, int* list_to, unsigned* count_to) {
                const int du = __ldcg(&dist[u]);
                const int4 slot01 = slots[2 * u], slot23 = slots[2 * u + 1];
                const long long first = extra_offsets[u], end = extra_offsets[u + 1];
                const int v[SLOTS] = {slot01.x, slot01.z, slot23.x, slot23.z};
                const int candidate[SLOTS] = {du + slot01.y, du + slot01.w, du + slot23.y,
                                              du + slot23.w};
                int before[SLOTS];
#pragma unroll
                for (int k = 0; k < SLOTS; ++k)
                    if (v[k] >= 0) before[k] = atomicMin(&dist[v[k]], candidate[k]);
#pragma unroll
                for (int k = 0; k < SLOTS; ++k)
                    if (v[k] >= 0) improved(v[k], candidate[k], before[k], local, list_to, count_to);
                // A junction with more roads than slots: the rest a batch at a time (their
                // loads, then their atomics), one more round trip per batch.
                for (long long e0 = first; e0 < end; e0 += EDGE_BATCH) {
                    int to[EDGE_BATCH], offer[EDGE_BATCH], had[EDGE_BATCH];
#pragma unroll
                    for (int k = 0; k < EDGE_BATCH; ++k) {
                        if (e0 + k < end) {
                            to[k] = extra_neighbours[e0 + k];
                            offer[k] = du + extra_weights[e0 + k];
                        }
                    }
#pragma unroll
                    for (int k = 0; k < EDGE_BATCH; ++k)
                        if (e0 + k < end) had[k] = atomicMin(&dist[to[k]], offer[k]);
#pragma unroll
                    for (int k = 0; k < EDGE_BATCH; ++k)
                        if (e0 + k < end) improved(to[k], offer[k], had[k], local, list_to, count_to);
                }
            };
            unsigned cur = 0;  // local_count[0] and [1] are zero here
            for (unsigned i = thread; i < near_count; i += threads)
                relax(__ldcg(&near_list[i]), local_rounds > 0, local_list[cur], &local_count[cur]);
            // near_far_local: what this block improved it relaxes itself, for up to
            // local_rounds hops, synchronising only its own threads; what the last hop
            // improves goes to the next step's list. Each hop costs a block barrier instead
            // of a grid barrier and skips the global list's round trips. Every improvement
            // is still followed by a relaxation from the improved distance (read after it),
            // so the distances stay exact, whichever block gets there first.
            for (int round = 0; round < local_rounds; ++round) {
                __syncthreads();
                const unsigned listed = min(local_count[cur], (unsigned)LOCAL_CAPACITY);
                if (listed == 0) break;
                const unsigned next = cur ^ 1u;
                const bool last = round + 1 == local_rounds;
                for (unsigned i = threadIdx.x; i < listed; i += blockDim.x)
                    relax(local_list[cur][i], !last, local_list[next], &local_count[next]);
                __syncthreads();
                if (threadIdx.x == 0) local_count[cur] = 0;
                cur = next;
            }
        } else {
            // The near list ran dry: raise the threshold and split the far pile. Entries
            // below the old threshold were improved into the near list since and are done.
            const int* far_list = (phase & 1) ? far1 : far0;
            int* far_next = (phase & 1) ? far0 : far1;
            unsigned* far_next_count = &counts[3 + (phase + 1) % 3];
            if (blockIdx.x == 0 && threadIdx.x == 0) counts[3 + (phase + 2) % 3] = 0;
            const long long old_wide = (long long)(phase + 1) * delta;
            const long long new_wide = old_wide + delta;
            const int old_threshold = old_wide > INF ? INF : (int)old_wide;
            const int threshold = new_wide > INF ? INF : (int)new_wide;
            for (unsigned i = thread; i < far_count; i += threads) {
                const int v = __ldcg(&far_list[i]);
                const int dv = __ldcg(&dist[v]);
                if (dv < old_threshold) continue;
                if (dv < threshold) {
                    if (atomicExch(&near_stamp[v], next_stamp) != next_stamp)
                        push(near_next, near_next_count, v);
                } else if (atomicExch(&far_stamp[v], (int)(phase + 1)) != (int)(phase + 1)) {
                    push(far_next, far_next_count, v);
                }
            }
            ++phase;
        }
        grid_barrier(arrived, generation);
        ++step;
    }
    // Relaxations summed over the grid; the step and phase counts are the same in every block.
    relaxed += __shfl_down_sync(0xffffffffu, relaxed, 16);
    relaxed += __shfl_down_sync(0xffffffffu, relaxed, 8);
    relaxed += __shfl_down_sync(0xffffffffu, relaxed, 4);
    relaxed += __shfl_down_sync(0xffffffffu, relaxed, 2);
    relaxed += __shfl_down_sync(0xffffffffu, relaxed, 1);
    if ((threadIdx.x & 31) == 0 && relaxed) atomicAdd(&stats[1], relaxed);
    if (thread == 0) {
        stats[0] = step;
        stats[2] = phase;
    }
}
