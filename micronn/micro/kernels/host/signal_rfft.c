/* SignalRfft, the host port (x86-64 with AVX2) of kernels/signal_rfft.c, same symbols, same argument words.
 *
 * int16 frames: the radix-2 and radix-4 stages of span m >= 4 run eight butterflies at a time, one complex value
 * (re, im as int16) per 32-bit lane: eight consecutive positions of a group (m a multiple of 8) or four of two
 * neighbouring groups (m = 4, an even count of groups); a first radix-4 stage (m = 1) takes two groups per vector
 * and does each butterfly within a 128-bit half. The portable kernel's arithmetic maps onto exact instructions:
 * its rounded Q15 product (x * c + 2^14) >> 15 wrapped to int16 is mulhrs; a complex product's two exact products
 * summed before the rounding are one madd against the twiddle pairs (re, -im) and (im, re), which this port lays
 * out per stage and position once per call site; the rounded sums' bits 15-30 go to the lane's halves with one
 * shift each (right by 15 for re, left by 1 for im) and one blend. Sums and differences wrap as int16 lanes do; a
 * radix-4 butterfly's -i h is h's halves swapped (pshufb) and the new high one negated (psignw, wrapping -32768 to
 * itself as the portable sub(0, x) does), so its outputs 1 and 3 are d + (-i h) and d - (-i h), no blends.
 * The digit-reversed copy: with an even frame length (a pair is all input or all padding) and a first radix-4
 * stage of span 1 over n/4 groups (a multiple of 8), that stage reads the input as four rows of n/4 pairs (the
 * order's last digit is the stage's input, the rest a group's column), eight groups lane-wise, and a 4 x 8
 * transpose puts each group's outputs at its place (where a second stage of radix 4 and span 4 follows and the
 * pairing allows, it leaves whole vectors in the slots that stage loads them from, so neither side splits them
 * into 128-bit halves); otherwise a masked 32-bit gather of input pairs (masked lanes
 * read nothing and give 0), folded into a first stage of span 1 where there is one.
 * The split takes steps k .. k + 7 at once, values n - k .. n - k - 7 loaded as one vector and lane-reversed: the
 * conjugate's negation wraps as the portable sub(0, x) does (before its rounded halving, mulhrs), the twiddle
 * product is the stages' madd, and the halved sum (difference) of two int16 values, exact in C's int and always in
 * range, is an unsigned rounding average of the values with flipped bits (rf_split8 says which).
 * Left to the portable code: radix 3 and 5, span 2, odd group counts, a twiddle (stage or split) of imaginary part
 * -32768 whose negation does not fit, odd frame lengths (a scalar copy), a split remainder below 8 steps; the
 * int32 (Q31) kernel is the portable one.
 */
#define mn_signal_rfft_s16 mn_signal_rfft_s16_portable
#define mn_signal_rfft_s32 mn_signal_rfft_s32_portable
#include "signal_rfft.portable.inc"
#undef mn_signal_rfft_s16
#undef mn_signal_rfft_s32
#include "mn_host.h"

void mn_signal_rfft_s32(const mn_word *args) { mn_signal_rfft_s32_portable(args); }

#if defined(MNH_AVX2)
enum { RF_MAX_STAGES = 32 };

typedef struct {
    int32_t *ta[RF_MAX_STAGES]; /* per vector stage, per input q = 1 .. p-1 and position u: (re, -im) as int16 */
    int32_t *tb[RF_MAX_STAGES]; /* (im, re) */
    int32_t *sa, *sb;           /* the split's twiddles of k = 1 .. n/2 the same way (NULL: the portable split) */
    int32_t *gidx, *gmask;      /* per output pair j (n rounded up to 8): its input pair, -1 where it is in */
    int32_t *cols;              /* first stage from rows: per input pair c < n/4, the group whose input 0 it is */
    int32_t cstep;              /* 1: cols[c + i] - cols[c] is cols[i] - cols[0] for every c (a multiple of 8) */
    int32_t packed;             /* 1: the first stage leaves the second's input vectors whole (cols: their slots) */
} rf_pack;

