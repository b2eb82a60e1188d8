/* SignalRfft, int16 (Q15) and int32 (Q31) (TFLM signal library): the real FFT of every frame, as micronn's
 * reference (micronn/kernels/_signal_fft.py) computes it: a mixed-radix (4, 2, 3, 5) complex FFT of half the
 * length, decimation in time, then the split step that turns it into the real spectrum.
 *
 * Everything happens in the output frame, which holds fft_length + 2 values: the input's complex pairs are
 * copied there in digit-reversed order (`ORDER`; pairs past the input are the zero padding), every stage then
 * works in place (a butterfly reads and writes the same p values), and so does the split (bins k and n - k are
 * written from the complex values k and n - k, both still unread by earlier steps). The output must not overlap
 * the input (the lowering does not register the op as streaming).
 *
 * The plan comes from prepare: per stage, innermost first, PLAN holds (radix p, span m, groups, offset of the
 * stage's twiddles in TW, MAX / p, then the radix-3 or radix-5 constants). TW holds, per stage and per position u
 * of the span, the (re, im) twiddles of inputs 1 .. p-1; SPLIT the split's n / 2 (re, im) twiddles, DIV2 MAX / 2.
 *
 * Fixed point: every value entering a stage (and the split) is first divided by its radix: times MAX / p, rounded
 * ((x * c + 2^(B-1)) >> B, B = 15 or 31). Twiddle products round the same way, a complex product summing its two
 * exact products first. Sums and differences wrap to the scalar type; halvings are arithmetic shifts, the split's
 * of sums taken in C's int (which wraps for int32 only). The int16 kernel keeps its products in int32 (exact:
 * two products of an int16 by a twiddle below 2^15 sum to less than 2^31), the int32 one in int64.
 */
#include "mn_kernels.h"

enum { OUT, IN, FRAMES, IN_LEN, HALF, ORDER, STAGES, PLAN, TW, SPLIT, DIV2 };
enum { PLAN_WORDS = 9 }; /* p, m, groups, twiddle offset, MAX / p, four radix constants */

typedef struct {
    int32_t r, i;
} cpx;

/* The scalar arithmetic; `wide` (0: int16, 1: int32) is a constant at every call site. */
static inline int32_t wrap(int64_t x, const int wide) { return wide ? (int32_t)(uint32_t)(uint64_t)x : (int16_t)x; }

static inline int32_t add(int32_t a, int32_t b, const int wide) {
    return wide ? (int32_t)((uint32_t)a + (uint32_t)b) : (int16_t)(a + b);
}

static inline int32_t sub(int32_t a, int32_t b, const int wide) {
    return wide ? (int32_t)((uint32_t)a - (uint32_t)b) : (int16_t)(a - b);
}

/* (a * b + 2^(B-1)) >> B, wrapped to the scalar type. */
static inline int32_t smul(int32_t a, int32_t b, const int wide) {
    if (wide) return wrap(((int64_t)a * b + ((int64_t)1 << 30)) >> 31, 1);
    return (int16_t)((a * b + (1 << 14)) >> 15);
}

static inline cpx cmul(cpx a, int32_t br, int32_t bi, const int wide) {
    cpx out;
    if (wide) {
        out.r = wrap(((int64_t)a.r * br - (int64_t)a.i * bi + ((int64_t)1 << 30)) >> 31, 1);
        out.i = wrap(((int64_t)a.r * bi + (int64_t)a.i * br + ((int64_t)1 << 30)) >> 31, 1);
    } else {
        out.r = (int16_t)((a.r * br - a.i * bi + (1 << 14)) >> 15);
        out.i = (int16_t)((a.r * bi + a.i * br + (1 << 14)) >> 15);
    }
    return out;
}

/* Half of a + b (or a - b) summed in C's int: exact for int16, wrapped to 32 bits for int32. */
static inline int32_t half_sum(int32_t a, int32_t b, const int wide) {
    return wide ? (int32_t)((uint32_t)a + (uint32_t)b) >> 1 : (int16_t)((a + b) >> 1);
}

static inline int32_t half_diff(int32_t a, int32_t b, const int wide) {
    return wide ? (int32_t)((uint32_t)a - (uint32_t)b) >> 1 : (int16_t)((a - b) >> 1);
}

static inline int32_t load(const void *p, int32_t k, const int wide) {
    return wide ? ((const int32_t *)p)[k] : ((const int16_t *)p)[k];
}

