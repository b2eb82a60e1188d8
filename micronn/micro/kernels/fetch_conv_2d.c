/* FetchConv2D (TinySeg), int8: CONV_2D over a channel concatenation of arena tensors and spilled tensors, without
 * ever building the concatenation.
 *
 * Arguments after COUNT are (kind, source, channels) triples in channel order: kind 0 an arena tensor at address
 * `source` (N, IN_H, IN_W, channels), kind 1 the object stored under id `source`, of the same layout. Each spilled
 * part keeps a ring of RING input rows in the scratch buffer (the parts' rings back to back, as the Python kernel
 * lays them out); output rows go in order and each input row is read from storage once, when the window first
 * reaches it (rows [lo, hi) of an output row never outnumber the ring, so no row still needed is overwritten).
 *
 * Each output pixel's window is gathered from the parts into a stack buffer of filter_h * filter_w * in_c bytes
 * (laid out group by group, each group's window as contiguous as its filter), taps outside the input holding the
 * input zero point. Every window then starts from bias_full = bias + input_offset * sum(filter), as conv_2d.c's
 * inner windows do, and sums plain int8 dot products (mn_kernels.h): a padded tap adds zp * w, which bias_full
 * takes back, so the 32-bit wrapping sums equal conv_2d.c's valid-taps-only sums bit for bit. Output channels of a
 * group four at a time, then two, then one. A failed storage read stops the kernel (output incomplete) and leaves
 * its code in mn_status. */
#include "mn_kernels.h"

enum { OUT, FILTER, BIAS_FULL, MULT, SHIFT, SCRATCH, STORAGE, N, IN_H, IN_W, IN_C, OUT_H, OUT_W, OUT_C, F_H, F_W,
       F_C, S_H, S_W, D_H, D_W, PAD_T, PAD_L, IN_OFF, OUT_ZP, ACT_MIN, ACT_MAX, RING, COUNT, PARTS };
enum { PART_RAM = 0, PART_VICTIM = 1 };

/* The error channel of the kernels that reach storage: the first failing call's code, read and cleared by the
 * caller (the generated model_invoke, the host-driven runtime). Weak: every such kernel defines it. */
__attribute__((weak)) int32_t mn_status;

/* A few bytes: inline, cheaper than a call for the handful of channels a part has at one pixel. */
static inline void copy_small(int8_t *dst, const int8_t *src, int n) {
    for (int i = 0; i < n; i++) dst[i] = src[i];
}

/* Bytes x[0..n) of input channels [c, c + n) into the window tap at `tap`, split at the groups' borders. */
static inline void put_channels(int8_t *tap, const int8_t *x, int c, int n, int fc, int f_size, int groups) {
    if (groups == 1) { copy_small(tap + c, x, n); return; }
    for (const int end = c + n; c < end;) {
        const int g = c / fc, stop = mn_min(end, (g + 1) * fc);
        copy_small(tap + (size_t)g * f_size + (c - g * fc), x, stop - c);
        x += stop - c;
        c = stop;
    }
}