/* (re, -im) and (im, re) of the twiddle (re, im) as int16 pairs; 0 where -im does not fit. */
static int rf_pair(const int16_t *t, int32_t *a, int32_t *b) {
    const int16_t re = t[0], im = t[1];
    *a = (int32_t)((uint32_t)(uint16_t)re | (uint32_t)(uint16_t)(int16_t)-im << 16);
    *b = (int32_t)((uint32_t)(uint16_t)im | (uint32_t)(uint16_t)re << 16);
    return im != INT16_MIN;
}

static int rf_vector_stage(const int32_t *st) {
    return ((st[0] == 2 || st[0] == 4) && (st[1] % 8 == 0 || (st[1] == 4 && st[2] % 2 == 0))) ||
           (st[0] == 4 && st[1] == 1 && st[2] % 2 == 0);
}

static const rf_pack *rf_prepare(const mn_word *args) {
    mnh_slot *slot;
    rf_pack *p = (rf_pack *)mnh_lookup(args, &slot);
    if (p) return p;
    const int32_t stages = MN_I(STAGES), *plan = MN_P(const int32_t, PLAN);
    const int16_t *tw = MN_P(const int16_t, TW);
    if (stages > RF_MAX_STAGES) return NULL;
    p = (rf_pack *)mnh_alloc(sizeof(rf_pack));
    if (!p) return NULL;
    for (int32_t s = 0; s < stages; s++) {
        const int32_t *st = plan + PLAN_WORDS * s, radix = st[0], m = st[1];
        if (!rf_vector_stage(st)) continue;
        int32_t *ta = (int32_t *)mnh_alloc((size_t)(radix - 1) * m * sizeof(int32_t));
        int32_t *tb = (int32_t *)mnh_alloc((size_t)(radix - 1) * m * sizeof(int32_t));
        if (!ta || !tb) return NULL;
        int ok = 1;
        for (int32_t q = 1; q < radix; q++)
            for (int32_t u = 0; u < m; u++)
                ok &= rf_pair(tw + st[3] + 2 * (radix - 1) * u + 2 * (q - 1), ta + (q - 1) * m + u,
                              tb + (q - 1) * m + u);
        if (ok) p->ta[s] = ta, p->tb[s] = tb;
        else free(ta), free(tb);
    }
    const int32_t n = MN_I(HALF), in_len = MN_I(IN_LEN), *order = MN_P(const int32_t, ORDER);
    const int16_t *split = MN_P(const int16_t, SPLIT);
    int32_t *sa = (int32_t *)mnh_alloc((size_t)(n / 2 + 1) * sizeof(int32_t));
    int32_t *sb = (int32_t *)mnh_alloc((size_t)(n / 2 + 1) * sizeof(int32_t));
    if (!sa || !sb) return NULL;
    int ok = 1;
    for (int32_t k = 1; k <= n / 2; k++) ok &= rf_pair(split + 2 * (k - 1), sa + k - 1, sb + k - 1);
    if (ok) p->sa = sa, p->sb = sb;
    else free(sa), free(sb);
    if (in_len % 2 == 0) { /* pairs wholly in the input or wholly padding: one masked 32-bit gather */
        const int32_t rounded = (n + 7) / 8 * 8;
        p->gidx = (int32_t *)mnh_alloc((size_t)rounded * sizeof(int32_t));
        p->gmask = (int32_t *)mnh_alloc((size_t)rounded * sizeof(int32_t));
        if (!p->gidx || !p->gmask) return NULL;
        for (int32_t j = 0; j < n; j++) {
            p->gidx[j] = order[j];
            p->gmask[j] = 2 * order[j] < in_len ? -1 : 0;
        }
        /* a first radix-4 stage of span 1 takes input q of group g from pair q n/4 + order[4 g] (the order's last
         * digit is the first stage's): its groups read the input as 4 rows of n/4 pairs, a group per column */
        const int32_t *st = plan;
        const int32_t q = n / 4;
        if (stages > 0 && p->ta[0] && st[0] == 4 && st[1] == 1 && q % 8 == 0) {
            int32_t *cols = (int32_t *)mnh_alloc((size_t)q * sizeof(int32_t));
            if (!cols) return NULL;
            int ok = 1;
            for (int32_t c = 0; c < q; c++) cols[c] = -1;
            for (int32_t g = 0; g < q && ok; g++) {
                const int32_t c = order[4 * g];
                ok = c >= 0 && c < q && cols[c] < 0;
                for (int32_t r = 1; r < 4 && ok; r++) ok = order[4 * g + r] == c + r * q;
                if (ok) cols[c] = g;
            }
            if (ok) {
                /* a second stage of radix 4 and span 4 loads the inputs q of groups G, G + 1 (G even) as one
                 * vector: first-stage groups 4 G + q and 4 G + 4 + q. Where the columns c + i and c + i + 4 (i < 4)
                 * are always such a pair, the first stage stores that vector whole, in the 8 values of the second
                 * stage's pair of groups that its input q would take (at 4 (g + g % 4), g = cols[c + i]), and the
                 * second stage loads it back as is. */
                const int32_t *s1 = plan + PLAN_WORDS;
                int packed = stages > 1 && p->ta[1] && s1[0] == 4 && s1[1] == 4;
                for (int32_t c = 0; c < q && packed; c += 8)
                    for (int32_t i = 0; i < 4; i++) packed &= cols[c + i + 4] == cols[c + i] + 4 && cols[c + i] % 8 < 4;
                if (packed)
                    for (int32_t c = 0; c < q; c += 8)
                        for (int32_t i = 0; i < 4; i++) cols[c + i] += cols[c + i] % 4;
                p->cols = cols;
                p->packed = packed;
                p->cstep = 1;
                for (int32_t c = 0; c < q; c += 8)
                    for (int32_t i = 0; i < 8; i++) p->cstep &= cols[c + i] - cols[c] == cols[i] - cols[0];
            } else free(cols);
        }
    }
    mnh_keep(slot, args, p);
    return p;
}

