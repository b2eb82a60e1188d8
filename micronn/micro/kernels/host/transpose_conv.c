/* TRANSPOSE_CONV, int8: the host port (x86-64 with AVX2) of kernels/transpose_conv.c, same symbol, same argument
 * words.
 *
 * Gathered per output pixel instead of scattered per input pixel: the taps that land on output (oy, ox) are those
 * fy, fx with oy + pad_t - fy and ox + pad_l - fx non-negative multiples of the strides inside the input. Each
 * pixel's sums stay in registers (8 channels per vector, up to 32 at once), start from the bias and take
 * (x + offset) . W[oc, fy, fx, :] for every such tap, then are requantized and stored; int32 sums wrap, so the
 * order differs from the portable kernel's without changing a byte. The input is widened to int16 (offset added)
 * once per call and the weights are repacked per tap once per call site (mn_host.h), so the int32 scratch is
 * not used.
 */
#define mn_transpose_conv_s8 mn_transpose_conv_s8_portable
#include "transpose_conv.portable.inc"
#undef mn_transpose_conv_s8
#include "mn_host.h"

#if defined(MNH_AVX2)
typedef struct {
    int kp, blocks;
    int16_t *w;     /* per tap (fy, fx): mnh_pack_rows8 of W[:, fy, fx, :] */
    int32_t *bias;  /* padded to whole blocks */
    mnh_rq rq;
    int16_t *x;     /* the input plus offset as int16, 2 * kp per pixel */
} tc_pack;

static const tc_pack *tc_prepare(const mn_word *args) {
    mnh_slot *slot;
    tc_pack *p = (tc_pack *)mnh_lookup(args, &slot);
    if (p) return p;
    const int in_c = MN_I(IN_C), out_c = MN_I(OUT_C), taps = MN_I(F_H) * MN_I(F_W), kp = mnh_pairs(in_c);
    const int blocks = mnh_blocks8(out_c);
    const size_t pixels = (size_t)MN_I(N) * MN_I(IN_H) * MN_I(IN_W), tap_size = (size_t)blocks * kp * 16;
    p = (tc_pack *)mnh_alloc(sizeof(tc_pack));
    if (!p) return NULL;
    p->kp = kp, p->blocks = blocks;
    p->w = (int16_t *)mnh_alloc(taps * tap_size * sizeof(int16_t));
    p->bias = (int32_t *)mnh_alloc((size_t)blocks * 8 * sizeof(int32_t));
    p->x = (int16_t *)mnh_alloc((pixels * 2 * kp + 16) * sizeof(int16_t));
    if (!p->w || !p->bias || !p->x ||
        !mnh_rq_init(&p->rq, MN_P(const int32_t, MULT), MN_P(const int32_t, SHIFT), out_c, 8))
        return NULL;
    const int8_t *filter = MN_P(const int8_t, FILTER);
    for (int t = 0; t < taps; t++)
        mnh_pack_rows8(p->w + t * tap_size, filter + (size_t)t * in_c, out_c, in_c, (size_t)taps * in_c);
    memcpy(p->bias, MN_P(const int32_t, BIAS), (size_t)out_c * sizeof(int32_t));
    mnh_keep(slot, args, p);
    return p;
}

/* m (1..4) blocks of 8 channels, from block j0, of one output pixel: the sums over its `count` taps. */
__attribute__((always_inline)) static inline void pixel(__m256i *acc, const tc_pack *p, int j0, const int m,
                                                        const int16_t *const *xs, const int16_t *const *ws,
                                                        int count) {
    const int kp = p->kp;
    for (int j = 0; j < m; j++) acc[j] = _mm256_loadu_si256((const __m256i *)(p->bias + 8 * (j0 + j)));
    for (int t = 0; t < count; t++) {
        const int32_t *x = (const int32_t *)xs[t];
        const int16_t *w = ws[t] + (size_t)j0 * kp * 16;
        for (int i = 0; i < kp; i++, w += 16) {
            const __m256i xv = _mm256_set1_epi32(x[i]);
            for (int j = 0; j < m; j++)
                acc[j] = _mm256_add_epi32(acc[j], _mm256_madd_epi16(xv, _mm256_loadu_si256(
                                                                          (const __m256i *)(w + (size_t)j * kp * 16))));
        }
    }
}

