/* SignalFilterBank, the host port (x86-64 with AVX2) of kernels/signal_filter_bank.c, same symbol, same argument
 * words.
 *
 * Channel c sums the falling edge of band c and the rising edge of band c + 1 (the portable kernel's two targets per
 * band, turned around). The bands are constants of the call site, so they are laid out once: the usual chain (band
 * b is channel b's, b = 0 .. channels, widths a multiple of 4, as mel tables are) reads each band's bins once for
 * both edges, bands grouped by width, and keeps each edge's four lanes as they are (two stores, no shuffle; a
 * channel's vector is then one add of two of them); other tables go channel by channel over runs of bins. Either way
 * products go into uint64 lanes in any order (the sums wrap: order does not matter), four channels are reduced
 * together. A product is mul_epi32 of the weight sign-extended to 32 or 64 bits and the bin: both low 32-bit halves
 * as signed, the exact int16 x uint32 product (at most 2^47 in magnitude, the portable kernel's value mod 2^64) while
 * the bin is below 2^31; a frame with a bin at or above 2^31 runs the portable kernel. A run's last width % 4
 * products are the portable kernel's scalar arithmetic. The weights are read on every call (they may be a model
 * input), so the products themselves (about 13 vector instructions per 8 bins, both edges) are most of the cost.
 */
#define mn_signal_filter_bank_u32 mn_signal_filter_bank_u32_portable
#include "signal_filter_bank.portable.inc"
#undef mn_signal_filter_bank_u32
#include "mn_host.h"

#if defined(MNH_AVX2)
typedef struct { int32_t bin, weight, width, falling; } fb_run;
/* a chain band: its first bin and first weight as byte offsets (the call's pointers are added; no index arithmetic
 * per band), its two edge vectors in the plan's scratch, its quads of bins */
typedef struct { intptr_t x, w; __m256i *e; intptr_t quads; } fb_band;
enum { FB_CLASSES = 5 }; /* chain bands of 1, 2, 3 and 4 quads of bins, and longer ones */

typedef struct {
    const int32_t *bands; /* the call's band words, count and channels: checked against the call's on every call */
    int32_t n_bands, channels, groups; /* groups: channels rounded up to 4, / 4 */
    int32_t lo, hi;                    /* the bins the bands span */
    int32_t chain;                     /* band b is channel b's, b = 0 .. channels, widths 4, 8, 12, ... */
    int32_t *first;                    /* per channel (rounded up to 4) + 1: its first run in runs */
    fb_run *runs;
    fb_band *cls[FB_CLASSES];          /* chain: the bands by class */
    int32_t n_cls[FB_CLASSES];
    __m256i *edges;                    /* chain: per band, its rising lanes then its falling lanes (call scratch) */
} fb_plan;