/* Eight complex values times their twiddles: ((re * tr - im * ti + 2^14) >> 15, (re * ti + im * tr + 2^14) >> 15)
 * wrapped to int16. */
static inline __m256i rf_cmul(__m256i v, __m256i ta, __m256i tb) {
    const __m256i round = _mm256_set1_epi32(1 << 14);
    const __m256i re = _mm256_srli_epi32(_mm256_add_epi32(_mm256_madd_epi16(v, ta), round), 15); /* bits 15-30 */
    const __m256i im = _mm256_slli_epi32(_mm256_add_epi32(_mm256_madd_epi16(v, tb), round), 1);  /* to 16-31 */
    return _mm256_blend_epi16(re, im, 0xAA);
}

/* (h.i, -h.r) of each lane's complex value h: its halves swapped, the new high one negated (wrapping, as
 * sub(0, x) does: psignw negates -32768 to itself). */
static inline __m256i rf_turn(__m256i h) {
    const __m256i swap = _mm256_setr_epi8(2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13,
                                          2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13);
    return _mm256_sign_epi16(_mm256_shuffle_epi8(h, swap), _mm256_set1_epi32((int32_t)0xFFFF0001u));
}

/* Eight lanes of complex values: at a[0..3] (m a multiple of 8), or four at a and four at b (m = 4). */
static inline __m256i rf_load(const int16_t *a, const int16_t *b, int split) {
    if (!split) return _mm256_loadu_si256((const __m256i *)a);
    return _mm256_set_m128i(_mm_loadu_si128((const __m128i *)b), _mm_loadu_si128((const __m128i *)a));
}

