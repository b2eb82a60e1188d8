/* SVDF, int8 input and output with an int16 activation state (TFLM's integer reference kernel).
 *
 * TFLM shifts the state (batch, num_filters * memory_size) left by one element, writes each filter's newest slot
 * with the requantized feature projection weights_feature . (x - input_zp), dots each filter's window with
 * weights_time, sums groups of `rank` filters with the bias and requantizes. Every filter's slot 0 takes its own
 * slot 1 (what the whole-buffer shift moves in from the filter before is overwritten), so here each filter is
 * shifted on its own, in the same pass as its time dot product: the state ends with TFLM's bytes and is read
 * and written once. Filters go 64 at a time: their projections (requantized in one loop), their time steps, their
 * outputs (rank 1: requantized in one loop).
 *
 * PAIRED 1: weights_feature in the paired layout of mn_kernels.h (lower.paired_rows, with its corrections FIX),
 * four filters per tile sharing the input widened once per batch; 0: the plain (filters, input_size) rows.
 */
#include "mn_kernels.h"

enum { OUT, IN, W_FEATURE, W_TIME, BIAS, STATE, BATCHES, INPUT_SIZE, FILTERS, MEMORY, RANK, IN_ZP, STATE_ZP, OUT_ZP,
       MULT_1, SHIFT_1, MULT_2, SHIFT_2, PAIRED, FIX };

#if defined(__ARM_FEATURE_DSP)
typedef uint32_t __attribute__((may_alias)) mn_state_word;

/* acc + sum_m s'[m] * w[m] over one filter's shifted window s' = (s[1..memory), v), s shifted in place, with
 * `words` = memory / 2 >= 2 whole words (s and w word-aligned): word k of s' is (s[2k+1], s[2k+2]), one
 * unaligned load, stored aligned one slot lower, and SMLAD takes it against the int16 pair of weights; the last
 * word, (s[memory-1], v), is read first. Steps of 1 and 2 words, then of 4, leave a last pair: no remainders. */
static inline uint32_t time_words(int16_t *s, const uint32_t *w, int words, uint32_t v, uint32_t acc) {
    mn_state_word *d = (mn_state_word *)s;
    const mn_u32_any *src = (const mn_u32_any *)(s + 1);
    const uint32_t last = (uint32_t)(uint16_t)s[2 * words - 1] | v << 16;
    int k = words - 2; /* words before the last pair */
    if (k & 1) {
        const uint32_t n0 = src[0];
        d[0] = n0;
        acc = MN_SMLAD(n0, w[0], acc);
        d++, src++, w++;
    }
    if (k & 2) {
        const uint32_t n0 = src[0], n1 = src[1];
        d[0] = n0, d[1] = n1;
        acc = MN_SMLAD(n1, w[1], MN_SMLAD(n0, w[0], acc));
        d += 2, src += 2, w += 2;
    }
#pragma clang loop unroll(disable)
    for (k >>= 2; k > 0; k--, d += 4, src += 4, w += 4) { /* four loads before four stores: they pair up */
        const uint32_t n0 = src[0], n1 = src[1], n2 = src[2], n3 = src[3];
        d[0] = n0, d[1] = n1, d[2] = n2, d[3] = n3;
        acc = MN_SMLAD(n3, w[3], MN_SMLAD(n2, w[2], MN_SMLAD(n1, w[1], MN_SMLAD(n0, w[0], acc))));
    }
    const uint32_t n0 = src[0];
    d[0] = n0, d[1] = last;
    return MN_SMLAD(last, w[1], MN_SMLAD(n0, w[0], acc));
}
#endif

#if defined(__ARM_FEATURE_DSP) && defined(__thumb2__)
/* time_words for n filters of 8 * q slots each, as the Cortex-M4 runs it best: per block of 4 words four
 * unaligned loads (the last block three, and the oldest slot packed with the new value), one STM, two LDRD of
 * weights and four SMLAD. acc[i] = init[i] + the filter's dot product. r7 (the frame pointer) is left alone. */
