/* y[m, n] = sum_k x[m, k] * w[n, k] (+ bias[n]) for a few rows m: the GEMM of a decode step.
 *
 * Decoding multiplies a handful of rows by every weight matrix once per token, so the
 * product is bound by how fast the weights stream from memory. This kernel reads w in
 * its own row-major [N, K] layout, so there is no packed copy to build or keep: a tile
 * holds R rows of x against C rows of w, each accumulator a vector of 8 partial sums
 * along k, reduced horizontally once per tile. Per 8 values of k a tile loads C vectors
 * of w and R vectors of x (from L1: R is capped so R rows of x fit, X_TILE_BYTES) for
 * R*C fused multiply-adds. R*C >= 8 keeps both FMA pipes busy through the FMA latency;
 * R*C <= 12 keeps the tile in the 16 ymm registers. At 8 rows and K = 576 the 8x1 tile
 * streamed fastest of 8x1, 6x2, 4x3, 4x2 and 2x4 (benchmarks/RESULTS.md). When x has more rows than one tile takes, the next rows reuse the same C
 * rows of w from L1, so memory delivers every weight once per call. Threads split the
 * output columns n into contiguous ranges (each thread streams its part of w in order).
 *
 * Built by rlvr.rollout.native_gemm with -O3 -march=native -fopenmp; without AVX2+FMA
 * the plain C loop at the end computes the same sums.
 */
#include <stddef.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#define MAX_R 8 /* rows of x per tile */

/* Bytes of x one tile may read per pass before it no longer fits in L1 beside w's
 * rows (32 KB L1d on the CPUs this targets); larger K takes fewer rows per tile. */
#ifndef X_TILE_BYTES
#define X_TILE_BYTES 24576
#endif

/* Rows of w per tile for R rows of x: at least 8 accumulators where possible. It never
 * grows with R, so a last, shorter block of rows takes the columns of the first block
 * (tile_any has every R x C with C <= COLUMNS_FOR_ROWS[R]). */
static const int COLUMNS_FOR_ROWS[MAX_R + 1] = {0, 8, 4, 3, 3, 2, 2, 1, 1};

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>

#ifndef PREFETCH_FLOATS
/* How far ahead along a row of w to prefetch into L1: 2 KB, ahead of the lines the
 * hardware prefetcher has in flight (measured: the best of none / 1 / 2 / 4 KB and an
 * L2-only hint, by a margin near the noise; benchmarks/RESULTS.md). */
#define PREFETCH_FLOATS 512
#endif
#ifndef PREFETCH_HINT
#define PREFETCH_HINT _MM_HINT_T0
#endif

/* The 8 horizontal sums of a[0..8) as one vector: [sum(a[0]), ..., sum(a[7])]. */
static inline __m256 sums8(const __m256 *a) {
    const __m256 p01 = _mm256_hadd_ps(a[0], a[1]), p23 = _mm256_hadd_ps(a[2], a[3]);
    const __m256 p45 = _mm256_hadd_ps(a[4], a[5]), p67 = _mm256_hadd_ps(a[6], a[7]);
    const __m256 q0 = _mm256_hadd_ps(p01, p23), q1 = _mm256_hadd_ps(p45, p67);
    /* q0 = [a0 a1 a2 a3 | a0 a1 a2 a3] (low and high 128-bit halves), q1 likewise a4..a7 */
    return _mm256_add_ps(_mm256_permute2f128_ps(q0, q1, 0x20),
                         _mm256_permute2f128_ps(q0, q1, 0x31));
}

