/* DEPTHWISE_CONV_2D, int8: the host port (x86-64 with AVX2) of kernels/depthwise_conv_2d.c, same symbol, same
 * argument words.
 *
 * The paired path (below) runs every call whose sums mnh_fq requantizes (|bias_full| + taps * 2^14 < 2^28, shifts
 * in range; with AVX-512 VNNI, taps 4 at a time by vpdpbusd; 8, 16 and 32 channels' results packed to bytes together);
 * the others run the per-pixel path: per output pixel, channels 16 (then 8) at a time, taps two at a
 * time: the two taps' int8 inputs widened to int16 and interleaved, so one madd per 8 channels adds both taps'
 * products; the weights are interleaved the same way once per call site (mn_host.h's cache). Taps outside the input
 * read a row holding the input zero point, so every window starts from `bias_full` (bias - zp * sum(w): a padded
 * tap's zp * w is taken back and the wrapping sums equal the portable kernel's valid-taps sums bit for bit).
 * Channels past the last 8 are summed one by one the same way. A depth multiplier above 1 first expands each image
 * to one input channel per output channel (channel c repeated `mult` times), which is then a depthwise convolution
 * of multiplier 1.
 */
#define mn_depthwise_conv_2d_s8 mn_depthwise_conv_2d_s8_portable
#include "depthwise_conv_2d.portable.inc"
#undef mn_depthwise_conv_2d_s8
#include "mn_host.h"

#if defined(MNH_AVX2)
enum { MAX_TAPS = 256 };

typedef struct {
    int pairs;     /* taps rounded up to even, halved (a last odd tap pairs with a zero weight) */
    int16_t *w;    /* per 16-channel block and tap pair: 2 x 16 int16 (x16 path); then per pair 16 (x8 path) */
    int32_t *bias; /* bias_full, padded */
    mnh_rq rq;
    int8_t *pad;   /* out_c bytes of the input zero point */
    int8_t *wide;  /* depth multiplier > 1: one image with each input channel repeated per output channel */
} dw_pack;

/* Taps t0, t1 of 16 channels, widened and interleaved: lanes 0-3 / 8-11 of lo and 4-7 / 12-15 of hi. */
static inline void interleave16(const int8_t *a, const int8_t *b, __m256i *lo, __m256i *hi) {
    const __m256i xa = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)a));
    const __m256i xb = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)b));
    *lo = _mm256_unpacklo_epi16(xa, xb), *hi = _mm256_unpackhi_epi16(xa, xb);
}

/* Taps t0, t1 of 8 channels, widened and interleaved, channels in order. */
static inline __m256i interleave8(const int8_t *a, const int8_t *b) {
    const __m128i xa = _mm_cvtepi8_epi16(_mm_loadl_epi64((const __m128i *)a));
    const __m128i xb = _mm_cvtepi8_epi16(_mm_loadl_epi64((const __m128i *)b));
    return _mm256_set_m128i(_mm_unpackhi_epi16(xa, xb), _mm_unpacklo_epi16(xa, xb));
}

static const dw_pack *dw_prepare(const mn_word *args) {
    mnh_slot *slot;
    dw_pack *p = (dw_pack *)mnh_lookup(args, &slot);
    if (p) return p;
    const int mult = MN_I(DEPTH_MULT), in_c = MN_I(IN_C) * mult; /* the channels of the image convolved */
    const int taps = MN_I(F_H) * MN_I(F_W), pairs = (taps + 1) / 2, c16 = in_c / 16;
    const int8_t *filter = MN_P(const int8_t, FILTER);
    p = (dw_pack *)mnh_alloc(sizeof(dw_pack));
    if (!p) return NULL;
    p->pairs = pairs;
    p->w = (int16_t *)mnh_alloc(((size_t)c16 * pairs * 32 + (size_t)pairs * 16) * sizeof(int16_t));
    p->bias = (int32_t *)mnh_alloc(((size_t)in_c + 16) * sizeof(int32_t));
    p->pad = (int8_t *)mnh_alloc((size_t)in_c + 16);
    if (mult > 1 && !(p->wide = (int8_t *)mnh_alloc((size_t)MN_I(IN_H) * MN_I(IN_W) * in_c + 16))) return NULL;
    int32_t *shift = (int32_t *)mnh_alloc((size_t)in_c * sizeof(int32_t)); /* the call's int8 shifts, widened */
    if (!p->w || !p->bias || !p->pad || !shift) return NULL;
    for (int c = 0; c < in_c; c++) shift[c] = MN_P(const int8_t, SHIFT)[c];
    if (!mnh_rq_init(&p->rq, MN_P(const int32_t, MULT), shift, in_c, 16)) return NULL;
    free(shift);
    memcpy(p->bias, MN_P(const int32_t, BIAS_FULL), (size_t)in_c * sizeof(int32_t));
    memset(p->pad, -MN_I(IN_OFF), (size_t)in_c);
    int8_t ta[16], tb[16];
    int16_t *d = p->w;
    for (int c = 0; c + 8 <= in_c; c += c + 16 <= in_c ? 16 : 8) {
        const int width = c + 16 <= in_c ? 16 : 8;
        for (int q = 0; q < pairs; q++) {
            memset(ta, 0, 16), memset(tb, 0, 16);
            memcpy(ta, filter + (size_t)(2 * q) * in_c + c, (size_t)width);
            if (2 * q + 1 < taps) memcpy(tb, filter + (size_t)(2 * q + 1) * in_c + c, (size_t)width);
            if (width == 16) {
                __m256i lo, hi;
                interleave16(ta, tb, &lo, &hi);
                _mm256_storeu_si256((__m256i *)d, lo), _mm256_storeu_si256((__m256i *)(d + 16), hi);
                d += 32;
            } else {
                _mm256_storeu_si256((__m256i *)d, interleave8(ta, tb));
                d += 16;
            }
        }
        if (width == 8) break;
    }
    mnh_keep(slot, args, p);
    return p;
}

