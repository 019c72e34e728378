/* One decode step's GEMMs, streamed from DRAM, against a plain read of the same bytes.
 *
 * Built and run by bench_decode_gemm.py --stream (see there): this file is compiled
 * together with the kernel under test (its exported names renamed to test_decode_gemm
 * by -D) and, optionally, a baseline kernel (renamed to base_decode_gemm, with
 * -DWITH_BASELINE), so both run in one process on the same weights.
 *
 * A step multiplies ROWS rows by every matrix of SmolLM2-135M in model order (30 layers
 * x q 576x576, k and v 192x576, o 576x576, gate and up 1536x576, down 576x1536, then the
 * 49152x576 lm_head): 121 distinct float32 matrices, 538 MB, far beyond the caches, so
 * every step reads them all from DRAM. The peer reads the same matrices with the same
 * threads, one parallel region per matrix as the kernel opens, summing 16 floats per
 * iteration in AVX2 (the floor a GEMM that reads each weight once can reach). Rounds
 * alternate the paths, rotating which goes first; medians of ROUNDS steps.
 *
 * usage: decode_gemm_stream ROUNDS ROWS THREADS [SHAPE]   (SHAPE 0..7: only that
 * projection, in the order q k v o gate up down lm_head; default all)
 */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <omp.h>
#include <immintrin.h>

typedef void (*Gemm)(const float *, ptrdiff_t, const float *, const float *, float *,
                     ptrdiff_t, int, ptrdiff_t, ptrdiff_t, int);
void test_decode_gemm(const float *, ptrdiff_t, const float *, const float *, float *,
                      ptrdiff_t, int, ptrdiff_t, ptrdiff_t, int);
#ifdef WITH_BASELINE
void base_decode_gemm(const float *, ptrdiff_t, const float *, const float *, float *,
                      ptrdiff_t, int, ptrdiff_t, ptrdiff_t, int);
#endif

enum { LAYERS = 30, HIDDEN = 576, KV = 192, INTER = 1536, VOCAB = 49152, SHAPES = 8 };
static const ptrdiff_t OUT[SHAPES] = {HIDDEN, KV, KV, HIDDEN, INTER, INTER, HIDDEN, VOCAB};
static const ptrdiff_t IN[SHAPES] = {HIDDEN, HIDDEN, HIDDEN, HIDDEN, HIDDEN, HIDDEN, INTER, HIDDEN};

/* The peer: every float of w read once, on `threads` threads (a Gemm's signature). */
static void plain_read(const float *x, ptrdiff_t ldx, const float *w, const float *bias,
                       float *y, ptrdiff_t ldy, int M, ptrdiff_t N, ptrdiff_t K, int threads) {
    (void)x; (void)ldx; (void)bias; (void)ldy; (void)M;
    const ptrdiff_t n = N * K;
    float total = 0.0f;
#pragma omp parallel num_threads(threads) reduction(+ : total)
    {
        const int t = omp_get_thread_num(), nt = omp_get_num_threads();
        const ptrdiff_t lo = n * t / nt / 16 * 16, hi = t == nt - 1 ? n : n * (t + 1) / nt / 16 * 16;
        __m256 a = _mm256_setzero_ps(), b = _mm256_setzero_ps();
        ptrdiff_t i = lo;
        for (; i + 16 <= hi; i += 16) {
            a = _mm256_add_ps(a, _mm256_loadu_ps(w + i));
            b = _mm256_add_ps(b, _mm256_loadu_ps(w + i + 8));
        }
        float lanes[8];
        _mm256_storeu_ps(lanes, _mm256_add_ps(a, b));
        for (int j = 0; j < 8; j++) total += lanes[j];
        for (; i < hi; i++) total += w[i];
    }
    y[0] = total; /* keeps the reads */
}

static int by_value(const void *a, const void *b) {
    const double x = *(const double *)a, z = *(const double *)b;
    return (x > z) - (x < z);
}

static float *filled(size_t count, unsigned seed) {
    float *p = aligned_alloc(64, (count * sizeof(float) + 63) / 64 * 64);
    if (!p) { fprintf(stderr, "out of memory\n"); exit(2); }
    for (size_t i = 0; i < count; i++) p[i] = (float)((i * 7 + seed) % 13) * 0.01f - 0.06f;
    return p;
}