void mn_fetch_conv_2d_s8(const mn_word *args) {
    int8_t *out = MN_P(int8_t, OUT), *scratch = MN_P(int8_t, SCRATCH);
    const int8_t *filter = MN_P(const int8_t, FILTER);
    const int32_t *bias_full = MN_P(const int32_t, BIAS_FULL);
    const int32_t *mult = MN_P(const int32_t, MULT);
    const int8_t *shift = MN_P(const int8_t, SHIFT); /* int8 per channel (lower._requant_args) */
    mn_storage_fn storage = MN_STORAGE(STORAGE);
    const int n = MN_I(N), in_h = MN_I(IN_H), in_w = MN_I(IN_W), in_c = MN_I(IN_C);
    const int out_h = MN_I(OUT_H), out_w = MN_I(OUT_W), out_c = MN_I(OUT_C);
    const int fh = MN_I(F_H), fw = MN_I(F_W), fc = MN_I(F_C), sh = MN_I(S_H), sw = MN_I(S_W);
    const int dh = MN_I(D_H), dw = MN_I(D_W), pad_t = MN_I(PAD_T), pad_l = MN_I(PAD_L);
    const int32_t in_off = MN_I(IN_OFF), out_zp = MN_I(OUT_ZP), lo = MN_I(ACT_MIN), hi = MN_I(ACT_MAX);
    const int rows = MN_I(RING), count = MN_I(COUNT);
    const int groups = in_c / fc, per_group = out_c / groups, f_row = fw * fc, f_size = fh * f_row;
    const int8_t zero_point = (int8_t)(-in_off);
    const mn_word *parts = args + PARTS;
    int8_t window[groups * f_size];
    const int8_t *row_at[count * fh]; /* part p's input row of filter row fy (NULL outside the input) */

    for (int b = 0; b < n; b++) {
        int next = 0; /* input rows below `next` have been read (those still needed are in their ring slots) */
        for (int oy = 0; oy < out_h; oy++) {
            const int iy0 = oy * sh - pad_t, row_hi = mn_min(iy0 + (fh - 1) * dh + 1, in_h);
            int8_t *ring = scratch;
            for (int p = 0; p < count; p++) {
                const mn_word *part = parts + 3 * p;
                const size_t row_bytes = (size_t)in_w * part[2];
                if (part[0] == PART_VICTIM) { /* this output row's new input rows */
                    for (int r = mn_max(next, mn_max(iy0, 0)); r < row_hi; r++) {
                        const int e = storage((uint32_t)part[1], (uint32_t)(((size_t)b * in_h + r) * row_bytes),
                                              ring + (size_t)(r % rows) * row_bytes, (uint32_t)row_bytes, 0);
                        if (e != 0) { mn_status = e; return; }
                    }
                }
                for (int fy = 0; fy < fh; fy++) {
                    const int iy = iy0 + fy * dh;
                    row_at[p * fh + fy] = iy < 0 || iy >= in_h ? NULL
                        : part[0] == PART_VICTIM ? ring + (size_t)(iy % rows) * row_bytes
                        : (const int8_t *)part[1] + ((size_t)b * in_h + iy) * row_bytes;
                }
                if (part[0] == PART_VICTIM) ring += (size_t)rows * row_bytes;
            }
            next = mn_max(next, row_hi);
            for (int ox = 0; ox < out_w; ox++) {
                const int ix0 = ox * sw - pad_l;
                for (int fy = 0; fy < fh; fy++)
                    for (int fx = 0; fx < fw; fx++) {
                        const int ix = ix0 + fx * dw;
                        int8_t *tap = window + fy * f_row + fx * fc;
                        if (ix < 0 || ix >= in_w || row_at[fy] == NULL) { /* every part shares the row test */
                            for (int g = 0; g < groups; g++) memset(tap + (size_t)g * f_size, zero_point, (size_t)fc);
                            continue;
                        }
                        for (int p = 0, c0 = 0; p < count; p++) {
                            const int ch = (int)parts[3 * p + 2];
                            put_channels(tap, row_at[p * fh + fy] + (size_t)ix * ch, c0, ch, fc, f_size, groups);
                            c0 += ch;
                        }
                    }
                int8_t *o = out + (((size_t)b * out_h + oy) * out_w + ox) * out_c;
                for (int oc = 0; oc < out_c;) {
                    const int8_t *x = window + (size_t)(oc / per_group) * f_size, *w = filter + (size_t)oc * f_size;
                    const int left = per_group - oc % per_group; /* channels left in this group */
                    int m = left >= 4 ? 4 : left >= 2 ? 2 : 1;
                    int32_t acc[4];
                    for (int i = 0; i < m; i++) acc[i] = bias_full[oc + i];
                    if (m == 4) mn_dot4_s8(x, w, f_size, f_size, 0, (uint32_t *)acc);
                    else if (m == 2) mn_dot2_s8(x, w, w + f_size, f_size, &acc[0], &acc[1]);
                    else acc[0] = mn_dot_s8(x, w, f_size, acc[0]);
                    for (int i = 0; i < m; i++)
                        o[oc + i] = mn_requant_s8(acc[i], mult[oc + i], shift[oc + i], out_zp, lo, hi);
                    oc += m;
                }
            }
        }
    }
}