/* ---- the paired path: a filter row's taps two (VNNI: four) at a time from rows of column steps -----------------
 * A paired row holds, at each position x of a zero-point-padded input row and per 8-channel block, the 8 pairs
 * (in[y][x][c], in[y][x + dw][c]) as int16: taps fx and fx + 1 of a window are then one madd with the pair of their
 * weights, and an odd row's last tap pairs with a zero weight. Only the positions windows start steps at are built
 * (every other one under an even stride), and only the (fh - 1) * dh + 1 rows one output row reads are kept, in a
 * ring (the scratch below, shared by every call site), each built once per image. Per output row and 8-channel
 * block, the block's weights and requantization parameters stay in registers; requantization is mnh_fq's (the sums
 * are bounded: |acc| <= |bias_full| + taps * 128 * 128), by mnh_fr (zp and rounding in the product's add) where
 * results are packed to bytes before the clamp (pair_group, _two, _px2).
 *
 * With AVX-512 VNNI (vpdpbusd: unsigned x signed bytes, 4 products a lane) a row holds instead, per position and
 * block, the 8 quads (u[x][c], u[x + dw][c], u[x + 2 dw][c], u[x + 3 dw][c]) of u = in + 128 as uint8 (the border
 * zp + 128): the same 32 bytes per position and block, a filter row's taps 4 at a time (taps past its end weigh 0).
 * sum(u * w) = sum(in * w) + 128 * sum(w), so the sums start from bias_full - 128 * sum(w) of their channel
 * (wrapping; the int32 sums are the AVX2 path's bit for bit). MNH_NO_VNNI builds the pairs on a VNNI host too. */
#if defined(__AVX512VNNI__) && defined(__AVX512VL__) && !defined(MNH_NO_VNNI)
#define PAIR_VNNI 1
typedef int8_t pair_w; /* the packed weights */
enum { PAIR_STEP = 4 };
#define PAIR_DOT(a, x, w) _mm256_dpbusd_epi32(a, x, w)
#else
typedef int16_t pair_w;
enum { PAIR_STEP = 2 };
#define PAIR_DOT(a, x, w) _mm256_add_epi32(a, _mm256_madd_epi16(x, w))
#endif
enum { PAIR_VEC = 8 * PAIR_STEP }; /* pair_w per step and 8-channel block: one vector */

typedef struct {
    int c8, fw2, g, xn;  /* 8-channel blocks; steps per filter row; positions built every g; positions per row */
    int c32;             /* 32-channel groups (VNNI; 0 otherwise): blocks 4 * c32 on hold channels in order */
    int ring;            /* paired rows kept */
    pair_w *w;           /* per block, row and step: PAIR_VEC values */
    int32_t *bias;       /* the sums' start: bias_full (VNNI: less 128 * sum(w)), padded to whole blocks */
    mnh_fq fq;
    mnh_fr fr;           /* where fq.ok: pair_group's, _two's and _px2's requantization (the same values) */
} pair_pack;

static int16_t *pair_scratch;
static int8_t *pair_row;
static size_t pair_cap, pair_row_cap;

/* cached under args + 1: the other path's pack is cached under args */
static const pair_pack *pair_prepare(const mn_word *args, int wp) {
    mnh_slot *slot;
    pair_pack *p = (pair_pack *)mnh_lookup(args + 1, &slot);
    if (p) return p;
    const int c = MN_I(IN_C) * MN_I(DEPTH_MULT), fh = MN_I(F_H), fw = MN_I(F_W), c8 = (c + 7) / 8;
    const int fw2 = (fw + PAIR_STEP - 1) / PAIR_STEP;
    const int taps = fh * fw;
#if defined(PAIR_VNNI)
    const int c32 = c / 32;
#else
    const int c32 = 0;
#endif
    p = (pair_pack *)mnh_alloc(sizeof(pair_pack));
    if (!p) return NULL;
    p->c8 = c8, p->fw2 = fw2, p->c32 = c32, p->g = MN_I(S_W) % 2 == 0 ? 2 : 1, p->xn = (wp + p->g - 1) / p->g;
    p->ring = (fh - 1) * MN_I(D_H) + 1;
    p->w = (pair_w *)mnh_alloc((size_t)c8 * fh * fw2 * PAIR_VEC * sizeof(pair_w));
    p->bias = (int32_t *)mnh_alloc((size_t)c8 * 8 * sizeof(int32_t));
    int32_t *shift = (int32_t *)mnh_alloc((size_t)c8 * 8 * sizeof(int32_t));
    int32_t *mult = (int32_t *)mnh_alloc((size_t)c8 * 8 * sizeof(int32_t));
    int64_t *bound = (int64_t *)mnh_alloc((size_t)c8 * 8 * sizeof(int64_t));
    if (!p->w || !p->bias || !shift || !mult || !bound) return NULL;
    const int8_t *filter = MN_P(const int8_t, FILTER);
    for (int l = 0; l < c; l++) { /* lane l of block l / 8 holds channel ch */
        const int j = l / 8 % 4, e = l % 8, ch = l < 32 * c32 ? l / 32 * 32 + e / 4 * 16 + 4 * j + e % 4 : l;
        pair_w *d = p->w + (size_t)(l / 8) * fh * fw2 * PAIR_VEC + PAIR_STEP * e;
        uint32_t sum = 0; /* of the channel's weights, wrapping */
        for (int fy = 0; fy < fh; fy++)
            for (int fx = 0; fx < fw; fx++) {
                const int8_t v = filter[(size_t)(fy * fw + fx) * c + ch];
                d[(fy * fw2 + fx / PAIR_STEP) * PAIR_VEC + fx % PAIR_STEP] = v;
                sum += (uint32_t)(int32_t)v;
            }
        const int32_t bias_full = MN_P(const int32_t, BIAS_FULL)[ch];
#if defined(PAIR_VNNI)
        p->bias[l] = (int32_t)((uint32_t)bias_full - 128u * sum);
#else
        p->bias[l] = bias_full, (void)sum;
#endif
        shift[l] = MN_P(const int8_t, SHIFT)[ch], mult[l] = MN_P(const int32_t, MULT)[ch];
        bound[l] = (bias_full < 0 ? -(int64_t)bias_full : bias_full) + (int64_t)taps * 128 * 128;
    }
    if (!mnh_fq_init(&p->fq, mult, shift, bound, MN_I(OUT_ZP), c, 8)) return NULL;
    if (p->fq.ok && !mnh_fr_init(&p->fr, &p->fq, c, 8)) return NULL;
    free(shift), free(mult), free(bound);
    mnh_keep(slot, args + 1, p);
    return p;
}

