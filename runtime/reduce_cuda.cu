/*
 * reduce_cuda.cu - CUDA reduction and division kernels (reduce_cuda.h).
 *
 * One templated kernel per (datatype, op).  The work is memory bound (two
 * loads and a store per element, next to no arithmetic), so what matters
 * is keeping enough bytes in flight:
 *   - 16-byte vector loads/stores (uint4) whenever dst, a and b have the
 *     same address modulo 16: a scalar head brings dst to a 16-byte
 *     boundary, then 16-byte vectors, then a scalar tail.  Pointers with
 *     different alignments take the scalar path (still coalesced).
 *   - each thread issues UNROLL vector loads of each operand before it
 *     computes, so one warp has UNROLL * 2 * 512 bytes outstanding;
 *   - a grid-stride loop over a grid sized to the device (a few blocks
 *     per SM), not to n, so launch cost stays flat for huge n.
 * Element arithmetic follows reduce.c exactly (see reduce_cuda.h), so the
 * CPU and GPU transports agree bit for bit on the same plan.
 *
 * Everything is enqueued on the caller's stream; nothing synchronises.
 */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <stdint.h>

extern "C" {
#include "err.h"
}
#include "reduce_cuda.h"

namespace {

constexpr int kThreads = 256;     /* per block */
constexpr int kUnroll = 4;        /* vectors per operand in flight */
constexpr int kBlocksPerSm = 8;   /* 2048 threads per SM: full occupancy */

/* ---- element arithmetic ---- */

template <typename T, int OP>
__device__ __forceinline__ T arith(T x, T y)
{
    if constexpr (OP == CCS_PROD)
        return x * y;
    else if constexpr (OP == CCS_MIN)
        return y < x ? y : x;
    else if constexpr (OP == CCS_MAX)
        return y > x ? y : x;
    else
        return x + y;           /* CCS_SUM and CCS_AVG */
}

/* Each traits type names the storage type S (trivial, so it can share a
 * union with uint4) and how to combine and divide two stored values. */
struct TF32 {
    using S = float;
    template <int OP> __device__ static S ap(S x, S y)
    {
        return arith<float, OP>(x, y);
    }
    __device__ static S dv(S x, uint32_t d) { return x / (float)d; }
};

struct TF64 {
    using S = double;
    template <int OP> __device__ static S ap(S x, S y)
    {
        return arith<double, OP>(x, y);
    }
    __device__ static S dv(S x, uint32_t d) { return x / (double)d; }
};

struct TF16 {
    using S = unsigned short;
    __device__ static float f(S x) { return __half2float(__ushort_as_half(x)); }
    __device__ static S s(float x) { return __half_as_ushort(__float2half_rn(x)); }
    template <int OP> __device__ static S ap(S x, S y)
    {
        return s(arith<float, OP>(f(x), f(y)));
    }
    __device__ static S dv(S x, uint32_t d) { return s(f(x) / (float)d); }
};

struct TBF16 {
    using S = unsigned short;
    __device__ static float f(S x)
    {
        return __bfloat162float(__ushort_as_bfloat16(x));
    }
    __device__ static S s(float x)
    {
        return __bfloat16_as_ushort(__float2bfloat16_rn(x));
    }
    template <int OP> __device__ static S ap(S x, S y)
    {
        return s(arith<float, OP>(f(x), f(y)));
    }
    __device__ static S dv(S x, uint32_t d) { return s(f(x) / (float)d); }
};

/* Integer sums and products go through the unsigned type: wrap around
 * instead of undefined behaviour, as in reduce.c. */
template <typename T, typename U>
struct TInt {
    using S = T;
    template <int OP> __device__ static S ap(S x, S y)
    {
        if constexpr (OP == CCS_MIN || OP == CCS_MAX)
            return arith<T, OP>(x, y);
        else
            return (T)arith<U, OP>((U)x, (U)y);
    }
    __device__ static S dv(S x, uint32_t d)
    {
        return (T)((long long)x / (long long)d);
    }
};

using TI32 = TInt<int32_t, uint32_t>;
using TI64 = TInt<long long, unsigned long long>;
using TU8 = TInt<unsigned char, unsigned int>;

template <typename Tr>
union Vec {
    static constexpr int N = 16 / sizeof(typename Tr::S);
    uint4 u;
    typename Tr::S s[N];
};

/* ---- kernels ---- */

/*
 * Elements [head, head + nvec * N) are done as 16-byte vectors (the
 * pointers are 16-byte aligned there); elements [0, head) and
 * [head + nvec * N, n) one by one.  Unaligned calls pass head = n,
 * nvec = 0.
 */
template <typename Tr, int OP>
__global__ void __launch_bounds__(kThreads)
k_reduce(typename Tr::S *dst, const typename Tr::S *a,
         const typename Tr::S *b, size_t n, size_t head, size_t nvec)
{
    using S = typename Tr::S;
    using V = Vec<Tr>;
    const size_t tid = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    const size_t nth = (size_t)gridDim.x * blockDim.x;
    const uint4 *va = reinterpret_cast<const uint4 *>(a + head);
    const uint4 *vb = reinterpret_cast<const uint4 *>(b + head);
    uint4 *vd = reinterpret_cast<uint4 *>(dst + head);
    size_t i = tid;

    for (; i + (kUnroll - 1) * nth < nvec; i += kUnroll * nth) {
        V xa[kUnroll], xb[kUnroll];
#pragma unroll
        for (int u = 0; u < kUnroll; u++) {
            xa[u].u = va[i + u * nth];
            xb[u].u = vb[i + u * nth];
        }
#pragma unroll
        for (int u = 0; u < kUnroll; u++) {
#pragma unroll
            for (int k = 0; k < V::N; k++)
                xa[u].s[k] = Tr::template ap<OP>(xa[u].s[k], xb[u].s[k]);
            vd[i + u * nth] = xa[u].u;
        }
    }
    for (; i < nvec; i += nth) {
        V xa, xb;
        xa.u = va[i];
        xb.u = vb[i];
#pragma unroll
        for (int k = 0; k < V::N; k++)
            xa.s[k] = Tr::template ap<OP>(xa.s[k], xb.s[k]);
        vd[i] = xa.u;
    }
    {
        const size_t tail0 = head + nvec * V::N;
        const size_t nscalar = head + (n - tail0);
        for (size_t j = tid; j < nscalar; j += nth) {
            size_t e = j < head ? j : tail0 + (j - head);
            S x = a[e], y = b[e];
            dst[e] = Tr::template ap<OP>(x, y);
        }
    }
}

template <typename Tr>
__global__ void __launch_bounds__(kThreads)
k_div(typename Tr::S *buf, size_t n, size_t head, size_t nvec, uint32_t d)
{
    using V = Vec<Tr>;
    const size_t tid = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    const size_t nth = (size_t)gridDim.x * blockDim.x;
    uint4 *vb = reinterpret_cast<uint4 *>(buf + head);

    for (size_t i = tid; i < nvec; i += nth) {
        V x;
        x.u = vb[i];
#pragma unroll
        for (int k = 0; k < V::N; k++)
            x.s[k] = Tr::dv(x.s[k], d);
        vb[i] = x.u;
    }
    {
        const size_t tail0 = head + nvec * V::N;
        const size_t nscalar = head + (n - tail0);
        for (size_t j = tid; j < nscalar; j += nth) {
            size_t e = j < head ? j : tail0 + (j - head);
            buf[e] = Tr::dv(buf[e], d);
        }
    }
}

/* ---- launch ---- */

struct Shape {
    size_t head, nvec;
    unsigned blocks;
};

/* Split n elements of `es` bytes into head / vectors / tail for the
 * pointers given (all must agree modulo 16 for the vector path) and size
 * the grid: enough blocks for the work, at most kBlocksPerSm per SM. */
static Shape shape(size_t n, size_t es, int sms, const void *d,
                   const void *a, const void *b)
{
    Shape sh;
    uintptr_t pd = (uintptr_t)d;
    size_t per = 16 / es, work;

    if (((pd ^ (uintptr_t)a) & 15) == 0 && ((pd ^ (uintptr_t)b) & 15) == 0 &&
        (pd % es) == 0) {
        sh.head = ((16 - (pd & 15)) & 15) / es;
        if (sh.head > n)
            sh.head = n;
        sh.nvec = (n - sh.head) / per;
    } else {
        sh.head = n;
        sh.nvec = 0;
    }
    /* Threads wanted: one per kUnroll vectors plus the scalar leftovers. */
    work = (sh.nvec + kUnroll - 1) / kUnroll;
    {
        size_t scalar = n - sh.nvec * per;
        if (scalar > work)
            work = scalar;
    }
    {
        size_t want = (work + kThreads - 1) / kThreads;
        size_t cap = (size_t)(sms > 0 ? sms : 1) * kBlocksPerSm;
        sh.blocks = (unsigned)(want < 1 ? 1 : want > cap ? cap : want);
    }
    return sh;
}

static ccs_status_t cuda_fail(ccs_err_t *err, cudaError_t e, const char *what,
                              ccs_dtype_t dt, ccs_redop_t op, size_t n)
{
    return ccs_err_set(err, ccs_cuda_status((int)e),
                       "%s (%s %s, %zu elements): %s (%s)", what,
                       ccs_dtype_str(dt), ccs_redop_str(op), n,
                       cudaGetErrorString(e), cudaGetErrorName(e));
}

static ccs_status_t device_sms(int *sms, ccs_err_t *err, const char *what,
                               ccs_dtype_t dt, ccs_redop_t op, size_t n)
{
    int dev = 0;
    cudaError_t e = cudaGetDevice(&dev);

    if (e == cudaSuccess)
        e = cudaDeviceGetAttribute(sms, cudaDevAttrMultiProcessorCount, dev);
    if (e != cudaSuccess)
        return cuda_fail(err, e, what, dt, op, n);
    return CCS_OK;
}

template <typename Tr, int OP>
static void launch_reduce(void *dst, const void *a, const void *b, size_t n,
                          int sms, cudaStream_t st)
{
    using S = typename Tr::S;
    Shape sh = shape(n, sizeof(S), sms, dst, a, b);
    k_reduce<Tr, OP><<<sh.blocks, kThreads, 0, st>>>(
        (S *)dst, (const S *)a, (const S *)b, n, sh.head, sh.nvec);
}

template <typename Tr>
static bool dispatch_op(void *dst, const void *a, const void *b, size_t n,
                        ccs_redop_t op, int sms, cudaStream_t st)
{
    switch (op) {
    case CCS_SUM:
    case CCS_AVG: launch_reduce<Tr, CCS_SUM>(dst, a, b, n, sms, st); break;
    case CCS_PROD: launch_reduce<Tr, CCS_PROD>(dst, a, b, n, sms, st); break;
    case CCS_MIN: launch_reduce<Tr, CCS_MIN>(dst, a, b, n, sms, st); break;
    case CCS_MAX: launch_reduce<Tr, CCS_MAX>(dst, a, b, n, sms, st); break;
    default: return false;
    }
    return true;
}

template <typename Tr>
static void launch_div(void *buf, size_t n, uint32_t d, int sms,
                       cudaStream_t st)
{
    using S = typename Tr::S;
    Shape sh = shape(n, sizeof(S), sms, buf, buf, buf);
    k_div<Tr><<<sh.blocks, kThreads, 0, st>>>((S *)buf, n, sh.head, sh.nvec,
                                               d);
}

} /* namespace */