/* One tile: rows x[0..R) against rows w[0..C), k over [0, K); writes y[r, c]. */
static inline __attribute__((always_inline)) void tile(
        const int R, const int C, const float *x, ptrdiff_t ldx, const float *w,
        ptrdiff_t K, float *y, ptrdiff_t ldy, const float *bias, int prefetch) {
    __m256 acc[16]; /* acc[r * C + c]; entries past R*C stay zero for sums8 */
#pragma GCC unroll 16
    for (int i = 0; i < 16; i++) acc[i] = _mm256_setzero_ps();
    const ptrdiff_t kv = K & ~(ptrdiff_t)7;
    ptrdiff_t k = 0;
    for (; k < kv; k += 8) {
        __m256 wv[8];
#pragma GCC unroll 8
        for (int c = 0; c < C; c++) {
#if PREFETCH_FLOATS > 0
            if (prefetch) _mm_prefetch((const char *)(w + c * K + k + PREFETCH_FLOATS), PREFETCH_HINT);
#endif
            wv[c] = _mm256_loadu_ps(w + c * K + k);
        }
#pragma GCC unroll 8
        for (int r = 0; r < R; r++) {
            const __m256 xv = _mm256_loadu_ps(x + r * ldx + k);
#pragma GCC unroll 8
            for (int c = 0; c < C; c++) acc[r * C + c] = _mm256_fmadd_ps(xv, wv[c], acc[r * C + c]);
        }
    }
    if (k < K) { /* the last K % 8 values, through a lane mask */
        const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(K - k)), lanes);
        __m256 wv[8];
#pragma GCC unroll 8
        for (int c = 0; c < C; c++) wv[c] = _mm256_maskload_ps(w + c * K + k, mask);
#pragma GCC unroll 8
        for (int r = 0; r < R; r++) {
            const __m256 xv = _mm256_maskload_ps(x + r * ldx + k, mask);
#pragma GCC unroll 8
            for (int c = 0; c < C; c++) acc[r * C + c] = _mm256_fmadd_ps(xv, wv[c], acc[r * C + c]);
        }
    }
    float sums[16];
    _mm256_storeu_ps(sums, sums8(acc));
    if (R * C > 8) _mm256_storeu_ps(sums + 8, sums8(acc + 8));
#pragma GCC unroll 16
    for (int i = 0; i < R * C; i++)
        y[(i / C) * ldy + i % C] = sums[i] + (bias ? bias[i % C] : 0.0f);
}

/* Dispatch to a tile with compile-time R and C, so its accumulators live in registers.
 * C is at most COLUMNS_FOR_ROWS[R] (below it for the last rows of w in a range). */
static void tile_any(int R, int C, const float *x, ptrdiff_t ldx, const float *w, ptrdiff_t K,
                     float *y, ptrdiff_t ldy, const float *bias, int prefetch) {
#define TILE(r, c) case (r) * 16 + (c): tile(r, c, x, ldx, w, K, y, ldy, bias, prefetch); break;
    switch (R * 16 + C) {
        TILE(1, 1) TILE(1, 2) TILE(1, 3) TILE(1, 4) TILE(1, 5) TILE(1, 6) TILE(1, 7) TILE(1, 8)
        TILE(2, 1) TILE(2, 2) TILE(2, 3) TILE(2, 4)
        TILE(3, 1) TILE(3, 2) TILE(3, 3)
        TILE(4, 1) TILE(4, 2) TILE(4, 3)
        TILE(5, 1) TILE(5, 2)
        TILE(6, 1) TILE(6, 2)
        TILE(7, 1)
        TILE(8, 1)
    }
#undef TILE
}

#else /* no AVX2+FMA: the same sums, left to the compiler */

static void tile_any(int R, int C, const float *x, ptrdiff_t ldx, const float *w, ptrdiff_t K,
                     float *y, ptrdiff_t ldy, const float *bias, int prefetch) {
    (void)prefetch;
    for (int r = 0; r < R; r++)
        for (int c = 0; c < C; c++) {
            float s = 0.0f;
            for (ptrdiff_t k = 0; k < K; k++) s += x[r * ldx + k] * w[c * K + k];
            y[r * ldy + c] = s + (bias ? bias[c] : 0.0f);
        }
}
#endif