static inline void rf_store(int16_t *a, int16_t *b, int split, __m256i v) {
    if (!split) { _mm256_storeu_si256((__m256i *)a, v); return; }
    _mm_storeu_si128((__m128i *)a, _mm256_castsi256_si128(v));
    _mm_storeu_si128((__m128i *)b, _mm256_extracti128_si256(v, 1));
}

static inline __m256i rf_gather(const int16_t *x, const int32_t *gidx, const int32_t *gmask, int32_t j) {
    return _mm256_mask_i32gather_epi32(_mm256_setzero_si256(), (const int *)x,
                                       _mm256_loadu_si256((const __m256i *)(gidx + j)),
                                       _mm256_loadu_si256((const __m256i *)(gmask + j)), 4);
}

/* The first stage of radix 4 (span 1): two groups of 4 values per vector, the butterflies within each 128-bit
 * half (the twiddles of inputs 1-3 at position 0, input 0 unmultiplied). With x, its values are gathered from
 * the input frame (the digit-reversed copy folded in) instead of read from y. */
static inline void rf_stage_m1(int16_t *y, const int32_t *st, const int32_t *ta, const int32_t *tb, const int16_t *x,
                               const int32_t *gidx, const int32_t *gmask) {
    const int32_t groups = st[2];
    const __m256i div = _mm256_set1_epi16((int16_t)st[4]);
    const __m256i va = _mm256_setr_epi32(0, ta[0], ta[1], ta[2], 0, ta[0], ta[1], ta[2]);
    const __m256i vb = _mm256_setr_epi32(0, tb[0], tb[1], tb[2], 0, tb[0], tb[1], tb[2]);
    for (int32_t g = 0; g < groups; g += 2) {
        int16_t *a = y + 8 * (size_t)g;
        const __m256i in = x ? rf_gather(x, gidx, gmask, 4 * g) : _mm256_loadu_si256((const __m256i *)a);
        const __m256i v = _mm256_mulhrs_epi16(in, div);
        const __m256i f = _mm256_blend_epi32(rf_cmul(v, va, vb), v, 0x11);           /* f0 f1 f2 f3 per half */
        const __m256i b = _mm256_shuffle_epi32(f, _MM_SHUFFLE(1, 0, 3, 2));           /* f2 f3 f0 f1 */
        const __m256i s = _mm256_add_epi16(f, b), d = _mm256_sub_epi16(f, b);        /* (e g e g), (d h . .) */
        const __m256i s2 = _mm256_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1));          /* (g e g e) */
        const __m256i sum = _mm256_add_epi16(s, s2), dif = _mm256_sub_epi16(s, s2);  /* e + g at 0, e - g at 2 */
        const __m256i dd = _mm256_shuffle_epi32(d, 0x00), hh = _mm256_shuffle_epi32(d, 0x55);
        const __m256i t = rf_turn(hh);
        __m256i out = _mm256_blend_epi32(sum, _mm256_add_epi16(dd, t), 0x22);
        out = _mm256_blend_epi32(out, dif, 0x44);
        out = _mm256_blend_epi32(out, _mm256_sub_epi16(dd, t), 0x88);
        _mm256_storeu_si256((__m256i *)a, out);
    }
}

/* Eight radix-4 butterflies of the eight lanes of f[0..3] (f[1..3] twiddled): outputs 0-3 in o. */
static inline void rf_radix4(const __m256i *f, __m256i *o) {
    const __m256i d = _mm256_sub_epi16(f[0], f[2]), e = _mm256_add_epi16(f[0], f[2]);
    const __m256i g = _mm256_add_epi16(f[1], f[3]), h = _mm256_sub_epi16(f[1], f[3]);
    const __m256i t = rf_turn(h);
    o[0] = _mm256_add_epi16(e, g);
    o[1] = _mm256_add_epi16(d, t); /* (d.r + h.i, d.i - h.r) */
    o[2] = _mm256_sub_epi16(e, g);
    o[3] = _mm256_sub_epi16(d, t); /* (d.r - h.i, d.i + h.r) */
}

