/* One decode step of a Llama-family model, every layer in one call.
 *
 * Why: a decode step of SmolLM2-135M for 8 rows is ~210 small GEMMs and ~600 small
 * elementwise ops. Through torch each pays Python and dispatch overhead (tens of
 * microseconds) while the second thread waits, which cost as much as a third of the
 * step; here the whole step is one OpenMP parallel region: the GEMMs split their output
 * columns between the threads (rlvr_gemm_share, decode_gemm.c), the row-wise work
 * splits the rows, attention splits (row, key/value head) pairs, with a barrier between
 * stages.
 *
 * The math is fast_llama.FastLlama's torch decode step, in the same order of operations
 * where it is cheap to keep it (RMSNorm as hidden * rsqrt(mean(hidden^2) + eps) * weight,
 * the half-split rotary embedding, softmax with its maximum subtracted, SiLU as
 * x / (1 + exp(-x))); sums run in a different order than torch's, so results agree to
 * float32 rounding, not bit for bit. Built with -std=c99, so the compiler does not fuse
 * a * b + c into one rounding.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "decode_gemm.h"

/* Addresses per layer, in this order (a row of the int64 table `weights`); 0 for an
 * absent bias. Weights are row-major [out, in] float32. */
enum { INPUT_NORM, Q, K, V, Q_BIAS, K_BIAS, V_BIAS, O, O_BIAS, POST_NORM, GATE, UP,
       GATE_BIAS, UP_BIAS, DOWN, DOWN_BIAS, LAYER_FIELDS };
/* Where each layer's GEMMs write their [rows, width] outputs (a row of `outputs`):
 * q|k|v, o, gate|up, down (rlvr.accel.decode.capture keeps them for the update). */
enum { OUT_QKV, OUT_O, OUT_GATE_UP, OUT_DOWN, OUTPUTS };

/* Mirrored by rlvr.accel.decode.native_step.DecodeArgs (same fields, same order). */
struct rlvr_decode_args {
    int64_t layers, rows, hidden, heads, kv_heads, head_dim, intermediate, vocab;
    int64_t column;        /* the new token's key/value column; keys [0, column] */
    int64_t kv_layer_stride, kv_row_stride, kv_head_stride; /* floats; a column is head_dim */
    int64_t valid_stride;  /* bytes between rows of `valid` */
    int64_t threads;
    int64_t score_stride;  /* floats of `scores` per thread (>= heads / kv_heads * (column + 1)) */
    double eps, scale;
    const int64_t *weights; /* [layers, LAYER_FIELDS] */
    const int64_t *outputs; /* [layers, OUTPUTS] */
    float *stream;          /* [rows, hidden] residual stream: in, the token embeddings */
    const float *cos, *sin; /* [rows, head_dim]; sin with its first half negated */
    float *keys, *values;   /* the key/value buffers, [layers, rows, kv_heads, C, head_dim] */
    const uint8_t *valid;   /* [rows, >= column + 1]: 1 where a column may be attended */
    const float *final_norm, *head, *head_bias;
    float *logits;          /* [rows, vocab] */
    float *normed;          /* scratch [rows, hidden] */
    float *attended;        /* scratch [rows, heads * head_dim] */
    float *activated;       /* scratch [rows, intermediate] */
    float *scores;          /* scratch [threads, score_stride] */
};

#define AT(table, layer, field, width) ((float *)(intptr_t)(table)[(layer) * (width) + (field)])

/* sum_i a[i] * b[i] in 8 interleaved partial sums, a form the compiler vectorizes (a
 * single running sum would be a serial chain: reordering it is not allowed). */
static inline float dot(const float *a, const float *b, int64_t n) {
    float part[8] = {0};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++) part[j] += a[i + j] * b[i + j];
    for (; i < n; i++) part[0] += a[i] * b[i];
    return ((part[0] + part[1]) + (part[2] + part[3])) + ((part[4] + part[5]) + (part[6] + part[7]));
}

/* out [D] = x * cos + swap_halves(x) * signed_sin: transformers' rotate_half form. */
static void rotate(const float *x, const float *cos, const float *sin, float *out, int64_t d) {
    const int64_t half = d / 2;
    for (int64_t i = 0; i < half; i++) out[i] = x[i] * cos[i] + x[i + half] * sin[i];
    for (int64_t i = half; i < d; i++) out[i] = x[i] * cos[i] + x[i - half] * sin[i];
}

