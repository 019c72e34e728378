/* rlvr's native decode GEMM (decode_gemm.c), for the other native sources. */
#ifndef RLVR_DECODE_GEMM_H
#define RLVR_DECODE_GEMM_H
#include <stddef.h>

/* Thread t of nt's share of y [M, ldy] = x [M, ldx] @ w[N, K]^T + bias[N] (bias may be
 * NULL); called by every thread of the caller's parallel region, the shares cover every
 * output column once. */
void rlvr_gemm_share(const float *x, ptrdiff_t ldx, const float *w, const float *bias,
                     float *y, ptrdiff_t ldy, int M, ptrdiff_t N, ptrdiff_t K, int t, int nt);

#endif