static void time_blocks(int16_t *s, const uint32_t *w, const int16_t *fresh, const uint32_t *init, uint32_t *acc,
                        int n, int q) {
    uint32_t a;
    const uint32_t blocks = (uint32_t)q - 1; /* whole blocks before the last one */
    if (blocks == 0) {
        __asm__ volatile(
            "1:\n\t"
            "ldr   %[a], [%[init]], #4\n\t"
            "ldrh  r4, [%[f]], #2\n\t"
            "ldrh  r5, [%[s], #14]\n\t"
            "ldr   r8, [%[s], #2]\n\t"
            "ldr   r9, [%[s], #6]\n\t"
            "ldr   r10, [%[s], #10]\n\t"
            "pkhbt r11, r5, r4, lsl #16\n\t"
            "stmia %[s]!, {r8, r9, r10, r11}\n\t"
            "ldrd  r4, r5, [%[w]], #8\n\t"
            "smlad %[a], r8, r4, %[a]\n\t"
            "smlad %[a], r9, r5, %[a]\n\t"
            "ldrd  r4, r5, [%[w]], #8\n\t"
            "smlad %[a], r10, r4, %[a]\n\t"
            "smlad %[a], r11, r5, %[a]\n\t"
            "str   %[a], [%[acc]], #4\n\t"
            "subs  %[n], %[n], #1\n\t"
            "bne   1b\n\t"
            : [s] "+r"(s), [w] "+r"(w), [f] "+r"(fresh), [init] "+r"(init), [acc] "+r"(acc), [n] "+r"(n),
              [a] "=&r"(a)
            :
            : "r4", "r5", "r8", "r9", "r10", "r11", "cc", "memory");
        return;
    }
    for (int i = 0; i < n; i++) { /* one filter per asm block: the loop counter needs the register */
        uint32_t k = blocks, a = init[i], v = (uint16_t)fresh[i];
        __asm__ volatile(
            "2:\n\t"
            "ldr   r8, [%[s], #2]\n\t"
            "ldr   r9, [%[s], #6]\n\t"
            "ldr   r10, [%[s], #10]\n\t"
            "ldr   r11, [%[s], #14]\n\t"
            "stmia %[s]!, {r8, r9, r10, r11}\n\t"
            "ldrd  r4, r5, [%[w]], #8\n\t"
            "smlad %[a], r8, r4, %[a]\n\t"
            "smlad %[a], r9, r5, %[a]\n\t"
            "ldrd  r4, r5, [%[w]], #8\n\t"
            "smlad %[a], r10, r4, %[a]\n\t"
            "smlad %[a], r11, r5, %[a]\n\t"
            "subs  %[k], %[k], #1\n\t"
            "bne   2b\n\t"
            "ldrh  r5, [%[s], #14]\n\t"
            "ldr   r8, [%[s], #2]\n\t"
            "ldr   r9, [%[s], #6]\n\t"
            "ldr   r10, [%[s], #10]\n\t"
            "pkhbt r11, r5, %[v], lsl #16\n\t"
            "stmia %[s]!, {r8, r9, r10, r11}\n\t"
            "ldrd  r4, r5, [%[w]], #8\n\t"
            "smlad %[a], r8, r4, %[a]\n\t"
            "smlad %[a], r9, r5, %[a]\n\t"
            "ldrd  r4, r5, [%[w]], #8\n\t"
            "smlad %[a], r10, r4, %[a]\n\t"
            "smlad %[a], r11, r5, %[a]\n\t"
            : [s] "+r"(s), [w] "+r"(w), [a] "+r"(a), [k] "+r"(k)
            : [v] "r"(v)
            : "r4", "r5", "r8", "r9", "r10", "r11", "cc", "memory");
        acc[i] = a;
    }
}
#endif

/* acc[i] = init[i] + sum_m (s'[m] - zp) * w[m] for the n filters from s, w on: each filter's shifted window s'
 * (s[1..memory), then fresh[i]), its state shifted in place. `words`: memory / 2 where the DSP path may take
 * whole words (memory even, state and weights word-aligned, zero point 0), else 0. */
__attribute__((noinline)) static void time_chunk(int16_t *s, const int16_t *w, int memory, int words,
                                                 const int16_t *fresh, int n, int32_t zp, const uint32_t *init,
                                                 uint32_t *acc) {
#if defined(__ARM_FEATURE_DSP) && defined(__thumb2__)
    if (words && words % 4 == 0 && n > 0) {
        time_blocks(s, (const uint32_t *)w, fresh, init, acc, n, words / 4);
        return;
    }
#endif
#if defined(__ARM_FEATURE_DSP)
    if (words == 4) {
        for (int i = 0; i < n; i++, s += 8, w += 8) acc[i] = time_words(s, (const uint32_t *)w, 4, (uint16_t)fresh[i],
                                                                         init[i]);
        return;
    }
    if (words) {
        for (int i = 0; i < n; i++, s += memory, w += memory)
            acc[i] = time_words(s, (const uint32_t *)w, words, (uint16_t)fresh[i], init[i]);
        return;
    }
#else
    (void)words;
#endif
    for (int i = 0; i < n; i++, s += memory, w += memory) {
        uint32_t a = init[i];
        for (int m = 0; m + 1 < memory; m++) {
            s[m] = s[m + 1];
            a += (uint32_t)(s[m] - zp) * (uint32_t)w[m]; /* may wrap */
        }
        s[memory - 1] = fresh[i];
        acc[i] = a + (uint32_t)(fresh[i] - zp) * (uint32_t)w[memory - 1];
    }
}