static fb_plan *fb_prepare(const mn_word *args) {
    const int32_t *band = MN_P(const int32_t, BANDS);
    const int32_t n_bands = MN_I(N_BANDS), channels = MN_I(CHANNELS);
    const int32_t padded = (channels + 3) / 4 * 4;
    fb_plan *p = (fb_plan *)mnh_alloc(sizeof(fb_plan) + (size_t)(padded + 1) * sizeof(int32_t) +
                                      (size_t)2 * n_bands * sizeof(fb_run) + (size_t)n_bands * sizeof(fb_band) +
                                      (size_t)2 * n_bands * sizeof(__m256i) + 32);
    if (!p) return NULL;
    p->bands = band, p->n_bands = n_bands, p->channels = channels, p->groups = padded / 4;
    p->first = (int32_t *)(p + 1);
    p->runs = (fb_run *)(p->first + padded + 1);
    p->lo = INT32_MAX, p->hi = 0;
    int32_t n = 0;
    for (int32_t c = 0; c < padded; c++) {
        p->first[c] = n;
        for (int32_t b = 0; b < n_bands; b++) {
            const int32_t *q = band + 4 * b;
            const int32_t falling = q[0] == c && c < channels, rising = q[0] - 1 == c && q[0] >= 1;
            if (!falling && !rising) continue;
            p->runs[n++] = (fb_run){q[1], q[2], q[3], falling};
            if (q[3] > 0 && q[1] < p->lo) p->lo = q[1];
            if (q[3] > 0 && q[1] + q[3] > p->hi) p->hi = q[1] + q[3];
        }
    }
    p->first[padded] = n;
    if (p->lo > p->hi) p->lo = p->hi;
    p->chain = n_bands == channels + 1;
    for (int32_t b = 0; b < n_bands; b++) {
        const int32_t width = band[4 * b + 3];
        p->chain &= band[4 * b] == b && width > 0 && width % 4 == 0;
    }
    fb_band *list = (fb_band *)(p->runs + 2 * n_bands);
    uintptr_t at = ((uintptr_t)(list + n_bands) + 31) & ~(uintptr_t)31;
    p->edges = (__m256i *)at;
    for (int k = 0; k < FB_CLASSES; k++) {
        p->cls[k] = list, p->n_cls[k] = 0;
        for (int32_t b = 0; p->chain && b < n_bands; b++) {
            const int32_t quads = band[4 * b + 3] / 4;
            if (quads - 1 == k || (k == FB_CLASSES - 1 && quads >= FB_CLASSES))
                list[p->n_cls[k]++] = (fb_band){4 * (intptr_t)band[4 * b + 1], 2 * (intptr_t)band[4 * b + 2],
                                                 p->edges + 2 * b, quads};
        }
        list += p->n_cls[k];
    }
    return p;
}

/* whether any of x[lo, hi) has its top bit set */
static int fb_any_top(const uint32_t *x, int32_t lo, int32_t hi) {
    __m256i any = _mm256_setzero_si256(), a1 = any, a2 = any, a3 = any; /* four chains: no wait on one vpor */
    int32_t i = lo;
    for (; i + 32 <= hi; i += 32) {
        any = _mm256_or_si256(any, _mm256_loadu_si256((const __m256i *)(x + i)));
        a1 = _mm256_or_si256(a1, _mm256_loadu_si256((const __m256i *)(x + i + 8)));
        a2 = _mm256_or_si256(a2, _mm256_loadu_si256((const __m256i *)(x + i + 16)));
        a3 = _mm256_or_si256(a3, _mm256_loadu_si256((const __m256i *)(x + i + 24)));
    }
    any = _mm256_or_si256(_mm256_or_si256(any, a1), _mm256_or_si256(a2, a3));
    for (; i + 8 <= hi; i += 8) any = _mm256_or_si256(any, _mm256_loadu_si256((const __m256i *)(x + i)));
    uint32_t top = (uint32_t)_mm256_movemask_ps(_mm256_castsi256_ps(any));
    for (; i < hi; i++) top |= x[i] >> 31;
    return top != 0;
}

/* acc[0..3] reduced to their four sums, in order */
static inline __m256i fb_sum4(const __m256i *acc) {
    const __m256i t0 = _mm256_add_epi64(_mm256_unpacklo_epi64(acc[0], acc[1]), _mm256_unpackhi_epi64(acc[0], acc[1]));
    const __m256i t1 = _mm256_add_epi64(_mm256_unpacklo_epi64(acc[2], acc[3]), _mm256_unpackhi_epi64(acc[2], acc[3]));
    return _mm256_add_epi64(_mm256_permute2x128_si256(t0, t1, 0x20), _mm256_permute2x128_si256(t0, t1, 0x31));
}

/* A chain band's two edges over `quads` quads of bins: each bin read once for both; eight at a time as int32 lanes,
 * whose even lanes mul_epi32 takes as they are and odd lanes after a 64-bit shift right by 32 (the weights
 * sign-extended to int32 lanes the same way), then a last four zero-extended to 64-bit lanes. The four rising lanes
 * go to edges[0], the four falling ones to edges[1], as they are (no shuffle: the channels' reduction sums them);
 * every bin read is or-ed into the returned `seen` (its bit 31 in the sign bit of a 32-bit lane: set, and the
 * products were not the exact ones). */