#if defined(PAIR_VNNI)
/* pair_build's quads of exactly 16 channels (two blocks): a loop of its own (kept apart: inlined, it changed how the
 * compiler laid out the general loop) over xn positions `step` bytes apart, taps ds bytes apart. */
__attribute__((noinline)) static void pair_build16(int16_t *d, const int8_t *a, int xn, size_t step, size_t ds) {
    for (int x = 0; x < xn; x++, a += step, d += 32) {
        const __m128i t0 = _mm_loadu_si128((const __m128i *)a);
        const __m128i t1 = _mm_loadu_si128((const __m128i *)(a + ds));
        const __m128i t2 = _mm_loadu_si128((const __m128i *)(a + 2 * ds));
        const __m128i t3 = _mm_loadu_si128((const __m128i *)(a + 3 * ds));
        const __m128i l01 = _mm_unpacklo_epi8(t0, t1), h01 = _mm_unpackhi_epi8(t0, t1);
        const __m128i l23 = _mm_unpacklo_epi8(t2, t3), h23 = _mm_unpackhi_epi8(t2, t3);
        _mm256_storeu_si256((__m256i *)d, _mm256_set_m128i(_mm_unpackhi_epi16(l01, l23), _mm_unpacklo_epi16(l01, l23)));
        _mm256_storeu_si256((__m256i *)(d + 16),
                            _mm256_set_m128i(_mm_unpackhi_epi16(h01, h23), _mm_unpacklo_epi16(h01, h23)));
    }
}
#endif

/* Paired row y (padded coordinates) of one image into d: the padded int8 row first (channels repeated `mult`
 * times; VNNI: u = x + 128, the border zp + 128), then its pairs (quads: 32 channels at a time in pair_group's
 * order where c32 says, then 16 in order), 16 channels at a time where they are whole. */
static void pair_build(const pair_pack *p, int16_t *d, int y, const int8_t *image, int in_h, int in_w, int in_c,
                       int mult, int pad_t, int pad_l, int wp, int dw, int8_t zp) {
    const int c = in_c * mult, c8 = p->c8, g = p->g, cols = mn_min(in_w, wp - pad_l), iy = y - pad_t;
    const size_t len = ((size_t)wp + (PAIR_STEP - 1) * dw) * c;
#if defined(PAIR_VNNI)
    const uint8_t flip = 0x80; /* u = x + 128 */
#else
    const uint8_t flip = 0;
#endif
    int8_t *r = pair_row;
    if (iy < 0 || iy >= in_h) {
        memset(r, zp ^ flip, len + 16);
    } else {
        const int8_t *src = image + (size_t)iy * in_w * in_c;
        int8_t *dst = r + (size_t)pad_l * c;
        memset(r, zp ^ flip, (size_t)pad_l * c);
        memset(dst + (size_t)cols * c, zp ^ flip, len + 16 - (size_t)(pad_l + cols) * c);
        if (mult == 1) {
#if defined(PAIR_VNNI)
            const __m256i f = _mm256_set1_epi8((char)flip);
            int i = 0;
            for (; i + 32 <= cols * c; i += 32)
                _mm256_storeu_si256((__m256i *)(dst + i),
                                    _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(src + i)), f));
            for (; i < cols * c; i++) dst[i] = (int8_t)(src[i] ^ flip);
#else
            memcpy(dst, src, (size_t)cols * c);
#endif
        } else if (mult % 8 == 0) {
            for (int i = 0; i < cols * in_c; i++) {
                const uint64_t v = (uint8_t)(src[i] ^ flip) * 0x0101010101010101ull;
                for (int m = 0; m < mult; m += 8, dst += 8) memcpy(dst, &v, 8);
            }
        } else {
            for (int i = 0; i < cols * in_c; i++)
                for (int m = 0; m < mult; m++) *dst++ = (int8_t)(src[i] ^ flip);
        }
    }