/* Rows [r0, r1) of out = x * rsqrt(mean(x^2) + eps) * weight (LlamaRMSNorm). */
static void rms_norm(const float *x, const float *weight, float *out, int64_t r0, int64_t r1,
                     int64_t width, float eps) {
    for (int64_t r = r0; r < r1; r++) {
        const float *row = x + r * width;
        const float sum = dot(row, row, width);
        const float inverse = 1.0f / sqrtf(sum / (float)width + eps);
        for (int64_t i = 0; i < width; i++) out[r * width + i] = weight[i] * (row[i] * inverse);
    }
}

/* Rows [r0, r1): hidden += add (add's rows `width` apart). */
static void residual(float *hidden, const float *add, int64_t r0, int64_t r1, int64_t width) {
    for (int64_t i = r0 * width; i < r1 * width; i++) hidden[i] += add[i];
}

/* One (row, key/value head): rotate and store the new key, store the new value, then
 * attention of the head's g query heads over columns [0, column]. */
static void attend(const struct rlvr_decode_args *a, int64_t layer, int64_t row,
                   int64_t kv_head, const float *qkv, float *scores) {
    const int64_t d = a->head_dim, g = a->heads / a->kv_heads, length = a->column + 1;
    const float *cos = a->cos + row * d, *sin = a->sin + row * d;
    const int64_t base = layer * a->kv_layer_stride + row * a->kv_row_stride
                         + kv_head * a->kv_head_stride;
    float *keys = a->keys + base, *values = a->values + base;
    rotate(qkv + (a->heads + kv_head) * d, cos, sin, keys + a->column * d, d);
    const float *v_new = qkv + (a->heads + a->kv_heads + kv_head) * d;
    for (int64_t i = 0; i < d; i++) values[a->column * d + i] = v_new[i];
    const uint8_t *valid = a->valid + row * a->valid_stride;
    const float scale = (float)a->scale;
    for (int64_t j = 0; j < g; j++) {
        const int64_t head = kv_head * g + j;
        float q[512]; /* head_dim <= 512, checked by the caller */
        rotate(qkv + head * d, cos, sin, q, d);
        float *s = scores + j * length, top = -INFINITY;
        for (int64_t c = 0; c < length; c++) {
            if (!valid[c]) { s[c] = -INFINITY; continue; }
            s[c] = dot(q, keys + c * d, d) * scale;
            if (s[c] > top) top = s[c];
        }
        float total = 0.0f;
        for (int64_t c = 0; c < length; c++) {
            s[c] = valid[c] ? expf(s[c] - top) : 0.0f;
            total += s[c];
        }
        float *out = a->attended + row * a->heads * d + head * d;
        for (int64_t i = 0; i < d; i++) out[i] = 0.0f;
        for (int64_t c = 0; c < length; c++) {
            if (s[c] == 0.0f) continue;
            const float p = s[c] / total, *v = values + c * d;
            for (int64_t i = 0; i < d; i++) out[i] += p * v[i];
        }
    }
}

/* Rows [r0, r1): activated = silu(gate) * up, from the gate|up output. */
static void silu_mul(const float *gate_up, float *activated, int64_t r0, int64_t r1,
                     int64_t width) {
    for (int64_t r = r0; r < r1; r++)
        for (int64_t i = 0; i < width; i++) {
            const float gate = gate_up[r * 2 * width + i], up = gate_up[r * 2 * width + width + i];
            activated[r * width + i] = gate / (1.0f + expf(-gate)) * up;
        }
}

#ifdef _OPENMP
#define BARRIER _Pragma("omp barrier")
#else
#define BARRIER
#endif

/* y = x @ w^T + bias, this thread's share of the output columns for every row. (Giving
 * each thread whole rows instead, which needs no barriers, ran ~1.6x slower: every
 * thread then streams every weight.) */
static void gemm(const struct rlvr_decode_args *a, int t, int nt, const float *x, int64_t ldx,
                 const float *w, const float *bias, float *y, int64_t ldy, int64_t n,
                 int64_t k) {
    rlvr_gemm_share(x, ldx, w, bias, y, ldy, (int)a->rows, n, k, t, nt);
}