/* Eight input pairs from `at` of the frame's `pairs` (pairs past it are the zero padding). */
static inline __m256i rf_row(const int16_t *x, int32_t at, int32_t pairs) {
    const int32_t *x32 = (const int32_t *)(const void *)x;
    if (at + 8 <= pairs) return _mm256_loadu_si256((const __m256i *)(x32 + at));
    if (at >= pairs) return _mm256_setzero_si256();
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_maskload_epi32(x32 + at, _mm256_cmpgt_epi32(_mm256_set1_epi32(pairs - at), lane));
}

/* The first stage, radix 4 and span 1, straight from the input frame x (an even count of values, `pairs` pairs):
 * input q of the groups cols[c .. c + 7] is the row q n/4 + c .. c + 7 of pairs, so eight butterflies run
 * lane-wise on four row loads; a 4 x 8 transpose of 32-bit lanes then gives each group's four outputs together
 * (two groups per vector, a 128-bit half each), stored at the group's place. Columns whose four rows lie wholly in
 * the frame are loaded plainly, the rest through rf_row; with cstep the eight places are one group's plus fixed
 * offsets (one index load per eight groups). */
static inline __attribute__((always_inline)) void rf_rows8(int16_t *y, const __m256i *w, __m256i div,
                                                           const int16_t *x, int32_t pairs, int32_t q, int32_t c,
                                                           const int32_t *cols, const ptrdiff_t *off,
                                                           const int whole, const int packed) {
    const int32_t *x32 = (const int32_t *)(const void *)x;
    __m256i f[4], o[4];
    for (int r = 0; r < 4; r++) {
        const __m256i in = whole ? _mm256_loadu_si256((const __m256i *)(x32 + r * q + c)) : rf_row(x, r * q + c, pairs);
        f[r] = _mm256_mulhrs_epi16(in, div);
        if (r) f[r] = rf_cmul(f[r], w[r - 1], w[r + 2]);
    }
    rf_radix4(f, o);
    const __m256i t0 = _mm256_unpacklo_epi32(o[0], o[1]), t1 = _mm256_unpackhi_epi32(o[0], o[1]);
    const __m256i t2 = _mm256_unpacklo_epi32(o[2], o[3]), t3 = _mm256_unpackhi_epi32(o[2], o[3]);
    const __m256i v[4] = {_mm256_unpacklo_epi64(t0, t2), _mm256_unpackhi_epi64(t0, t2),
                          _mm256_unpacklo_epi64(t1, t3), _mm256_unpackhi_epi64(t1, t3)};
    if (packed) { /* columns c + i and c + i + 4 as one vector, at the slot cols[c + i] */
        for (int i = 0; i < 4; i++) {
            int16_t *at = off ? (int16_t *)(void *)((char *)(y + 8 * (size_t)cols[c]) + off[i])
                              : y + 8 * (size_t)cols[c + i];
            _mm256_storeu_si256((__m256i *)at, v[i]);
        }
        return;
    }
    if (off) {
        char *base = (char *)(y + 8 * (size_t)cols[c]);
        for (int i = 0; i < 4; i++) { /* columns c + i (low half) and c + i + 4 (high half) */
            _mm_storeu_si128((__m128i *)(base + off[i]), _mm256_castsi256_si128(v[i]));
            _mm_storeu_si128((__m128i *)(base + off[i + 4]), _mm256_extracti128_si256(v[i], 1));
        }
        return;
    }
    for (int i = 0; i < 4; i++) {
        _mm_storeu_si128((__m128i *)(y + 8 * (size_t)cols[c + i]), _mm256_castsi256_si128(v[i]));
        _mm_storeu_si128((__m128i *)(y + 8 * (size_t)cols[c + i + 4]), _mm256_extracti128_si256(v[i], 1));
    }
}