#if defined(PAIR_VNNI)
    const size_t ds = (size_t)dw * c;
    if (c8 == 1) { /* one block: a tight loop */
        const int8_t *a = r;
        for (int x = 0, xn = p->xn; x < xn; x++, a += (size_t)g * c, d += 16) {
            const __m128i l01 = _mm_unpacklo_epi8(_mm_loadl_epi64((const __m128i *)a),
                                                  _mm_loadl_epi64((const __m128i *)(a + ds)));
            const __m128i l23 = _mm_unpacklo_epi8(_mm_loadl_epi64((const __m128i *)(a + 2 * ds)),
                                                  _mm_loadl_epi64((const __m128i *)(a + 3 * ds)));
            _mm256_storeu_si256((__m256i *)d,
                                _mm256_set_m128i(_mm_unpackhi_epi16(l01, l23), _mm_unpacklo_epi16(l01, l23)));
        }
        return;
    }
    if (c8 == 2 && c == 16) { /* two blocks: a tight loop too */
        pair_build16(d, r, p->xn, (size_t)g * 16, ds);
        return;
    }
    const int xn = p->xn, k32 = 4 * p->c32; /* locals: the stores below may alias *p */
    for (int x = 0; x < xn; x++) {
        const int8_t *a = r + (size_t)x * g * c;
        int k = 0;
        for (; k < k32; k += 4, d += 64) { /* blocks of channels 0-3 and 16-19, 4-7 and 20-23, ... */
            const __m256i t0 = _mm256_loadu_si256((const __m256i *)(a + 8 * k));
            const __m256i t1 = _mm256_loadu_si256((const __m256i *)(a + ds + 8 * k));
            const __m256i t2 = _mm256_loadu_si256((const __m256i *)(a + 2 * ds + 8 * k));
            const __m256i t3 = _mm256_loadu_si256((const __m256i *)(a + 3 * ds + 8 * k));
            const __m256i l01 = _mm256_unpacklo_epi8(t0, t1), h01 = _mm256_unpackhi_epi8(t0, t1);
            const __m256i l23 = _mm256_unpacklo_epi8(t2, t3), h23 = _mm256_unpackhi_epi8(t2, t3);
            _mm256_storeu_si256((__m256i *)d, _mm256_unpacklo_epi16(l01, l23));
            _mm256_storeu_si256((__m256i *)(d + 16), _mm256_unpackhi_epi16(l01, l23));
            _mm256_storeu_si256((__m256i *)(d + 32), _mm256_unpacklo_epi16(h01, h23));
            _mm256_storeu_si256((__m256i *)(d + 48), _mm256_unpackhi_epi16(h01, h23));
        }
        for (; k + 2 <= c8; k += 2, d += 32) {
            const __m128i t0 = _mm_loadu_si128((const __m128i *)(a + 8 * k));
            const __m128i t1 = _mm_loadu_si128((const __m128i *)(a + ds + 8 * k));
            const __m128i t2 = _mm_loadu_si128((const __m128i *)(a + 2 * ds + 8 * k));
            const __m128i t3 = _mm_loadu_si128((const __m128i *)(a + 3 * ds + 8 * k));
            const __m128i l01 = _mm_unpacklo_epi8(t0, t1), h01 = _mm_unpackhi_epi8(t0, t1);
            const __m128i l23 = _mm_unpacklo_epi8(t2, t3), h23 = _mm_unpackhi_epi8(t2, t3);
            _mm256_storeu_si256((__m256i *)d,
                                _mm256_set_m128i(_mm_unpackhi_epi16(l01, l23), _mm_unpacklo_epi16(l01, l23)));
            _mm256_storeu_si256((__m256i *)(d + 16),
                                _mm256_set_m128i(_mm_unpackhi_epi16(h01, h23), _mm_unpacklo_epi16(h01, h23)));
        }
        if (k < c8) {
            const __m128i t0 = _mm_loadl_epi64((const __m128i *)(a + 8 * k));
            const __m128i t1 = _mm_loadl_epi64((const __m128i *)(a + ds + 8 * k));
            const __m128i t2 = _mm_loadl_epi64((const __m128i *)(a + 2 * ds + 8 * k));
            const __m128i t3 = _mm_loadl_epi64((const __m128i *)(a + 3 * ds + 8 * k));
            const __m128i l01 = _mm_unpacklo_epi8(t0, t1), l23 = _mm_unpacklo_epi8(t2, t3);
            _mm256_storeu_si256((__m256i *)d,
                                _mm256_set_m128i(_mm_unpackhi_epi16(l01, l23), _mm_unpacklo_epi16(l01, l23)));
            d += 16;
        }
    }
#else
    for (int x = 0; x < p->xn; x++) {
        const int8_t *a = r + (size_t)x * g * c, *b = a + (size_t)dw * c;
        int k = 0;
        for (; k + 2 <= c8; k += 2, d += 32) {
            const __m256i xa = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(a + 8 * k)));
            const __m256i xb = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(b + 8 * k)));
            const __m256i lo = _mm256_unpacklo_epi16(xa, xb), hi = _mm256_unpackhi_epi16(xa, xb);
            _mm256_storeu_si256((__m256i *)d, _mm256_permute2x128_si256(lo, hi, 0x20));
            _mm256_storeu_si256((__m256i *)(d + 16), _mm256_permute2x128_si256(lo, hi, 0x31));
        }
        if (k < c8) {
            const __m128i xa = _mm_cvtepi8_epi16(_mm_loadl_epi64((const __m128i *)(a + 8 * k)));
            const __m128i xb = _mm_cvtepi8_epi16(_mm_loadl_epi64((const __m128i *)(b + 8 * k)));
            _mm256_storeu_si256((__m256i *)d, _mm256_set_m128i(_mm_unpackhi_epi16(xa, xb), _mm_unpacklo_epi16(xa, xb)));
            d += 16;
        }
    }