/* One layer on thread t of nt (inside the parallel region). */
static void layer(const struct rlvr_decode_args *a, int64_t l, int t, int nt) {
    const int64_t b = a->rows, hidden = a->hidden, qd = a->heads * a->head_dim;
    const int64_t kvd = a->kv_heads * a->head_dim, inter = a->intermediate;
    const int64_t r0 = b * t / nt, r1 = b * (t + 1) / nt;
    const float eps = (float)a->eps;
    float *qkv = AT(a->outputs, l, OUT_QKV, OUTPUTS), *o = AT(a->outputs, l, OUT_O, OUTPUTS);
    float *gate_up = AT(a->outputs, l, OUT_GATE_UP, OUTPUTS);
    float *down = AT(a->outputs, l, OUT_DOWN, OUTPUTS);
#define W(field) AT(a->weights, l, field, LAYER_FIELDS)
    rms_norm(a->stream, W(INPUT_NORM), a->normed, r0, r1, hidden, eps);
    BARRIER
    const int64_t width = qd + 2 * kvd;
    gemm(a, t, nt, a->normed, hidden, W(Q), W(Q_BIAS), qkv, width, qd, hidden);
    gemm(a, t, nt, a->normed, hidden, W(K), W(K_BIAS), qkv + qd, width, kvd, hidden);
    gemm(a, t, nt, a->normed, hidden, W(V), W(V_BIAS), qkv + qd + kvd, width, kvd, hidden);
    BARRIER
    const int64_t kv = a->kv_heads, pairs = b * kv; /* (row, key/value head) pairs */
    for (int64_t p = pairs * t / nt; p < pairs * (t + 1) / nt; p++)
        attend(a, l, p / kv, p % kv, qkv + (p / kv) * width, a->scores + t * a->score_stride);
    BARRIER
    gemm(a, t, nt, a->attended, qd, W(O), W(O_BIAS), o, hidden, hidden, qd);
    BARRIER
    residual(a->stream, o, r0, r1, hidden);
    rms_norm(a->stream, W(POST_NORM), a->normed, r0, r1, hidden, eps);
    BARRIER
    gemm(a, t, nt, a->normed, hidden, W(GATE), W(GATE_BIAS), gate_up, 2 * inter, inter, hidden);
    gemm(a, t, nt, a->normed, hidden, W(UP), W(UP_BIAS), gate_up + inter, 2 * inter, inter,
         hidden);
    BARRIER
    silu_mul(gate_up, a->activated, r0, r1, inter);
    BARRIER
    gemm(a, t, nt, a->activated, inter, W(DOWN), W(DOWN_BIAS), down, hidden, hidden, inter);
    BARRIER
    residual(a->stream, down, r0, r1, hidden);
#undef W
}

/* Every layer, the final norm and the output projection: a->logits. Returns 0, or -1
 * when the shapes are out of what this code takes (the caller then uses torch). */
int rlvr_decode_step(const struct rlvr_decode_args *a) {
    if (a->head_dim > 512 || a->head_dim % 2 || a->kv_heads < 1 || a->heads % a->kv_heads)
        return -1;
    int threads = a->threads < 1 ? 1 : (int)a->threads;
#ifdef _OPENMP
#pragma omp parallel num_threads(threads)
    {
        const int t = omp_get_thread_num(), nt = omp_get_num_threads();
#else
    {
        const int t = 0, nt = 1;
        (void)threads;
#endif
        /* No barrier between layers: a layer ends with each thread adding to its own rows
         * of the stream, which the next layer's norm reads on the same thread. */
        for (int64_t l = 0; l < a->layers; l++) layer(a, l, t, nt);
        const int64_t r0 = a->rows * t / nt, r1 = a->rows * (t + 1) / nt;
        rms_norm(a->stream, a->final_norm, a->normed, r0, r1, a->hidden, (float)a->eps);
        BARRIER
        gemm(a, t, nt, a->normed, a->hidden, a->head, a->head_bias, a->logits, a->vocab,
             a->vocab, a->hidden);
    }
    return 0;
}