static inline __attribute__((always_inline)) void rf_stage_rows_of(int16_t *y, const int32_t *st, const int32_t *ta,
                                                                   const int32_t *tb, const int16_t *x, int32_t pairs,
                                                                   int32_t n, const int32_t *cols, int cstep,
                                                                   const int packed) {
    const int32_t q = n / 4;
    const __m256i div = _mm256_set1_epi16((int16_t)st[4]);
    __m256i w[6];
    for (int r = 0; r < 3; r++) w[r] = _mm256_set1_epi32(ta[r]), w[r + 3] = _mm256_set1_epi32(tb[r]);
    int32_t c = 0;
    if (cstep) {
        ptrdiff_t off[8];
        for (int i = 0; i < 8; i++) off[i] = 16 * (ptrdiff_t)(cols[i] - cols[0]);
        for (; c < q && c + 8 + 3 * q <= pairs; c += 8) rf_rows8(y, w, div, x, pairs, q, c, cols, off, 1, packed);
        for (; c < q; c += 8) rf_rows8(y, w, div, x, pairs, q, c, cols, off, 0, packed);
        return;
    }
    for (; c < q; c += 8) rf_rows8(y, w, div, x, pairs, q, c, cols, NULL, 0, packed);
}

static void rf_stage_rows(int16_t *y, const int32_t *st, const int32_t *ta, const int32_t *tb, const int16_t *x,
                          int32_t pairs, int32_t n, const int32_t *cols, int cstep, int packed) {
    if (packed) rf_stage_rows_of(y, st, ta, tb, x, pairs, n, cols, cstep, 1);
    else rf_stage_rows_of(y, st, ta, tb, x, pairs, n, cols, cstep, 0);
}

/* One stage of radix 2 or 4 over the frame y, eight butterflies at a time; radix and split (m = 4: two groups
 * per vector) are constants at each call, so the inputs stay in registers. */
static inline __attribute__((always_inline)) void rf_stage_of(int16_t *y, const int32_t *st, const int32_t *ta,
                                                              const int32_t *tb, const int radix, const int split,
                                                              const int packed) {
    const int32_t m = split ? 4 : st[1], groups = st[2];
    const __m256i div = _mm256_set1_epi16((int16_t)st[4]);
    const int32_t gstep = split ? 2 : 1, ustep = split ? 4 : 8;
    __m256i w4[6]; /* m = 4: every vector's twiddles, loaded once (the frame's stores could alias them) */
    if (split)
        for (int32_t q = 1; q < radix; q++) {
            w4[q - 1] = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(ta + (q - 1) * 4)));
            w4[q + 2] = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(tb + (q - 1) * 4)));
        }
    for (int32_t g = 0; g < groups; g += gstep)
        for (int32_t u = 0; u < m; u += ustep) {
            int16_t *a = y + 2 * ((size_t)g * radix * m + u), *b = a + 2 * (size_t)radix * m; /* b: group g + 1 */
            __m256i f[4];
            for (int32_t q = 0; q < radix; q++) {
                const __m256i in = packed ? _mm256_loadu_si256((const __m256i *)(a + 16 * q)) /* a whole slot */
                                          : rf_load(a + 2 * q * m, b + 2 * q * m, split);
                const __m256i v = _mm256_mulhrs_epi16(in, div);
                if (q == 0) { f[0] = v; continue; }
                const int32_t *wa = ta + (q - 1) * m + u, *wb = tb + (q - 1) * m + u;
                f[q] = split ? rf_cmul(v, w4[q - 1], w4[q + 2])
                             : rf_cmul(v, _mm256_loadu_si256((const __m256i *)wa),
                                       _mm256_loadu_si256((const __m256i *)wb));
            }
            if (radix == 2) {
                rf_store(a, b, split, _mm256_add_epi16(f[0], f[1]));
                rf_store(a + 2 * m, b + 2 * m, split, _mm256_sub_epi16(f[0], f[1]));
                continue;
            }
            __m256i o[4];
            rf_radix4(f, o);
            for (int32_t q = 0; q < 4; q++) rf_store(a + 2 * q * m, b + 2 * q * m, split, o[q]);
        }
}