#endif
}

enum { PAIR_MAX_FH = 64, PAIR_MAXW = 32 }; /* PAIR_MAXW: weight vectors a row function holds in registers */

/* The sums of 8-channel block j of a window at position `at` of the paired rows rw (fh rows of fw2 steps, qs int16
 * apart; the block's vectors 16 int16 apart): from `bias`, weight vector t = (j fh + fy) fw2 + q from w where
 * t < PAIR_MAXW, else from wk. */
__attribute__((always_inline)) static inline __m256i pair_sum(const int16_t *const *rw, size_t at, int j, int fh,
                                                              int fw2, size_t qs, const __m256i *w, const pair_w *wk,
                                                              __m256i bias) {
    __m256i a = bias;
    for (int fy = 0; fy < fh; fy++)
        for (int q = 0; q < fw2; q++) {
            const int t = (j * fh + fy) * fw2 + q;
            const __m256i v = _mm256_loadu_si256((const __m256i *)(rw[fy] + at + 16 * j + q * qs));
            const __m256i wt = t < PAIR_MAXW ? w[t] : _mm256_loadu_si256((const __m256i *)(wk + PAIR_VEC * t));
            a = PAIR_DOT(a, v, wt);
        }
    return a;
}

/* One output row of one 8-channel block from the paired rows rows[fy] (FH x FW2 steps; constants where the caller
 * specialises); xs, qs: int16 (a position and block: 32 bytes) between the windows of neighbouring pixels, between
 * a row's steps. */
__attribute__((always_inline)) static inline void pair_block(const pair_pack *p, int k, const int16_t *const *rows,
                                                             int8_t *o, int out_w, int c, size_t xs, size_t qs,
                                                             int32_t lo, int32_t hi, int fh, int fw2, int left,
                                                             int e0) {
    const int16_t *rw[PAIR_MAX_FH]; /* a local copy: registers where fh is a constant (the stores alias rows) */
    for (int fy = 0; fy < fh; fy++) rw[fy] = rows[fy];
    __m256i w[PAIR_MAXW];
    const pair_w *wk = p->w + (size_t)k * fh * fw2 * PAIR_VEC;
    for (int t = 0; t < fh * fw2 && t < PAIR_MAXW; t++)
        w[t] = _mm256_loadu_si256((const __m256i *)(wk + PAIR_VEC * t));
    const __m256i bias = _mm256_loadu_si256((const __m256i *)(p->bias + 8 * k));
    const mnh_fq8 r = mnh_fq8_load(&p->fq, 8 * k, lo, hi);
    const int n = mn_min(8, c - 8 * k);
    const size_t kk = (size_t)k * 16;
    o += 8 * k;
    for (int ox = 0; ox < out_w; ox++, o += c) {
        const __m256i a = pair_sum(rw, (size_t)ox * xs + kk, 0, fh, fw2, qs, w, wk, bias);
        const __m128i b = mnh_bytes8(mnh_fq8_apply(a, &r, left, e0));
        if (n == 8) {
            _mm_storel_epi64((__m128i *)o, b);
        } else {
            int8_t tmp[16];
            _mm_storeu_si128((__m128i *)tmp, b);
            memcpy(o, tmp, (size_t)n);
        }
    }
}

/* One output row of the 32 channels of group gi (blocks 4 gi .. 4 gi + 3, holding channels 0-3 and 16-19, 4-7 and
 * 20-23, 8-11 and 24-27, 12-15 and 28-31 of the group): the in-lane packs of the four blocks' results put the 32
 * bytes in channel order, then clamped to [lo, hi] as bytes. */
__attribute__((always_inline)) static inline void pair_group(const pair_pack *p, int gi, const int16_t *const *rows,
                                                             int8_t *o, int out_w, int c, size_t xs, size_t qs,
                                                             int32_t lo, int32_t hi, int fh, int fw2, int left) {
    const int16_t *rw[PAIR_MAX_FH]; /* a local copy: registers where fh is a constant (the stores alias rows) */
    for (int fy = 0; fy < fh; fy++) rw[fy] = rows[fy];
    const int nw = 4 * fh * fw2; /* vectors of weights: per block, row and step */
    __m256i w[PAIR_MAXW], bias[4];
    mnh_fr8 r[4];
    const pair_w *wk = p->w + (size_t)gi * nw * PAIR_VEC;
    for (int t = 0; t < nw && t < PAIR_MAXW; t++) w[t] = _mm256_loadu_si256((const __m256i *)(wk + PAIR_VEC * t));
    for (int j = 0; j < 4; j++) {
        bias[j] = _mm256_loadu_si256((const __m256i *)(p->bias + 32 * gi + 8 * j));
        r[j] = mnh_fr8_load(&p->fr, 32 * gi + 8 * j);
    }
    const __m256i blo = _mm256_set1_epi8((char)lo), bhi = _mm256_set1_epi8((char)hi);
    const size_t kk = (size_t)gi * 64;
    o += 32 * gi;
    for (int ox = 0; ox < out_w; ox++, o += c) {
        __m256i a[4];
        for (int j = 0; j < 4; j++)
            a[j] = mnh_fr8_apply(pair_sum(rw, (size_t)ox * xs + kk, j, fh, fw2, qs, w, wk, bias[j]), &r[j], left);
        const __m256i b = _mm256_packs_epi16(_mm256_packs_epi32(a[0], a[1]), _mm256_packs_epi32(a[2], a[3]));
        _mm256_storeu_si256((__m256i *)o, _mm256_min_epi8(_mm256_max_epi8(b, blo), bhi));
    }
}