extern "C" ccs_status_t ccs_cuda_status(int cuda_error)
{
    switch ((cudaError_t)cuda_error) {
    case cudaSuccess:
        return CCS_OK;
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorStubLibrary:
    case cudaErrorDevicesUnavailable:
    case cudaErrorSystemNotReady:
    case cudaErrorSystemDriverMismatch:
    case cudaErrorCompatNotSupportedOnDevice:
        return CCS_ERR_NO_DEVICE;
    default:
        return CCS_ERR_CUDA;
    }
}

extern "C" ccs_status_t ccs_reduce_cuda(void *dst, const void *a,
                                        const void *b, size_t n,
                                        ccs_dtype_t dtype, ccs_redop_t op,
                                        void *stream, ccs_err_t *err)
{
    cudaStream_t st = (cudaStream_t)stream;
    ccs_status_t s;
    cudaError_t e;
    int sms = 0;
    bool ok;

    if ((unsigned)dtype >= CCS_DTYPE_COUNT || (unsigned)op >= CCS_REDOP_COUNT)
        return ccs_err_set(err, CCS_ERR_INVALID,
                           "reduce kernel: unknown datatype %d or op %d",
                           (int)dtype, (int)op);
    if (n == 0)
        return CCS_OK;
    if ((s = device_sms(&sms, err, "reduce kernel", dtype, op, n)) != CCS_OK)
        return s;
    switch (dtype) {
    case CCS_FLOAT32: ok = dispatch_op<TF32>(dst, a, b, n, op, sms, st); break;
    case CCS_FLOAT64: ok = dispatch_op<TF64>(dst, a, b, n, op, sms, st); break;
    case CCS_FLOAT16: ok = dispatch_op<TF16>(dst, a, b, n, op, sms, st); break;
    case CCS_BFLOAT16:
        ok = dispatch_op<TBF16>(dst, a, b, n, op, sms, st);
        break;
    case CCS_INT32: ok = dispatch_op<TI32>(dst, a, b, n, op, sms, st); break;
    case CCS_INT64: ok = dispatch_op<TI64>(dst, a, b, n, op, sms, st); break;
    case CCS_UINT8: ok = dispatch_op<TU8>(dst, a, b, n, op, sms, st); break;
    default: ok = false; break;
    }
    if (!ok)
        return ccs_err_set(err, CCS_ERR_INVALID,
                           "reduce kernel: unknown datatype %d or op %d",
                           (int)dtype, (int)op);
    /* Launch errors (bad configuration, a sticky fault of earlier work on
     * this context) show up here; faults inside the kernel surface at the
     * next synchronising call, as in NCCL. */
    e = cudaGetLastError();
    if (e != cudaSuccess)
        return cuda_fail(err, e, "reduce kernel launch", dtype, op, n);
    return CCS_OK;
}