static inline void store(void *p, int32_t k, int32_t v, const int wide) {
    if (wide) ((int32_t *)p)[k] = v;
    else ((int16_t *)p)[k] = (int16_t)v;
}

static inline cpx get(const void *y, int32_t k, int32_t div, const int wide) {
    cpx v = {smul(load(y, 2 * k, wide), div, wide), smul(load(y, 2 * k + 1, wide), div, wide)};
    return v;
}

static inline void put(void *y, int32_t k, cpx v, const int wide) {
    store(y, 2 * k, v.r, wide);
    store(y, 2 * k + 1, v.i, wide);
}

/* One butterfly of radix p over the values at positions k, k + m, ..., k + (p-1) m of the frame. */
static inline void butterfly(void *y, int32_t k, const int32_t *st, const void *tw, const int wide) {
    const int32_t p = st[0], m = st[1], div = st[4];
    cpx f[5];
    f[0] = get(y, k, div, wide);
    for (int32_t q = 1; q < p; q++) f[q] = cmul(get(y, k + q * m, div, wide), load(tw, 2 * (q - 1), wide),
                                                load(tw, 2 * (q - 1) + 1, wide), wide);
    if (p == 2) {
        put(y, k, (cpx){add(f[0].r, f[1].r, wide), add(f[0].i, f[1].i, wide)}, wide);
        put(y, k + m, (cpx){sub(f[0].r, f[1].r, wide), sub(f[0].i, f[1].i, wide)}, wide);
    } else if (p == 4) {
        const cpx d = {sub(f[0].r, f[2].r, wide), sub(f[0].i, f[2].i, wide)};
        const cpx e = {add(f[0].r, f[2].r, wide), add(f[0].i, f[2].i, wide)};
        const cpx g = {add(f[1].r, f[3].r, wide), add(f[1].i, f[3].i, wide)};
        const cpx h = {sub(f[1].r, f[3].r, wide), sub(f[1].i, f[3].i, wide)};
        put(y, k, (cpx){add(e.r, g.r, wide), add(e.i, g.i, wide)}, wide);
        put(y, k + m, (cpx){add(d.r, h.i, wide), sub(d.i, h.r, wide)}, wide);
        put(y, k + 2 * m, (cpx){sub(e.r, g.r, wide), sub(e.i, g.i, wide)}, wide);
        put(y, k + 3 * m, (cpx){sub(d.r, h.i, wide), add(d.i, h.r, wide)}, wide);
    } else if (p == 3) {
        const int32_t w = st[5];
        const cpx s = {add(f[1].r, f[2].r, wide), add(f[1].i, f[2].i, wide)};
        const cpx d = {smul(sub(f[1].r, f[2].r, wide), w, wide), smul(sub(f[1].i, f[2].i, wide), w, wide)};
        const cpx h = {sub(f[0].r, s.r >> 1, wide), sub(f[0].i, s.i >> 1, wide)};
        put(y, k, (cpx){add(f[0].r, s.r, wide), add(f[0].i, s.i, wide)}, wide);
        put(y, k + m, (cpx){sub(h.r, d.i, wide), add(h.i, d.r, wide)}, wide);
        put(y, k + 2 * m, (cpx){add(h.r, d.i, wide), sub(h.i, d.r, wide)}, wide);
    } else { /* p == 5 */
        const int32_t yar = st[5], yai = st[6], ybr = st[7], ybi = st[8];
        const cpx s7 = {add(f[1].r, f[4].r, wide), add(f[1].i, f[4].i, wide)};
        const cpx s10 = {sub(f[1].r, f[4].r, wide), sub(f[1].i, f[4].i, wide)};
        const cpx s8 = {add(f[2].r, f[3].r, wide), add(f[2].i, f[3].i, wide)};
        const cpx s9 = {sub(f[2].r, f[3].r, wide), sub(f[2].i, f[3].i, wide)};
        const cpx s5 = {add(f[0].r, add(smul(s7.r, yar, wide), smul(s8.r, ybr, wide), wide), wide),
                        add(f[0].i, add(smul(s7.i, yar, wide), smul(s8.i, ybr, wide), wide), wide)};
        const cpx s6 = {add(smul(s10.i, yai, wide), smul(s9.i, ybi, wide), wide),
                        sub(0, add(smul(s10.r, yai, wide), smul(s9.r, ybi, wide), wide), wide)};
        const cpx s11 = {add(f[0].r, add(smul(s7.r, ybr, wide), smul(s8.r, yar, wide), wide), wide),
                         add(f[0].i, add(smul(s7.i, ybr, wide), smul(s8.i, yar, wide), wide), wide)};
        const cpx s12 = {sub(smul(s9.i, yai, wide), smul(s10.i, ybi, wide), wide),
                         sub(smul(s10.r, ybi, wide), smul(s9.r, yai, wide), wide)};
        put(y, k, (cpx){add(f[0].r, add(s7.r, s8.r, wide), wide), add(f[0].i, add(s7.i, s8.i, wide), wide)}, wide);
        put(y, k + m, (cpx){sub(s5.r, s6.r, wide), sub(s5.i, s6.i, wide)}, wide);
        put(y, k + 2 * m, (cpx){add(s11.r, s12.r, wide), add(s11.i, s12.i, wide)}, wide);
        put(y, k + 3 * m, (cpx){sub(s11.r, s12.r, wide), sub(s11.i, s12.i, wide)}, wide);
        put(y, k + 4 * m, (cpx){add(s5.r, s6.r, wide), add(s5.i, s6.i, wide)}, wide);
    }
}