/* One output row of the 16 channels of blocks k, k + 1 (in order): the in-lane packs give channels 0-3, 8-11 |
 * 4-7, 12-15, put in order by one permute, then clamped as bytes. */
__attribute__((always_inline)) static inline void pair_two(const pair_pack *p, int k, const int16_t *const *rows,
                                                           int8_t *o, int out_w, int c, size_t xs, size_t qs,
                                                           int32_t lo, int32_t hi, int fh, int fw2, int left) {
    const int16_t *rw[PAIR_MAX_FH]; /* a local copy: registers where fh is a constant (the stores alias rows) */
    for (int fy = 0; fy < fh; fy++) rw[fy] = rows[fy];
    const int nw = 2 * fh * fw2; /* vectors of weights: per block, row and step */
    __m256i w[PAIR_MAXW], bias[2];
    mnh_fr8 r[2];
    const pair_w *wk = p->w + (size_t)k * fh * fw2 * PAIR_VEC;
    for (int t = 0; t < nw && t < PAIR_MAXW; t++) w[t] = _mm256_loadu_si256((const __m256i *)(wk + PAIR_VEC * t));
    for (int j = 0; j < 2; j++) {
        bias[j] = _mm256_loadu_si256((const __m256i *)(p->bias + 8 * (k + j)));
        r[j] = mnh_fr8_load(&p->fr, 8 * (k + j));
    }
    const __m128i blo = _mm_set1_epi8((char)lo), bhi = _mm_set1_epi8((char)hi);
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    const size_t kk = (size_t)k * 16;
    o += 8 * k;
    for (int ox = 0; ox < out_w; ox++, o += c) {
        __m256i a[2];
        for (int j = 0; j < 2; j++)
            a[j] = mnh_fr8_apply(pair_sum(rw, (size_t)ox * xs + kk, j, fh, fw2, qs, w, wk, bias[j]), &r[j], left);
        const __m256i h = _mm256_packs_epi32(a[0], a[1]);
        const __m128i b = _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(_mm256_packs_epi16(h, h), order));
        _mm_storeu_si128((__m128i *)o, _mm_min_epi8(_mm_max_epi8(b, blo), bhi));
    }
}

/* One output row of exactly 8 channels (one block), two pixels at a time (adjacent in the output): pair_two's
 * packs over the two pixels' results; an odd last pixel is computed twice and stored once. */
__attribute__((always_inline)) static inline void pair_px2(const pair_pack *p, const int16_t *const *rows, int8_t *o,
                                                           int out_w, size_t xs, size_t qs, int32_t lo, int32_t hi,
                                                           int fh, int fw2, int left) {
    const int16_t *rw[PAIR_MAX_FH]; /* a local copy: registers where fh is a constant (the stores alias rows) */
    for (int fy = 0; fy < fh; fy++) rw[fy] = rows[fy];
    __m256i w[PAIR_MAXW];
    for (int t = 0; t < fh * fw2 && t < PAIR_MAXW; t++)
        w[t] = _mm256_loadu_si256((const __m256i *)(p->w + PAIR_VEC * t));
    const __m256i bias = _mm256_loadu_si256((const __m256i *)p->bias);
    const mnh_fr8 r = mnh_fr8_load(&p->fr, 0);
    const __m128i blo = _mm_set1_epi8((char)lo), bhi = _mm_set1_epi8((char)hi);
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    for (int ox = 0; ox < out_w; ox += 2, o += 16) {
        __m256i a[2];
        for (int j = 0; j < 2; j++) /* pixels ox, ox + 1 of the one block */
            a[j] = mnh_fr8_apply(pair_sum(rw, (size_t)mn_min(ox + j, out_w - 1) * xs, 0, fh, fw2, qs, w, p->w, bias),
                                 &r, left);
        const __m256i h = _mm256_packs_epi32(a[0], a[1]);
        const __m128i b = _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(_mm256_packs_epi16(h, h), order));
        const __m128i y = _mm_min_epi8(_mm_max_epi8(b, blo), bhi);
        if (ox + 1 < out_w) _mm_storeu_si128((__m128i *)o, y);
        else _mm_storel_epi64((__m128i *)o, y);
    }
}