int main(int argc, char **argv) {
    if (argc < 4) { fprintf(stderr, "usage: %s ROUNDS ROWS THREADS [SHAPE]\n", argv[0]); return 2; }
    const int rounds = atoi(argv[1]), rows = atoi(argv[2]), threads = atoi(argv[3]);
    const int only = argc > 4 ? atoi(argv[4]) : -1;
    if (rounds < 1 || rows < 1 || rows > 64 || threads < 1 || only >= SHAPES) {
        fprintf(stderr, "bad arguments\n"); return 2;
    }
    float *w[LAYERS + 1][SHAPES] = {{0}};
    double bytes = 0;
    for (int j = 0; j < SHAPES; j++) {
        if (only >= 0 && j != only) continue;
        for (int l = 0; l < (j == SHAPES - 1 ? 1 : LAYERS); l++) {
            w[l][j] = filled((size_t)(OUT[j] * IN[j]), (unsigned)(l * SHAPES + j));
            bytes += (double)(OUT[j] * IN[j]) * sizeof(float);
        }
    }
    float *x = filled((size_t)rows * INTER, 99), *y = filled((size_t)rows * VOCAB, 0);
    Gemm paths[3] = {test_decode_gemm, plain_read, NULL};
    const char *names[3] = {"kernel", "plain read", "baseline"};
    int count = 2;
#ifdef WITH_BASELINE
    paths[count++] = base_decode_gemm;
    { /* the two kernels agree (to float32 rounding) on one matrix of each shape */
        float *other = filled((size_t)rows * VOCAB, 0);
        for (int j = 0; j < SHAPES; j++) {
            if (!w[0][j]) continue;
            test_decode_gemm(x, IN[j], w[0][j], NULL, y, OUT[j], rows, OUT[j], IN[j], threads);
            base_decode_gemm(x, IN[j], w[0][j], NULL, other, OUT[j], rows, OUT[j], IN[j], threads);
            for (ptrdiff_t i = 0; i < rows * OUT[j]; i++)
                if (fabsf(y[i] - other[i]) > 1e-4f * (1.0f + fabsf(other[i]))) {
                    fprintf(stderr, "kernel and baseline disagree on shape %d\n", j); return 1;
                }
        }
        free(other);
    }
#endif
    double *seconds = calloc((size_t)count * rounds, sizeof(double));
    for (int r = -1; r < rounds; r++) /* round -1 warms up */
        for (int i = 0; i < count; i++) {
            const int p = (i + (r < 0 ? 0 : r)) % count;
            const double start = omp_get_wtime();
            for (int l = 0; l < LAYERS; l++) /* model order: the layers, then lm_head */
                for (int j = 0; j < SHAPES - 1; j++)
                    if (w[l][j])
                        paths[p](x, IN[j], w[l][j], NULL, y, OUT[j], rows, OUT[j], IN[j], threads);
            if (w[0][SHAPES - 1])
                paths[p](x, HIDDEN, w[0][SHAPES - 1], NULL, y, VOCAB, rows, VOCAB, HIDDEN, threads);
            if (r >= 0) seconds[p * rounds + r] = omp_get_wtime() - start;
        }
    printf("%d rows, %d threads, %.0f MB per step, %d rounds (medians)\n", rows, threads,
           bytes / 1e6, rounds);
    printf("%-11s %8s %8s %7s %12s\n", "path", "ms/step", "best ms", "GB/s", "vs read");
    double median[3];
    for (int p = 0; p < count; p++) {
        qsort(seconds + p * rounds, (size_t)rounds, sizeof(double), by_value);
        median[p] = seconds[p * rounds + rounds / 2];
    }
    for (int p = 0; p < count; p++)
        printf("%-11s %8.2f %8.2f %7.1f %11.2fx\n", names[p], median[p] * 1e3,
               seconds[p * rounds] * 1e3, bytes / median[p] / 1e9, median[1] / median[p]);
#ifdef WITH_BASELINE
    printf("kernel vs baseline: %.3fx\n", median[2] / median[0]);
#endif
    return 0;
}