__attribute__((always_inline)) static inline __m256i fb_edges(const uint32_t *xb, const int16_t *wb,
                                                              const int16_t *ub, int32_t quads, __m256i *edges,
                                                              __m256i seen) {
    __m256i r = _mm256_setzero_si256(), f = _mm256_setzero_si256(), any = seen;
    int32_t i = 0;
    for (; i + 8 <= 4 * quads; i += 8) {
        const __m256i xv = _mm256_loadu_si256((const __m256i *)(xb + i)), xo = _mm256_srli_epi64(xv, 32);
        const __m256i wv = _mm256_cvtepi16_epi32(_mm_loadu_si128((const __m128i *)(wb + i)));
        const __m256i uv = _mm256_cvtepi16_epi32(_mm_loadu_si128((const __m128i *)(ub + i)));
        r = _mm256_add_epi64(r, _mm256_add_epi64(_mm256_mul_epi32(wv, xv),
                                                 _mm256_mul_epi32(_mm256_srli_epi64(wv, 32), xo)));
        f = _mm256_add_epi64(f, _mm256_add_epi64(_mm256_mul_epi32(uv, xv),
                                                 _mm256_mul_epi32(_mm256_srli_epi64(uv, 32), xo)));
        any = _mm256_or_si256(any, xv);
    }
    if (i < 4 * quads) {
        const __m256i xv = _mm256_cvtepu32_epi64(_mm_loadu_si128((const __m128i *)(xb + i)));
        const __m256i wv = _mm256_cvtepi16_epi64(_mm_loadl_epi64((const __m128i *)(wb + i)));
        const __m256i uv = _mm256_cvtepi16_epi64(_mm_loadl_epi64((const __m128i *)(ub + i)));
        r = _mm256_add_epi64(r, _mm256_mul_epi32(wv, xv));
        f = _mm256_add_epi64(f, _mm256_mul_epi32(uv, xv));
        any = _mm256_or_si256(any, xv);
    }
    _mm256_store_si256(edges, r);
    _mm256_store_si256(edges + 1, f);
    return any;
}

/* every band of a class; QUADS: the class's quads per band (a constant at each call), 0: each band's own */
__attribute__((always_inline)) static inline __m256i fb_class(const fb_plan *p, int k, int32_t quads,
                                                              const uint32_t *x, const int16_t *w, const int16_t *u,
                                                              __m256i seen) {
    for (const fb_band *bd = p->cls[k], *end = bd + p->n_cls[k]; bd < end; bd++)
        seen = fb_edges((const uint32_t *)((const char *)x + bd->x), (const int16_t *)((const char *)w + bd->w),
                        (const int16_t *)((const char *)u + bd->w), quads ? quads : (int32_t)bd->quads, bd->e, seen);
    return seen;
}

/* The usual layout (mel tables): bands 0 .. channels in order, each a whole number of quads of bins. The bands are
 * taken class by class (a fixed number of quads: straight code per band), each band's rising and falling lanes kept;
 * channel c's four words are then band c's falling lanes plus band c + 1's rising ones (band 0's rising edge and band
 * `channels`' falling edge have no channel), four channels reduced together. 0: a bin at or above 2^31 was seen,
 * nothing written. */