static int dw_paired(const mn_word *args) {
    const int mult = MN_I(DEPTH_MULT), in_c = MN_I(IN_C), c = in_c * mult, fh = MN_I(F_H), fw = MN_I(F_W);
    const int dh = MN_I(D_H), dw = MN_I(D_W), sh = MN_I(S_H), sw = MN_I(S_W);
    const int out_h = MN_I(OUT_H), out_w = MN_I(OUT_W), in_h = MN_I(IN_H), in_w = MN_I(IN_W);
    const int wp = mn_max(in_w + MN_I(PAD_L), (out_w - 1) * sw + (fw - 1) * dw + 1);
    if (mult < 1 || fh > PAIR_MAX_FH) return 0;
    const pair_pack *p = pair_prepare(args, wp);
    if (!p || !p->fq.ok) return 0;
    if (c >= 8 && (MN_I(ACT_MIN) < -128 || MN_I(ACT_MAX) > 127)) return 0; /* pair_group, _two, _px2 clamp bytes */
    const size_t row = (size_t)p->xn * p->c8 * 16, need = (size_t)p->ring * row;
    const size_t row_need = ((size_t)wp + (PAIR_STEP - 1) * dw) * c + 16; /* pair_build's reads and writes */
    if (need > pair_cap) {
        int16_t *b = (int16_t *)realloc(pair_scratch, need * sizeof(int16_t));
        if (!b) return 0;
        pair_scratch = b, pair_cap = need;
    }
    if (row_need > pair_row_cap) {
        int8_t *b = (int8_t *)realloc(pair_row, row_need);
        if (!b) return 0;
        pair_row = b, pair_row_cap = row_need;
    }
    int8_t *out = MN_P(int8_t, OUT);
    const int8_t *in = MN_P(const int8_t, IN);
    const int32_t lo = MN_I(ACT_MIN), hi = MN_I(ACT_MAX);
    const int left = p->fq.any_left, e0 = p->fq.any_e0, fw2 = p->fw2, ring = p->ring, pad_t = MN_I(PAD_T);
    const size_t xs = (size_t)(sw / p->g) * p->c8 * 16, qs = (size_t)(PAIR_STEP * dw / p->g) * p->c8 * 16;
    const int8_t zp = (int8_t)-MN_I(IN_OFF);
    for (int b = 0; b < MN_I(N); b++) {
        const int8_t *image = in + (size_t)b * in_h * in_w * in_c;
        int8_t *ob = out + (size_t)b * out_h * out_w * c;
        int built = 0; /* paired rows built so far: rows [0, built) */
        for (int oy = 0; oy < out_h; oy++) {
            const int16_t *rows[PAIR_MAX_FH];
            const int last = oy * sh + (fh - 1) * dh;
            if (built < oy * sh) built = oy * sh; /* rows no window reads */
            for (; built <= last; built++)
                pair_build(p, pair_scratch + (size_t)(built % ring) * row, built, image, in_h, in_w, in_c, mult, pad_t,
                           MN_I(PAD_L), wp, dw, zp);
            for (int fy = 0; fy < fh; fy++) rows[fy] = pair_scratch + (size_t)((oy * sh + fy * dh) % ring) * row;
            int8_t *o = ob + (size_t)oy * out_w * c;
            for (int gi = 0; gi < p->c32; gi++) {
                if (fh == 3 && fw2 == (3 + PAIR_STEP - 1) / PAIR_STEP && !left)
                    pair_group(p, gi, rows, o, out_w, c, xs, qs, lo, hi, 3, (3 + PAIR_STEP - 1) / PAIR_STEP, 0);
                else if (!left)
                    pair_group(p, gi, rows, o, out_w, c, xs, qs, lo, hi, fh, fw2, 0);
                else
                    pair_group(p, gi, rows, o, out_w, c, xs, qs, lo, hi, fh, fw2, 1);
            }
            if (c == 8) {
                if (fh == 3 && fw2 == (3 + PAIR_STEP - 1) / PAIR_STEP && !left)
                    pair_px2(p, rows, o, out_w, xs, qs, lo, hi, 3, (3 + PAIR_STEP - 1) / PAIR_STEP, 0);
                else if (!left)
                    pair_px2(p, rows, o, out_w, xs, qs, lo, hi, fh, fw2, 0);
                else
                    pair_px2(p, rows, o, out_w, xs, qs, lo, hi, fh, fw2, 1);
                continue;
            }
            int k = 4 * p->c32;
            for (; 8 * k + 16 <= c; k += 2) {
                if (fh == 3 && fw2 == (3 + PAIR_STEP - 1) / PAIR_STEP && !left)
                    pair_two(p, k, rows, o, out_w, c, xs, qs, lo, hi, 3, (3 + PAIR_STEP - 1) / PAIR_STEP, 0);
                else if (!left)
                    pair_two(p, k, rows, o, out_w, c, xs, qs, lo, hi, fh, fw2, 0);
                else
                    pair_two(p, k, rows, o, out_w, c, xs, qs, lo, hi, fh, fw2, 1);
            }
            for (; k < p->c8; k++) {
                if (fh == 3 && fw2 == (3 + PAIR_STEP - 1) / PAIR_STEP && !left && !e0)
                    pair_block(p, k, rows, o, out_w, c, xs, qs, lo, hi, 3, (3 + PAIR_STEP - 1) / PAIR_STEP, 0, 0);
                else if (!left && !e0)
                    pair_block(p, k, rows, o, out_w, c, xs, qs, lo, hi, fh, fw2, 0, 0);
                else
                    pair_block(p, k, rows, o, out_w, c, xs, qs, lo, hi, fh, fw2, 1, 1);
            }
        }
    }
    return 1;
}