/* Rows per tile for M rows of x with K columns: as many as fit X_TILE_BYTES (at least
 * 1, at most MAX_R), then evened out over the passes (9 rows: 5 + 4, not 8 + 1). */
static int rows_per_tile(int M, ptrdiff_t K) {
    ptrdiff_t fit = X_TILE_BYTES / (K * (ptrdiff_t)sizeof(float));
    int cap = fit < 1 ? 1 : fit > MAX_R ? MAX_R : (int)fit;
    int passes = (M + cap - 1) / cap;
    return (M + passes - 1) / passes;
}

/* Output columns [n0, n1) for all M rows: for each group of C rows of w, every row
 * block of x (the first block pulls w's rows from memory, the others find them in L1). */
static void columns(const float *x, ptrdiff_t ldx, const float *w, const float *bias,
                    float *y, ptrdiff_t ldy, int M, ptrdiff_t K, ptrdiff_t n0, ptrdiff_t n1,
                    int rows, int cols) {
    for (ptrdiff_t n = n0; n < n1; n += cols) {
        const int C = n1 - n < cols ? (int)(n1 - n) : cols;
        for (int m = 0; m < M; m += rows) {
            const int R = M - m < rows ? M - m : rows;
            tile_any(R, C, x + m * ldx, ldx, w + n * K, K, y + m * ldy + n, ldy,
                     bias ? bias + n : NULL, m == 0);
        }
    }
}

/* Thread t of nt's share of y [M, ldy >= N] = x [M, ldx >= K] @ w[N, K]^T + bias[N]
 * (bias may be NULL): a contiguous range of output columns, whole tiles of them. Called
 * by every thread of a parallel region (rlvr_decode_gemm, or a caller's own region, as
 * native/decode_step.c does), the shares cover every column once. w must be contiguous
 * row-major. */
void rlvr_gemm_share(const float *x, ptrdiff_t ldx, const float *w, const float *bias,
                     float *y, ptrdiff_t ldy, int M, ptrdiff_t N, ptrdiff_t K, int t, int nt) {
    if (M < 1 || N < 1 || K < 1) return; /* empty products: the caller handles them */
    const int rows = rows_per_tile(M, K), cols = COLUMNS_FOR_ROWS[rows];
    const ptrdiff_t groups = (N + cols - 1) / cols;
    const ptrdiff_t g0 = groups * t / nt, g1 = groups * (t + 1) / nt;
    const ptrdiff_t n0 = g0 * cols, n1 = g1 * cols < N ? g1 * cols : N;
    if (n0 < n1) columns(x, ldx, w, bias, y, ldy, M, K, n0, n1, rows, cols);
}

/* y [M, ldy >= N] = x [M, ldx >= K] @ w[N, K]^T + bias[N] (bias may be NULL), on
 * `threads` OpenMP threads. w must be contiguous row-major. */
void rlvr_decode_gemm(const float *x, ptrdiff_t ldx, const float *w, const float *bias,
                      float *y, ptrdiff_t ldy, int M, ptrdiff_t N, ptrdiff_t K, int threads) {
    if (M < 1 || N < 1 || K < 1) return;
    const int cols = COLUMNS_FOR_ROWS[rows_per_tile(M, K)];
    const ptrdiff_t groups = (N + cols - 1) / cols;
    if (threads < 1) threads = 1;
    if (threads > groups) threads = (int)groups; /* no thread without a group of columns */
#ifdef _OPENMP
#pragma omp parallel num_threads(threads)
    rlvr_gemm_share(x, ldx, w, bias, y, ldy, M, N, K, omp_get_thread_num(),
                    omp_get_num_threads());
#else
    rlvr_gemm_share(x, ldx, w, bias, y, ldy, M, N, K, 0, 1);
#endif
}

/* Which code path this build took (1: AVX2+FMA, 0: plain C); the loader logs it. */
int rlvr_decode_gemm_simd(void) {
#if defined(__AVX2__) && defined(__FMA__)
    return 1;
#else
    return 0;
#endif
}
