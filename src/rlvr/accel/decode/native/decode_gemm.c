/* y[m, n] = sum_k x[m, k] * w[n, k] (+ bias[n]) for a few rows m: the GEMM of a decode step.
 *
 * Decoding multiplies a handful of rows by every weight matrix once per token, so the
 * product is bound by how fast the weights stream from memory. This kernel reads w in
 * its own row-major [N, K] layout, so there is no packed copy to build or keep: a tile
 * holds R rows of x against C rows of w, each accumulator a vector of 8 partial sums
 * along k, reduced horizontally once per tile. Per 8 values of k a tile loads C vectors
 * of w and R vectors of x for R*C fused multiply-adds, with every loaded vector kept in
 * a register for all its uses (see PIN). M rows of x are taken in passes of at most 4
 * rows; all passes over the same C rows of w run back to back, so the later passes find
 * those rows in L1/L2 and memory delivers every weight once per call. Threads split the
 * output columns n into contiguous ranges, so each thread streams its part of w in order.
 *
 * Why these choices (2-core AMD EPYC Zen 3 VM, 512 KB L2, 32 KB L1d; one decode step of
 * SmolLM2-135M at 8 rows: 121 matrices, 538 MB; benchmarks/RESULTS.md, "Decode GEMM
 * streaming"): a step's 1.08 G multiply-adds keep both cores ~13 ms busy at this
 * kernel's in-cache rate, and its weights take ~19-21 ms to read from DRAM, so the time
 * is set by how well the two overlap:
 *  - 4x3 tiles (two passes at 8 rows) need 7 loads per 12 FMAs; the earlier 8x1 tile
 *    issued 9 per 8. In L2 (N=192, K=576, 1 thread) 4x3 ran 42.5 GFMA/s (~85% of the
 *    FMA peak), 8x1 34.7, and 4x3 without PIN 22.7 (which is why 4x3 lost before);
 *    4x2 was 0.95x 4x3 on the whole step;
 *  - a software prefetch runs PREFETCH_BYTES ahead of the thread's read position, one
 *    line for every line of w, paced across all passes of a tile group so that the DRAM
 *    stream does not pause while a later pass works on cached rows. The hardware
 *    prefetchers alone (a prefetch only at each 4 KB page: 0.74x) or a 4 KB distance
 *    (0.92x) let DRAM idle while the cores compute;
 *  - K longer than fits L1 beside the tile's rows of w (the down projection, K = 1536:
 *    8 rows of x are 48 KB) is cut into chunks (CHUNK_BYTES); in L2, 33.4 -> 36.2
 *    GFMA/s at K = 1536, on the whole step ~1.06x.
 * Together, whole-step medians at 2 threads in one process (bench_decode_gemm.py
 * --stream): ~26 -> ~22 ms, 1.10-1.25x the 8x1 kernel, at 0.85-0.90x the speed of a
 * plain read of the same bytes.
 *
 * Built by rlvr.accel.decode.native_gemm with -O3 -march=native -fopenmp; without AVX2+FMA
 * the plain C loop at the end computes the same sums.
 */
#include <stddef.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#define MAX_R 4 /* rows of x per pass */

/* Rows of w per tile for R rows of x in a pass: R*C >= 8 accumulators hide the FMA
 * latency (4 cycles, 2 pipes), and R*C + C + 1 <= 16 ymm registers hold the
 * accumulators, the C pinned w vectors and one x vector. One row takes 8 (its w vectors
 * are used once each, so they feed the FMAs straight from memory). */
static const int COLUMNS_FOR_ROWS[MAX_R + 1] = {0, 8, 4, 3, 3};

/* Rows per pass for M rows: passes of at most MAX_R rows, evened out (7 rows: 4 + 3). */
static int rows_per_pass(int M) {
    const int passes = (M + MAX_R - 1) / MAX_R;
    return (M + passes - 1) / passes;
}

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>

#ifndef PREFETCH_BYTES
/* How far ahead of its read position a thread prefetches w, measured at 2 threads, 8 rows,
 * whole steps (medians of 15) against the 8x1 kernel in the same run: 4 KB 0.92x, 8 KB
 * 1.10x, 12-32 KB 1.13-1.21x (differences within the noise of a shared machine; hints
 * T0, T1 and NTA alike). 16 KB is well inside L2 and wastes at most 16 KB of reads past
 * the end of each thread's share. */
#define PREFETCH_BYTES 16384
#endif
#ifndef PREFETCH_HINT
#define PREFETCH_HINT _MM_HINT_T1
#endif

/* Keep a loaded vector in its register: without this GCC folds each use of a w (or x)
 * vector into its FMA as a memory operand, loading it again R (or C) times, and the
 * tile becomes bound by the load ports (4x3 measured ~30 instead of ~42 GFLOP-pairs/s
 * per core in L2). */