void mn_depthwise_conv_2d_s8(const mn_word *args) {
    if (dw_paired(args)) return;
    const int mult = MN_I(DEPTH_MULT), in_c = MN_I(IN_C) * mult, taps = MN_I(F_H) * MN_I(F_W);
    const dw_pack *p = mult >= 1 && taps <= MAX_TAPS ? dw_prepare(args) : NULL;
    if (!p) { mn_depthwise_conv_2d_s8_portable(args); return; }
    int8_t *out = MN_P(int8_t, OUT);
    const int8_t *in = MN_P(const int8_t, IN), *filter = MN_P(const int8_t, FILTER);
    const int n = MN_I(N), in_h = MN_I(IN_H), in_w = MN_I(IN_W), out_h = MN_I(OUT_H), out_w = MN_I(OUT_W);
    const int fh = MN_I(F_H), fw = MN_I(F_W), sh = MN_I(S_H), sw = MN_I(S_W), dh = MN_I(D_H), dw = MN_I(D_W);
    const int pad_t = MN_I(PAD_T), pad_l = MN_I(PAD_L), stage = MN_I(STAGE), pairs = p->pairs;
    const int32_t out_zp = MN_I(OUT_ZP), lo = MN_I(ACT_MIN), hi = MN_I(ACT_MAX);
    const int c16 = in_c / 16 * 16;
    const int8_t *x[MAX_TAPS + 1];
    int8_t staged[stage ? in_c : 1];

    for (int b = 0; b < n; b++) {
        const int8_t *image = in + (size_t)b * in_h * in_w * MN_I(IN_C);
        if (mult > 1) { /* every input read before any output is stored */
            const int8_t *src = image;
            int8_t *dst = p->wide;
            for (int i = 0; i < in_h * in_w * MN_I(IN_C); i++, dst += mult) {
                if (mult >= 8) { /* 8 bytes at a time; a last partial word spills into the next channel's bytes */
                    const uint64_t v = (uint8_t)src[i] * 0x0101010101010101ull;
                    for (int m = 0; m < mult; m += 8) memcpy(dst + m, &v, 8);
                } else {
                    for (int m = 0; m < mult; m++) dst[m] = src[i];
                }
            }
            image = p->wide;
        }
        for (int oy = 0; oy < out_h; oy++)
            for (int ox = 0; ox < out_w; ox++) {
                const int iy0 = oy * sh - pad_t, ix0 = ox * sw - pad_l;
                if (iy0 >= 0 && iy0 + (fh - 1) * dh < in_h && ix0 >= 0 && ix0 + (fw - 1) * dw < in_w) {
                    for (int fy = 0, t = 0; fy < fh; fy++) {
                        const int8_t *r = image + ((size_t)(iy0 + fy * dh) * in_w + ix0) * in_c;
                        for (int fx = 0; fx < fw; fx++, t++) x[t] = r + (size_t)fx * dw * in_c;
                    }
                } else {
                    for (int fy = 0, t = 0; fy < fh; fy++)
                        for (int fx = 0; fx < fw; fx++, t++) {
                            const int iy = iy0 + fy * dh, ix = ix0 + fx * dw;
                            x[t] = iy < 0 || iy >= in_h || ix < 0 || ix >= in_w ? p->pad
                                                                                : image + ((size_t)iy * in_w + ix) * in_c;
                        }
                }
                x[taps] = p->pad; /* an odd last tap's partner (its weights are 0) */
                int8_t *o = stage ? staged : out + (((size_t)b * out_h + oy) * out_w + ox) * in_c;
                const int16_t *w = p->w;
                int c = 0;
                for (; c < c16; c += 16) {
                    __m256i a_lo = _mm256_setzero_si256(), a_hi = _mm256_setzero_si256();
                    for (int q = 0; q < pairs; q++, w += 32) {
                        __m256i v_lo, v_hi;
                        interleave16(x[2 * q] + c, x[2 * q + 1] + c, &v_lo, &v_hi);
                        a_lo = _mm256_add_epi32(a_lo, _mm256_madd_epi16(v_lo, _mm256_loadu_si256((const __m256i *)w)));
                        a_hi = _mm256_add_epi32(a_hi, _mm256_madd_epi16(v_hi,
                                                                        _mm256_loadu_si256((const __m256i *)(w + 16))));
                    }
                    const __m256i s0 = _mm256_permute2x128_si256(a_lo, a_hi, 0x20);
                    const __m256i s1 = _mm256_permute2x128_si256(a_lo, a_hi, 0x31);
                    mnh_store8(o + c, 8, _mm256_add_epi32(s0, _mm256_loadu_si256((const __m256i *)(p->bias + c))),
                               &p->rq, c, out_zp, lo, hi);
                    mnh_store8(o + c + 8, 8, _mm256_add_epi32(s1, _mm256_loadu_si256((const __m256i *)(p->bias + c + 8))),
                               &p->rq, c + 8, out_zp, lo, hi);
                }
                if (c + 8 <= in_c) {
                    __m256i a = _mm256_loadu_si256((const __m256i *)(p->bias + c));
                    for (int q = 0; q < pairs; q++, w += 16)
                        a = _mm256_add_epi32(a, _mm256_madd_epi16(interleave8(x[2 * q] + c, x[2 * q + 1] + c),
                                                                  _mm256_loadu_si256((const __m256i *)w)));
                    mnh_store8(o + c, 8, a, &p->rq, c, out_zp, lo, hi);
                    c += 8;
                }
                for (; c < in_c; c++) {
                    uint32_t a = (uint32_t)p->bias[c];
                    for (int t = 0; t < taps; t++) a += (uint32_t)(x[t][c] * filter[(size_t)t * in_c + c]);
                    o[c] = mn_requant_s8((int32_t)a, p->rq.mult[c], p->rq.shift[c], out_zp, lo, hi);
                }
                if (stage) memcpy(out + (((size_t)b * out_h + oy) * out_w + ox) * in_c, staged, (size_t)in_c);
            }
    }
}
#else
void mn_depthwise_conv_2d_s8(const mn_word *args) { mn_depthwise_conv_2d_s8_portable(args); }
#endif