extern "C" ccs_status_t ccs_div_cuda(void *buf, size_t n, ccs_dtype_t dtype,
                                     uint32_t divisor, void *stream,
                                     ccs_err_t *err)
{
    cudaStream_t st = (cudaStream_t)stream;
    ccs_status_t s;
    cudaError_t e;
    int sms = 0;

    if ((unsigned)dtype >= CCS_DTYPE_COUNT)
        return ccs_err_set(err, CCS_ERR_INVALID,
                           "div kernel: unknown datatype %d", (int)dtype);
    if (n == 0 || divisor <= 1)
        return CCS_OK;
    if ((s = device_sms(&sms, err, "div kernel", dtype, CCS_AVG, n)) !=
        CCS_OK)
        return s;
    switch (dtype) {
    case CCS_FLOAT32: launch_div<TF32>(buf, n, divisor, sms, st); break;
    case CCS_FLOAT64: launch_div<TF64>(buf, n, divisor, sms, st); break;
    case CCS_FLOAT16: launch_div<TF16>(buf, n, divisor, sms, st); break;
    case CCS_BFLOAT16: launch_div<TBF16>(buf, n, divisor, sms, st); break;
    case CCS_INT32: launch_div<TI32>(buf, n, divisor, sms, st); break;
    case CCS_INT64: launch_div<TI64>(buf, n, divisor, sms, st); break;
    case CCS_UINT8: launch_div<TU8>(buf, n, divisor, sms, st); break;
    default: break;
    }
    e = cudaGetLastError();
    if (e != cudaSuccess)
        return cuda_fail(err, e, "div kernel launch", dtype, CCS_AVG, n);
    return CCS_OK;
}