static void rf_stage(int16_t *y, const int32_t *st, const int32_t *ta, const int32_t *tb) {
    const int32_t radix = st[0], m = st[1];
    if (m == 1) rf_stage_m1(y, st, ta, tb, NULL, NULL, NULL);
    else if (radix == 4 && m == 4) rf_stage_of(y, st, ta, tb, 4, 1, 0);
    else if (radix == 4) rf_stage_of(y, st, ta, tb, 4, 0, 0);
    else if (m == 4) rf_stage_of(y, st, ta, tb, 2, 1, 0);
    else rf_stage_of(y, st, ta, tb, 2, 0, 0);
}

/* The split's halvings floor((a + b) / 2) and floor((a - b) / 2) of int16 lanes, exact without widening through
 * the unsigned rounding-up average avg(u, v) = (u + v + 1) >> 1 of 17-bit sums: with a ^ 0x8000 = a + 2^15 and
 * a ^ 0x7fff = 2^16 - 1 - (a + 2^15) as unsigned values, avg(a ^ 0x7fff, b ^ 0x7fff) = 2^16 - 1 - (floor((a + b) / 2)
 * + 2^15), which ^ 0x7fff turns back into floor((a + b) / 2); avg(a ^ 0x8000, b ^ 0x7fff) = floor((a - b) / 2) + 2^15,
 * back with ^ 0x8000. Both halvings are within int16, as the portable (a +- b) >> 1 in C's int is. */
/* The split, steps k .. k + 7 at once: values k .. k + 7 in lane order, values n - k .. n - k - 7 read as one
 * vector and reversed. Where the two ranges meet (k + 7 = n / 2) the value n / 2 is in both; its bin is the one
 * step n / 2 writes last (bin n - k), so the reversed vector is stored second. */
static inline void rf_split8(int16_t *y, int32_t n, int32_t k, const int32_t *sa, const int32_t *sb, __m256i half) {
    const __m256i rev = _mm256_setr_epi32(7, 6, 5, 4, 3, 2, 1, 0);
    int16_t *lo = y + 2 * (size_t)k, *hi = y + 2 * (size_t)(n - k - 7);
    const __m256i p = _mm256_mulhrs_epi16(_mm256_loadu_si256((const __m256i *)lo), half);
    const __m256i q0 = _mm256_permutevar8x32_epi32(_mm256_loadu_si256((const __m256i *)hi), rev);
    const __m256i q = _mm256_mulhrs_epi16(_mm256_sign_epi16(q0, _mm256_set1_epi32((int32_t)0xFFFF0001u)), half);
    const __m256i f1 = _mm256_add_epi16(p, q), f2 = _mm256_sub_epi16(p, q);
    const __m256i w = rf_cmul(f2, _mm256_loadu_si256((const __m256i *)(sa + k - 1)),
                              _mm256_loadu_si256((const __m256i *)(sb + k - 1)));
    const __m256i k7 = _mm256_set1_epi16(0x7fff), k8 = _mm256_set1_epi16(-0x8000);
    const __m256i kf = _mm256_set1_epi32(0x7fff8000), kw = _mm256_set1_epi32((int32_t)0x80007fffu);
    /* bin k: (floor((f1.r + w.r) / 2), floor((f1.i + w.i) / 2)); bin n - k: (floor((f1.r - w.r) / 2),
     * floor((w.i - f1.i) / 2)), the minuends ^ 0x8000 and the subtrahends ^ 0x7fff */
    const __m256i bin_k = _mm256_xor_si256(_mm256_avg_epu16(_mm256_xor_si256(f1, k7), _mm256_xor_si256(w, k7)), k7);
    const __m256i bin_nk =
        _mm256_xor_si256(_mm256_avg_epu16(_mm256_xor_si256(f1, kf), _mm256_xor_si256(w, kw)), k8);
    _mm256_storeu_si256((__m256i *)lo, bin_k);
    _mm256_storeu_si256((__m256i *)hi, _mm256_permutevar8x32_epi32(bin_nk, rev));
}