__attribute__((noinline)) static int fb_chain(const fb_plan *p, uint64_t *out, const uint32_t *x, const int16_t *w,
                                              const int16_t *u) {
    __m256i seen = _mm256_setzero_si256();
    seen = fb_class(p, 0, 1, x, w, u, seen);
    seen = fb_class(p, 1, 2, x, w, u, seen);
    seen = fb_class(p, 2, 3, x, w, u, seen);
    seen = fb_class(p, 3, 4, x, w, u, seen);
    seen = fb_class(p, 4, 0, x, w, u, seen);
    if (_mm256_movemask_ps(_mm256_castsi256_ps(seen))) return 0;
    const int32_t channels = p->channels;
    const __m256i *e = p->edges;
    int32_t c = 0;
    for (; c + 4 <= channels; c += 4) { /* channel c: band c's falling lanes e[2c + 1], band c + 1's rising e[2c + 2] */
        const __m256i v[4] = {_mm256_add_epi64(e[2 * c + 1], e[2 * c + 2]),
                              _mm256_add_epi64(e[2 * c + 3], e[2 * c + 4]),
                              _mm256_add_epi64(e[2 * c + 5], e[2 * c + 6]),
                              _mm256_add_epi64(e[2 * c + 7], e[2 * c + 8])};
        _mm256_storeu_si256((__m256i *)(out + c), fb_sum4(v));
    }
    for (; c < channels; c++) {
        uint64_t s[4];
        _mm256_storeu_si256((__m256i *)s, _mm256_add_epi64(e[2 * c + 1], e[2 * c + 2]));
        out[c] = s[0] + s[1] + s[2] + s[3];
    }
    return 1;
}

void mn_signal_filter_bank_u32(const mn_word *args) {
    mnh_slot *slot;
    fb_plan *p = (fb_plan *)mnh_lookup(args, &slot);
    if (p && (p->bands != MN_P(const int32_t, BANDS) || p->n_bands != MN_I(N_BANDS) ||
              p->channels != MN_I(CHANNELS)))
        p = NULL; /* another call's words at this address (never in a generated model) */
    if (!p && slot && !slot->value) mnh_keep(slot, args, p = fb_prepare(args));
    if (!p) {
        mn_signal_filter_bank_u32_portable(args);
        return;
    }
    uint64_t *out = MN_P(uint64_t, OUT);
    const uint32_t *x = MN_P(const uint32_t, IN);
    const int16_t *w = MN_P(const int16_t, WEIGHTS), *u = MN_P(const int16_t, UNWEIGHTS);
    if (p->chain) {
        if (!fb_chain(p, out, x, w, u)) mn_signal_filter_bank_u32_portable(args); /* a bin at or above 2^31 */
        return;
    }
    if (fb_any_top(x, p->lo, p->hi)) {
        mn_signal_filter_bank_u32_portable(args);
        return;
    }
    for (int32_t g = 0; g < p->groups; g++) {
        __m256i acc[4];
        uint64_t tail[4];
        for (int k = 0; k < 4; k++) {
            const int32_t c = 4 * g + k;
            __m256i a = _mm256_setzero_si256();
            uint64_t t = 0;
            for (int32_t r = p->first[c]; r < p->first[c + 1]; r++) {
                const fb_run run = p->runs[r];
                const int16_t *wr = (run.falling ? u : w) + run.weight;
                const uint32_t *xr = x + run.bin;
                int32_t i = 0;
                for (; i + 4 <= run.width; i += 4) {
                    const __m256i wv = _mm256_cvtepi16_epi64(_mm_loadl_epi64((const __m128i *)(wr + i)));
                    const __m256i xv = _mm256_cvtepu32_epi64(_mm_loadu_si128((const __m128i *)(xr + i)));
                    a = _mm256_add_epi64(a, _mm256_mul_epi32(wv, xv));
                }
                for (; i < run.width; i++) t += (uint64_t)(int64_t)wr[i] * xr[i];
            }
            acc[k] = a, tail[k] = t;
        }
        const __m256i sums = _mm256_add_epi64(fb_sum4(acc), _mm256_loadu_si256((const __m256i *)tail));
        if (4 * g + 4 <= p->channels) {
            _mm256_storeu_si256((__m256i *)(out + 4 * g), sums);
        } else {
            uint64_t s[4];
            _mm256_storeu_si256((__m256i *)s, sums);
            for (int32_t c = 4 * g; c < p->channels; c++) out[c] = s[c - 4 * g];
        }
    }
}
#else
void mn_signal_filter_bank_u32(const mn_word *args) { mn_signal_filter_bank_u32_portable(args); }
#endif
