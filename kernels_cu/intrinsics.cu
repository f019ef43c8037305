// Fast-math intrinsics against the standard functions: speed bought with accuracy. Each
// kernel writes f(x) for every input (the accuracy check) and the sum of f over `repeat`
// nearby arguments x + k/1024 (the throughput: enough evaluations per byte that the
// arithmetic, not memory, sets the time). Compiled with --use_fast_math when the suite's
// fast_math parameter is true: then the standard names become the intrinsics too.
#define NEARBY(x, k) __fmaf_rn((float)(k), 0.0009765625f, (x))

#define UNARY(name, expression)                                                               \
    extern "C" __global__ void name(float* value, float* sum, const float* in, unsigned n,   \
                                    unsigned repeat) {                                       \
        const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;                            \
        if (i >= n) return;                                                                  \
        float x = in[i];                                                                     \
        value[i] = expression;                                                               \
        float acc = 0.0f;                                                                    \
        for (unsigned k = 0; k < repeat; ++k) {                                              \
            x = NEARBY(in[i], k);                                                            \
            acc += expression;                                                               \
        }                                                                                    \
        sum[i] = acc;                                                                        \
    }

UNARY(sin_standard, sinf(x))              // sinf: 2 ulp everywhere; slow path for |x| >= 105615
UNARY(sin_intrinsic, __sinf(x))           // __sinf: hardware approximation (MUFU.SIN)
UNARY(exp_standard, expf(x))              // expf: 2 ulp
UNARY(exp_intrinsic, __expf(x))           // __expf: MUFU.EX2 on x * log2(e)
UNARY(divide_standard, 1.0f / x)          // IEEE division: correctly rounded
UNARY(divide_intrinsic, __fdividef(1.0f, x))  // __fdividef: 2 ulp, reciprocal then multiply
UNARY(rsqrt_standard, 1.0f / sqrtf(x))    // correctly rounded square root, then IEEE division
UNARY(rsqrt_intrinsic, rsqrtf(x))         // rsqrtf: MUFU.RSQ, 2 ulp