void mn_signal_rfft_s16(const mn_word *args) {
    const rf_pack *pk = rf_prepare(args);
    if (!pk) { mn_signal_rfft_s16_portable(args); return; }
    const int wide = 0;
    const int32_t frames = MN_I(FRAMES), in_len = MN_I(IN_LEN), n = MN_I(HALF), stages = MN_I(STAGES);
    const int32_t *order = MN_P(const int32_t, ORDER), *plan = MN_P(const int32_t, PLAN);
    const int16_t *twiddles = MN_P(const int16_t, TW), *split = MN_P(const int16_t, SPLIT);
    const int32_t half = MN_I(DIV2);
    const __m256i vhalf = _mm256_set1_epi16((int16_t)half);
    /* the copy folds into a first vector stage of span 1 where the gather applies */
    const int fold = pk->gidx && stages > 0 && pk->ta[0] && plan[1] == 1;
    for (int32_t frame = 0; frame < frames; frame++) {
        int16_t *y = MN_P(int16_t, OUT) + (size_t)frame * (size_t)(2 * n + 2);
        const int16_t *x = MN_P(const int16_t, IN) + (size_t)frame * (size_t)in_len;
        int32_t s = 0;
        if (pk->cols) {
            rf_stage_rows(y, plan, pk->ta[0], pk->tb[0], x, in_len / 2, n, pk->cols, pk->cstep, pk->packed);
            s = 1;
        } else if (fold) {
            rf_stage_m1(y, plan, pk->ta[0], pk->tb[0], x, pk->gidx, pk->gmask);
            s = 1;
        } else if (pk->gidx) {
            int32_t j = 0;
            for (; j + 8 <= n; j += 8)
                _mm256_storeu_si256((__m256i *)(y + 2 * j), rf_gather(x, pk->gidx, pk->gmask, j));
            for (; j < n; j++) {
                y[2 * j] = pk->gmask[j] ? x[2 * order[j]] : 0;
                y[2 * j + 1] = pk->gmask[j] ? x[2 * order[j] + 1] : 0;
            }
        } else {
            for (int32_t j = 0; j < n; j++) {
                const int32_t src = 2 * order[j];
                y[2 * j] = src < in_len ? x[src] : 0;
                y[2 * j + 1] = src + 1 < in_len ? x[src + 1] : 0;
            }
        }
        for (; s < stages; s++) {
            const int32_t *st = plan + PLAN_WORDS * s;
            if (s == 1 && pk->packed) { rf_stage_of(y, st, pk->ta[1], pk->tb[1], 4, 1, 1); continue; }
            if (pk->ta[s]) { rf_stage(y, st, pk->ta[s], pk->tb[s]); continue; }
            const int32_t p = st[0], m = st[1], groups = st[2];
            const int16_t *tw = twiddles + st[3];
            for (int32_t g = 0; g < groups; g++)
                for (int32_t u = 0; u < m; u++) butterfly(y, g * p * m + u, st, tw + 2 * (p - 1) * u, wide);
        }
        const cpx z = get(y, 0, half, wide);
        put(y, 0, (cpx){add(z.r, z.i, wide), 0}, wide);
        put(y, n, (cpx){sub(z.r, z.i, wide), 0}, wide);
        int32_t k = 1;
        if (pk->sa) {
            const int32_t *sa = pk->sa, *sb = pk->sb; /* read once: the frame's stores could alias the pack */
            for (; k + 7 <= n / 2; k += 8) rf_split8(y, n, k, sa, sb, vhalf);
        }
        for (; k <= n / 2; k++) split_step(y, n, k, split, half, 0);
    }
}
#else
void mn_signal_rfft_s16(const mn_word *args) { mn_signal_rfft_s16_portable(args); }
#endif