void mn_svdf_s8(const mn_word *args) {
    int8_t *out = MN_P(int8_t, OUT);
    const int8_t *in = MN_P(const int8_t, IN), *wf = MN_P(const int8_t, W_FEATURE);
    const int16_t *wt = MN_P(const int16_t, W_TIME);
    const int32_t *bias = MN_P(const int32_t, BIAS);
    int16_t *state = MN_P(int16_t, STATE);
    const int batches = MN_I(BATCHES), input_size = MN_I(INPUT_SIZE), filters = MN_I(FILTERS);
    const int memory = MN_I(MEMORY), rank = MN_I(RANK), units = filters / rank, paired = MN_I(PAIRED);
    const int32_t in_zp = MN_I(IN_ZP), state_zp = MN_I(STATE_ZP), out_zp = MN_I(OUT_ZP);
    const mn_rq q1 = mn_rq_init(MN_I(MULT_1), MN_I(SHIFT_1), 0), q2 = mn_rq_init(MN_I(MULT_2), MN_I(SHIFT_2), out_zp);
    const int groups = (input_size + 3) / 4, padded = filters + (filters & 1);
    /* whole-word time steps (DSP only): an even memory and word-aligned state and time weights */
    const int words =
        memory % 2 == 0 && memory >= 4 && state_zp == 0 && !(((uintptr_t)state | (uintptr_t)wt) & 3) ? memory / 2 : 0;
    const int once = paired && groups <= MN_PAIR_SLAB; /* the input widened once per batch */
    uint32_t xe[2 * MN_PAIR_SLAB], acc[64];
    int16_t fresh[64]; /* the newest state values of a chunk of filters (a multiple of 4: whole tiles) */

    for (int b = 0; b < batches; b++) {
        const int8_t *x = in + (size_t)b * input_size;
        int16_t *s = state + (size_t)b * filters * memory;
        int8_t *o = out + (size_t)b * units;
        const int32_t *fix = MN_P(const int32_t, FIX);
        if (once) mn_pair_widen(x, input_size, in_zp, xe);
        uint32_t unit = (uint32_t)bias[0];
        int u = 0, r = 0;
        for (int c0 = 0; c0 < filters; c0 += 64) {
            const int c1 = mn_min(filters, c0 + 64), n = c1 - c0;
            /* the feature projections of the chunk, requantized: clamped to int16, then the zero point added
             * with wrap-around (TFLM's order) */
            for (int j = 0; j < 64; j++) acc[j] = 0;
            if (paired) {
                mn_pair_matvec(x, input_size, in_zp, xe, once, (const uint32_t *)wf + (size_t)c0 * groups,
                               mn_min(padded, c0 + 64) - c0, acc);
                fix = mn_pair_fix(fix, c0, c1, x, in_zp, acc);
            } else {
                for (int f = c0; f < c1; f++) {
                    const int8_t *w = wf + (size_t)f * input_size;
                    for (int i = 0; i < input_size; i++) acc[f - c0] += (uint32_t)((x[i] - in_zp) * w[i]);
                }
            }
            mn_rq_s16_loop(acc, fresh, n, &q1, state_zp);
            /* then each filter's time step, summed per unit (rank 1: the bias is the starting sum) */
            if (rank > 1) for (int j = 0; j < n; j++) acc[j] = 0;
            time_chunk(s + (size_t)c0 * memory, wt + (size_t)c0 * memory, memory, words, fresh, n, state_zp,
                       rank == 1 ? (const uint32_t *)bias + c0 : acc, acc);
            if (rank == 1) {
                mn_rq_s8_loop(acc, o + c0, n, &q2, -128, 127);
                continue;
            }
            for (int j = 0; j < n; j++) {
                unit += acc[j];
                if (++r == rank) {
                    o[u] = (int8_t)mn_rq_clamp(&q2, (int32_t)unit, -128, 127);
                    r = 0;
                    if (++u < units) unit = (uint32_t)bias[u];
                }
            }
        }
    }
}