#define PIN(v) __asm__("" : "+x"(v))

/* The 8 horizontal sums of a[0..8) as one vector: [sum(a[0]), ..., sum(a[7])]. */
static inline __m256 sums8(const __m256 *a) {
    const __m256 p01 = _mm256_hadd_ps(a[0], a[1]), p23 = _mm256_hadd_ps(a[2], a[3]);
    const __m256 p45 = _mm256_hadd_ps(a[4], a[5]), p67 = _mm256_hadd_ps(a[6], a[7]);
    const __m256 q0 = _mm256_hadd_ps(p01, p23), q1 = _mm256_hadd_ps(p45, p67);
    /* q0 = [a0 a1 a2 a3 | a0 a1 a2 a3] (low and high 128-bit halves), q1 likewise a4..a7 */
    return _mm256_add_ps(_mm256_permute2f128_ps(q0, q1, 0x20),
                         _mm256_permute2f128_ps(q0, q1, 0x31));
}

/* Where a tile's prefetches go: `next` advances by `step` bytes per 8 values of k, with
 * `count` prefetches `step / count` bytes apart each time (count > 1 when a tile reads
 * more than a line of w per 8 values of k). */
typedef struct {
    const char *next;
    ptrdiff_t step;
    int count;
} Prefetch;

/* One tile: rows x[0..R) against rows w[0..C) (ldw floats apart), k over [0, K);
 * writes y[r, c] (+ bias), or adds to it when `add` (a later chunk of k). */
static inline __attribute__((always_inline)) void tile(
        const int R, const int C, const float *x, ptrdiff_t ldx, const float *w,
        ptrdiff_t ldw, ptrdiff_t K, float *y, ptrdiff_t ldy, const float *bias, int add,
        Prefetch *pf) {
    __m256 acc[16]; /* acc[r * C + c]; entries past R*C stay zero for sums8 */
#pragma GCC unroll 16
    for (int i = 0; i < 16; i++) acc[i] = _mm256_setzero_ps();
    const ptrdiff_t kv = K & ~(ptrdiff_t)7;
    const char *ahead = pf->next;
    const ptrdiff_t step = pf->step, apart = pf->step / pf->count;
    const int count = pf->count;
    ptrdiff_t k = 0;
    for (; k < kv; k += 8) {
        for (int i = 0; i < count; i++) _mm_prefetch(ahead + i * apart, PREFETCH_HINT);
        ahead += step;
        __m256 wv[8];
#pragma GCC unroll 8
        for (int c = 0; c < C; c++) {
            wv[c] = _mm256_loadu_ps(w + c * ldw + k);
            if (R > 1) PIN(wv[c]);
        }
#pragma GCC unroll 8
        for (int r = 0; r < R; r++) {
            __m256 xv = _mm256_loadu_ps(x + r * ldx + k);
            if (C > 1) PIN(xv);
#pragma GCC unroll 8
            for (int c = 0; c < C; c++) acc[r * C + c] = _mm256_fmadd_ps(xv, wv[c], acc[r * C + c]);
        }
    }
    pf->next = ahead;
    if (k < K) { /* the last K % 8 values, through a lane mask */
        const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(K - k)), lanes);
        __m256 wv[8];
#pragma GCC unroll 8
        for (int c = 0; c < C; c++) wv[c] = _mm256_maskload_ps(w + c * ldw + k, mask);
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
    for (int i = 0; i < R * C; i++) {
        float *out = &y[(i / C) * ldy + i % C];
        *out = add ? *out + sums[i] : sums[i] + (bias ? bias[i % C] : 0.0f);
    }
}

/* Dispatch to a tile with compile-time R and C, so its accumulators live in registers.
 * C is at most COLUMNS_FOR_ROWS of the call's rows per pass (less for the last rows of w
 * in a range); a last, shorter pass keeps the C of the first. */
static void tile_any(int R, int C, const float *x, ptrdiff_t ldx, const float *w, ptrdiff_t ldw,
                     ptrdiff_t K, float *y, ptrdiff_t ldy, const float *bias, int add,
                     Prefetch *pf) {
#define TILE(r, c) case (r) * 16 + (c): \
        tile(r, c, x, ldx, w, ldw, K, y, ldy, bias, add, pf); break;
    switch (R * 16 + C) {
        TILE(1, 1) TILE(1, 2) TILE(1, 3) TILE(1, 4) TILE(1, 5) TILE(1, 6) TILE(1, 7) TILE(1, 8)
        TILE(2, 1) TILE(2, 2) TILE(2, 3) TILE(2, 4)
        TILE(3, 1) TILE(3, 2) TILE(3, 3)
        TILE(4, 1) TILE(4, 2) TILE(4, 3)
    }
#undef TILE
}