/* The split's step k: bins k and n - k from the complex values k and n - k. */
static inline void split_step(void *y, int32_t n, int32_t k, const void *split, int32_t half, const int wide) {
    const cpx pk = get(y, k, half, wide);
    const cpx qk = {smul(load(y, 2 * (n - k), wide), half, wide),
                    smul(sub(0, load(y, 2 * (n - k) + 1, wide), wide), half, wide)};
    const cpx f1 = {add(pk.r, qk.r, wide), add(pk.i, qk.i, wide)};
    const cpx f2 = {sub(pk.r, qk.r, wide), sub(pk.i, qk.i, wide)};
    const cpx w = cmul(f2, load(split, 2 * (k - 1), wide), load(split, 2 * (k - 1) + 1, wide), wide);
    put(y, k, (cpx){half_sum(f1.r, w.r, wide), half_sum(f1.i, w.i, wide)}, wide);
    put(y, n - k, (cpx){half_diff(f1.r, w.r, wide), half_diff(w.i, f1.i, wide)}, wide);
}

static inline void rfft(const mn_word *args, const int wide) {
    const int32_t frames = MN_I(FRAMES), in_len = MN_I(IN_LEN), n = MN_I(HALF), stages = MN_I(STAGES);
    const int32_t *order = MN_P(const int32_t, ORDER), *plan = MN_P(const int32_t, PLAN);
    const void *twiddles = MN_P(const void, TW), *split = MN_P(const void, SPLIT);
    const int32_t half = MN_I(DIV2); /* MAX / 2, the split's division by 2 */
    for (int32_t frame = 0; frame < frames; frame++) {
        void *y = (uint8_t *)MN_P(void, OUT) + (size_t)frame * (size_t)(2 * n + 2) * (wide ? 4u : 2u);
        const uint8_t *x = (const uint8_t *)MN_P(const void, IN) + (size_t)frame * (size_t)in_len * (wide ? 4u : 2u);
        for (int32_t j = 0; j < n; j++) { /* digit-reversed complex pairs of the zero-padded frame */
            const int32_t s = 2 * order[j];
            store(y, 2 * j, s < in_len ? load(x, s, wide) : 0, wide);
            store(y, 2 * j + 1, s + 1 < in_len ? load(x, s + 1, wide) : 0, wide);
        }
        for (int32_t s = 0; s < stages; s++) {
            const int32_t *st = plan + PLAN_WORDS * s;
            const int32_t p = st[0], m = st[1], groups = st[2];
            const uint8_t *tw = (const uint8_t *)twiddles + (size_t)st[3] * (wide ? 4u : 2u);
            for (int32_t g = 0; g < groups; g++)
                for (int32_t u = 0; u < m; u++)
                    butterfly(y, g * p * m + u, st, tw + (size_t)(2 * (p - 1) * u) * (wide ? 4u : 2u), wide);
        }
        /* the split: bins 0 and n from value 0, then bins k and n - k from values k and n - k */
        const cpx z = get(y, 0, half, wide);
        put(y, 0, (cpx){add(z.r, z.i, wide), 0}, wide);
        put(y, n, (cpx){sub(z.r, z.i, wide), 0}, wide);
        for (int32_t k = 1; k <= n / 2; k++) split_step(y, n, k, split, half, wide);
    }
}

void mn_signal_rfft_s16(const mn_word *args) { rfft(args, 0); }

void mn_signal_rfft_s32(const mn_word *args) { rfft(args, 1); }