void mn_transpose_conv_s8(const mn_word *args) {
    const int n = MN_I(N), in_h = MN_I(IN_H), in_w = MN_I(IN_W), in_c = MN_I(IN_C), out_h = MN_I(OUT_H);
    const int out_w = MN_I(OUT_W), out_c = MN_I(OUT_C), fh = MN_I(F_H), fw = MN_I(F_W), sh = MN_I(S_H);
    const int sw = MN_I(S_W), pad_t = MN_I(PAD_T), pad_l = MN_I(PAD_L);
    const int32_t in_off = MN_I(IN_OFF), out_zp = MN_I(OUT_ZP), lo = MN_I(ACT_MIN), hi = MN_I(ACT_MAX);
    /* x + offset must fit int16 (madd's pairs then cannot overflow); at most 64 taps per pixel on the stack */
    const tc_pack *p = in_off >= -32000 && in_off <= 32000 && fh * fw <= 64 && sh > 0 && sw > 0 ? tc_prepare(args)
                                                                                                 : NULL;
    if (!p) {
        mn_transpose_conv_s8_portable(args);
        return;
    }
    const int kp = p->kp, blocks = p->blocks;
    const size_t tap_size = (size_t)blocks * kp * 16, pixels = (size_t)n * in_h * in_w;
    const int8_t *in = MN_P(const int8_t, IN);
    int8_t *out = MN_P(int8_t, OUT);
    const __m256i off = _mm256_set1_epi16((int16_t)in_off);
    for (size_t q = 0; q < pixels; q++) {
        int16_t *d = p->x + q * 2 * kp;
        mnh_widen(d, in + q * in_c, in_c);
        for (int i = 0; i < 2 * kp; i += 16) /* the odd pad lane gets the offset too: its weight is 0 */
            _mm256_storeu_si256((__m256i *)(d + i), _mm256_add_epi16(_mm256_loadu_si256((const __m256i *)(d + i)), off));
    }
    /* the loop above may write up to 15 int16 past a pixel: the next pixel's widening overwrites them first */
    const int16_t *xs[64], *ws[64];
    for (int b = 0; b < n; b++)
        for (int oy = 0; oy < out_h; oy++) {
            int fys[64], iys[64], ny = 0;
            for (int fy = 0; fy < fh; fy++) {
                const int t = oy + pad_t - fy;
                if (t >= 0 && t % sh == 0 && t / sh < in_h) fys[ny] = fy, iys[ny++] = t / sh;
            }
            for (int ox = 0; ox < out_w; ox++) {
                int count = 0;
                for (int fx = 0; fx < fw; fx++) {
                    const int u = ox + pad_l - fx;
                    if (u < 0 || u % sw || u / sw >= in_w) continue;
                    for (int k = 0; k < ny; k++) {
                        xs[count] = p->x + (((size_t)b * in_h + iys[k]) * in_w + u / sw) * 2 * kp;
                        ws[count++] = p->w + ((size_t)fys[k] * fw + fx) * tap_size;
                    }
                }
                int8_t *o = out + (((size_t)b * out_h + oy) * out_w + ox) * out_c;
                __m256i acc[4];
                for (int j0 = 0; j0 < blocks; j0 += 4) {
                    const int m = blocks - j0 < 4 ? blocks - j0 : 4;
                    switch (m) {
                    case 1: pixel(acc, p, j0, 1, xs, ws, count); break;
                    case 2: pixel(acc, p, j0, 2, xs, ws, count); break;
                    case 3: pixel(acc, p, j0, 3, xs, ws, count); break;
                    default: pixel(acc, p, j0, 4, xs, ws, count); break;
                    }
                    for (int j = 0; j < m; j++) {
                        const int c = 8 * (j0 + j), nc = out_c - c < 8 ? out_c - c : 8;
                        mnh_store8(o + c, nc, acc[j], &p->rq, c, out_zp, lo, hi);
                    }
                }
            }
        }
}
#else
void mn_transpose_conv_s8(const mn_word *args) { mn_transpose_conv_s8_portable(args); }
#endif