/* The prefetch pacing for a group of C rows of w read in `passes` passes: the group's
 * C*K floats spread evenly over its passes' vector steps, so that the prefetches of the
 * whole group cover the C*K floats PREFETCH_BYTES ahead, every line at least once. */
static Prefetch prefetch_start(const float *w, int C, ptrdiff_t K, int passes) {
    const ptrdiff_t steps = passes * (K / 8); /* vector steps of all passes */
    Prefetch pf = {(const char *)w + PREFETCH_BYTES, 0, 1};
    if (steps > 0) {
        const ptrdiff_t bytes = ((ptrdiff_t)C * K * (ptrdiff_t)sizeof(float) + steps - 1) / steps;
        pf.count = (int)((bytes + 63) / 64);
        pf.step = (bytes + pf.count - 1) / pf.count * pf.count;
    }
    return pf;
}

#else /* no AVX2+FMA: the same sums, left to the compiler */

typedef int Prefetch; /* no prefetching here */

static Prefetch prefetch_start(const float *w, int C, ptrdiff_t K, int passes) {
    (void)w; (void)C; (void)K; (void)passes;
    return 0;
}

static void tile_any(int R, int C, const float *x, ptrdiff_t ldx, const float *w, ptrdiff_t ldw,
                     ptrdiff_t K, float *y, ptrdiff_t ldy, const float *bias, int add,
                     Prefetch *pf) {
    (void)pf;
    for (int r = 0; r < R; r++)
        for (int c = 0; c < C; c++) {
            float s = 0.0f;
            for (ptrdiff_t k = 0; k < K; k++) s += x[r * ldx + k] * w[c * ldw + k];
            y[r * ldy + c] = add ? y[r * ldy + c] + s : s + (bias ? bias[c] : 0.0f);
        }
}
#endif

#ifndef CHUNK_BYTES
/* Bytes of k-chunk the M rows of x and a tile group's C rows of w may take together, so
 * both stay in the 32 KB L1d across the passes: 28 KB keeps K = 576 whole at 8 rows
 * ((8 + 3) rows x 576 x 4 B = 25 KB) and cuts K = 1536 into 3 chunks of 512. Measured
 * 16, 24 and 28 KB alike at K = 1536; 24 KB cut K = 576 in two and lost 6% in L2. */
#define CHUNK_BYTES 28672
#endif

/* Values of k per chunk: all of K, or K cut into even chunks (multiples of 8) whose M
 * rows of x and C rows of w take at most CHUNK_BYTES. */
static ptrdiff_t chunk_length(int M, int C, ptrdiff_t K) {
    if (CHUNK_BYTES <= 0) return K;
    ptrdiff_t fit = CHUNK_BYTES / ((ptrdiff_t)(M + C) * (ptrdiff_t)sizeof(float));
    if (fit >= K) return K;
    if (fit < 8) fit = 8;
    const ptrdiff_t chunks = (K + fit - 1) / fit;
    const ptrdiff_t length = ((K + chunks - 1) / chunks + 7) & ~(ptrdiff_t)7;
    return length < 8 ? 8 : length;
}

/* Output columns [n0, n1) for all M rows: for each group of C rows of w, every pass of
 * rows of x (the first pass pulls w's rows from memory, the others find them in cache). */
static void columns(const float *x, ptrdiff_t ldx, const float *w, const float *bias,
                    float *y, ptrdiff_t ldy, int M, ptrdiff_t K, ptrdiff_t n0, ptrdiff_t n1,
                    int rows, int cols) {
    const int passes = (M + rows - 1) / rows;
    const ptrdiff_t chunk = chunk_length(M, cols, K);
    for (ptrdiff_t n = n0; n < n1; n += cols) {
        const int C = n1 - n < cols ? (int)(n1 - n) : cols;
        Prefetch pf = prefetch_start(w + n * K, C, K, passes);
        for (ptrdiff_t k = 0; k < K; k += chunk) {
            const ptrdiff_t length = K - k < chunk ? K - k : chunk;
            for (int m = 0; m < M; m += rows) {
                const int R = M - m < rows ? M - m : rows;
                tile_any(R, C, x + m * ldx + k, ldx, w + n * K + k, K, length,
                         y + m * ldy + n, ldy, bias ? bias + n : NULL, k > 0, &pf);
            }
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
    const int rows = rows_per_pass(M), cols = COLUMNS_FOR_ROWS[rows];
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
    const int cols = COLUMNS_FOR_ROWS[rows_per_pass(M)];
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
