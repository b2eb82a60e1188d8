/* UNIDIRECTIONAL_SEQUENCE_LSTM, float32, as micronn's Python kernel (TFLM's reference) computes it. The time loop
 * runs here: one call computes the whole sequence.
 *
 * Per time step and batch row, for the gates forget, input, cell and output:
 *   pre  = clamp(W_x x + bias) + clamp(W_h h + 0)  (each sum from 0 in index order, products rounded first;
 *                                                   clamp: infinities to +-FLT_MAX)
 *   gate = sigmoid(pre) for forget, input, output; tanhf(pre) (or pre itself) for the cell gate
 *   c    = clamp(forget * c) + clamp(input * cell_gate), clipped to +-clip when the model sets a cell clip
 *   h    = clamp(tanhf(c) * output); out[t] = h
 * The gate vectors of a row live in the scratch buffers the Python kernel requested; every recurrent product
 * reads the row's old hidden state, replaced once its four gates are known.
 *
 * The reference calls the C library for expf (in TFLM's sigmoid) and tanhf: glibc's, whose results are not
 * always correctly rounded, so these are its algorithms, operation for operation (each checked on all 2^32
 * float inputs against the host's, see tests/micro/test_kernels_lstm.py):
 *  - expf: x 32/ln2 = k + r, exp(x) = 2^(k/32) 2^(r/32) with a cubic in r, in double. The x86-64 build the
 *    reference runs on fuses its multiply-adds; only the unrounded product in r changes a float result (on two
 *    inputs), and splitting 32/ln2 in two parts gives it without an FMA instruction;
 *  - tanhf: from expm1f (fdlibm's float algorithm: reduction by ln2 in two parts, a rational correction).
 */
#include "mn_f32.h"

enum {
    OUT, IN, W_IN, W_REC = W_IN + 4, BIAS = W_REC + 4, HIDDEN = BIAS + 4, CELL, SCRATCH, BATCH = SCRATCH + 4, STEPS,
    N_INPUT, UNITS, TIME_MAJOR, CELL_TANH, CELL_CLIP
};
enum { FORGET, INPUT_GATE, CELL_GATE, OUTPUT_GATE, GATES };

#define LSTM_FLT_MAX 0x1.fffffep+127f

static inline uint32_t lstm_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static inline float lstm_float(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* ---- expf ------------------------------------------------------------------------------------------------- */

static float lstm_expf(float x) {
    /* 2^(j/32), j = 0..31, to the nearest double */
    static const double two_j[32] = {
        0x1.0000000000000p+0, 0x1.059b0d3158574p+0, 0x1.0b5586cf9890fp+0, 0x1.11301d0125b51p+0, 0x1.172b83c7d517bp+0,
        0x1.1d4873168b9aap+0, 0x1.2387a6e756238p+0, 0x1.29e9df51fdee1p+0, 0x1.306fe0a31b715p+0, 0x1.371a7373aa9cbp+0,
        0x1.3dea64c123422p+0, 0x1.44e086061892dp+0, 0x1.4bfdad5362a27p+0, 0x1.5342b569d4f82p+0, 0x1.5ab07dd485429p+0,
        0x1.6247eb03a5585p+0, 0x1.6a09e667f3bcdp+0, 0x1.71f75e8ec5f74p+0, 0x1.7a11473eb0187p+0, 0x1.82589994cce13p+0,
        0x1.8ace5422aa0dbp+0, 0x1.93737b0cdc5e5p+0, 0x1.9c49182a3f090p+0, 0x1.a5503b23e255dp+0, 0x1.ae89f995ad3adp+0,
        0x1.b7f76f2fb5e47p+0, 0x1.c199bdd85529cp+0, 0x1.cb720dcef9069p+0, 0x1.d5818dcfba487p+0, 0x1.dfc97337b9b5fp+0,
        0x1.ea4afa2a490dap+0, 0x1.f50765b6e4540p+0,
    };
    const double inv_step = 0x1.71547652b82fep+5; /* 32 / ln2 */
    /* inv_step = hi + lo, hi with 29 significant bits: hi * x is exact for a float x */
    const double inv_step_hi = 0x1.7154765p+5, inv_step_lo = 0x1.5c17fp-26;
    const double round_shift = 0x1.8p+52;          /* adding it rounds to an integer, kept in the low bits */
    /* 2^(r/32) - 1 ~ r (c2 + r c1 + r^2 c0) */
    const double c0 = 0x1.c6af84b912394p-20, c1 = 0x1.ebfce50fac4f3p-13, c2 = 0x1.62e42ff0c52d6p-6;
    const uint32_t bits = lstm_bits(x), top = (bits >> 20) & 0x7ffu;
    if (top >= 0x42bu) {                                    /* |x| >= 88, infinities and NaN */
        if (bits == 0xff800000u) return 0.0f;
        if (top >= 0x7f8u) return x + x;
        if (x > 0x1.62e42ep6f) return 0x1p97f * 0x1p97f;   /* overflow: +inf */
        if (x < -0x1.9fe368p6f) return 0x1p-95f * 0x1p-95f; /* underflow: +0 */
    }
    const double xd = (double)x;
    const double z = inv_step * xd;
    double kd = z + round_shift;
    uint64_t k;
    memcpy(&k, &kd, sizeof k);
    kd = kd - round_shift;
    /* r = x 32/ln2 - k with the product unrounded, as the reference's fused multiply-add gives it: hi x - k is
     * exact (|r| < 1), the small lo x is added once */
    double r = inv_step_hi * xd;
    r = r - kd;
    const double r_lo = inv_step_lo * xd;
    r = r + r_lo;
    uint64_t scale_bits;
    memcpy(&scale_bits, &two_j[k % 32], sizeof scale_bits);
    scale_bits += (k - k % 32) << 47; /* 2^(j/32) * 2^m for k = 32 m + j */
    double scale;
    memcpy(&scale, &scale_bits, sizeof scale);
    double hi = c0 * r;
    hi = hi + c1;
    const double r2 = r * r;
    double lo = c2 * r;
    lo = lo + 1.0;
    double y = hi * r2;
    y = y + lo;
    y = y * scale;
    return (float)y;
}

/* ---- tanhf ------------------------------------------------------------------------------------------------ */

/* exp(x) - 1 for the arguments tanhf passes, with fdlibm's float operations. */
static float lstm_expm1f(float x) {
    const float ln2_hi = 6.9313812256e-01f, ln2_lo = 9.0580006145e-06f, inv_ln2 = 1.4426950216e+00f;
    const float q1 = -3.3333335072e-02f, q2 = 1.5873016091e-03f, q3 = -7.9365076090e-05f, q4 = 4.0082177293e-06f,
                q5 = -2.0109921195e-07f;
    const uint32_t bits = lstm_bits(x), mag = bits & 0x7fffffffu;
    const int negative = (int)(bits >> 31);
    float c = 0.0f;
    int32_t k = 0;
    if (mag >= 0x4195b844u) {                   /* |x| >= 27 ln2 */
        if (mag > 0x7f800000u) return x + x;
        if (mag == 0x7f800000u) return negative ? -1.0f : x;
        if (negative) return -1.0f;
        if (x > 8.8721679688e+01f) return x * 0x1p127f * 0x1p127f;
    }
    if (mag > 0x3eb17218u) {                    /* |x| > ln2 / 2: x = k ln2 + (hi - lo) */
        float hi, lo;
        if (mag < 0x3f851592u) {                /* |x| < 3 ln2 / 2 */
            hi = negative ? x + ln2_hi : x - ln2_hi;
            lo = negative ? -ln2_lo : ln2_lo;
            k = negative ? -1 : 1;
        } else {
            const float scaled = inv_ln2 * x;
            k = (int32_t)(scaled + (negative ? -0.5f : 0.5f));
            const float kf = (float)k;
            const float k_hi = kf * ln2_hi;
            hi = x - k_hi;
            lo = kf * ln2_lo;
        }
        x = hi - lo;
        const float lost = hi - x;
        c = lost - lo;                          /* the reduction's rounding error */
    } else if (mag < 0x33000000u) {             /* |x| < 2^-25 */
        return x;
    }
    const float half_x = 0.5f * x;
    const float hxs = x * half_x;
    float p = hxs * q5;
    p = q4 + p;
    p = hxs * p;
    p = q3 + p;
    p = hxs * p;
    p = q2 + p;
    p = hxs * p;
    p = q1 + p;
    p = hxs * p;
    const float r1 = 1.0f + p;
    const float rh = r1 * half_x;
    const float t = 3.0f - rh;
    const float xt = x * t;
    const float denominator = 6.0f - xt;
    const float numerator = r1 - t;
    const float quotient = numerator / denominator;
    float e = hxs * quotient;
    if (k == 0) {
        const float xe = x * e;
        const float d = xe - hxs;
        return x - d;
    }
    const float ec = e - c;
    const float xec = x * ec;
    e = xec - c;
    e = e - hxs;
    if (k == -1) {
        const float d = x - e;
        const float half = 0.5f * d;
        return half - 0.5f;
    }
    if (k == 1) {
        if (x < -0.25f) {
            const float s = x + 0.5f;
            const float d = e - s;
            return -2.0f * d;
        }
        const float d = x - e;
        const float twice = 2.0f * d;
        return 1.0f + twice;
    }
    float y;
    if (k <= -2 || k > 56) {
        const float d = e - x;
        y = 1.0f - d;
        y = lstm_float(lstm_bits(y) + ((uint32_t)k << 23)); /* times 2^k */
        return y - 1.0f;
    }
    if (k < 23) {
        const float one_minus = lstm_float(0x3f800000u - (0x1000000u >> k)); /* 1 - 2^-k */
        const float d = e - x;
        y = one_minus - d;
    } else {
        const float two_minus_k = lstm_float((uint32_t)(0x7f - k) << 23);
        const float s = e + two_minus_k;
        y = x - s;
        y = y + 1.0f;
    }
    return lstm_float(lstm_bits(y) + ((uint32_t)k << 23));
}

static float lstm_tanhf(float x) {
    const uint32_t bits = lstm_bits(x), mag = bits & 0x7fffffffu;
    float z;
    if (mag >= 0x7f800000u) {                   /* +-inf: +-1; NaN: NaN */
        const float inverse = 1.0f / x;
        return (bits >> 31) ? inverse - 1.0f : inverse + 1.0f;
    }
    if (mag == 0) return x;
    if (mag >= 0x41b00000u) {                   /* |x| >= 22 */
        z = 1.0f - 1.0e-30f;
    } else if (mag < 0x24000000u) {             /* |x| < 2^-55 */
        const float s = 1.0f + x;
        return x * s;
    } else {
        const float twice = 2.0f * lstm_float(mag);
        if (mag >= 0x3f800000u) {               /* |x| >= 1: 1 - 2 / (e^2|x| + 1) */
            const float t = lstm_expm1f(twice);
            const float s = t + 2.0f;
            const float q = 2.0f / s;
            z = 1.0f - q;
        } else {                                /* -(e^-2|x| - 1) / (e^-2|x| + 1) */
            const float t = lstm_expm1f(-twice);
            const float s = t + 2.0f;
            const float n = -t;
            z = n / s;
        }
    }
    return (bits >> 31) ? -z : z;
}

/* ---- the kernel -------------------------------------------------------------------------------------------- */

/* TFLM's float sigmoid: 1 above 16.619..., expf(x) below -9, else 1 / (1 + expf(-x)). */
static float lstm_sigmoid(float x) {
    if (x > 16.619047164916992188f) return 1.0f;
    if (x < -9.0f) return lstm_expf(x);
    const float e = lstm_expf(-x);
    const float d = 1.0f + e;
    return 1.0f / d;
}

static inline float lstm_clamp(float x) { return mn_f32_clamp(x, -LSTM_FLT_MAX, LSTM_FLT_MAX); }

/* sum x[j] w[j] from 0 in index order, each product rounded before it is added. */
static float lstm_dot(const float *x, const float *w, int n) {
    float total = 0.0f;
    for (int j = 0; j < n; j++) total = mn_f32_mac(total, x[j], w[j]);
    return total;
}

void mn_unidirectional_sequence_lstm_f32(const mn_word *args) {
    float *out = MN_P(float, OUT);
    const float *in = MN_P(const float, IN);
    float *hidden_all = MN_P(float, HIDDEN), *cell_all = MN_P(float, CELL);
    const int batch = MN_I(BATCH), steps = MN_I(STEPS), n_input = MN_I(N_INPUT), units = MN_I(UNITS);
    const int time_major = MN_I(TIME_MAJOR), cell_tanh = MN_I(CELL_TANH);
    const float clip = mn_f32_arg(args, CELL_CLIP);
    float *gate[GATES];
    for (int g = 0; g < GATES; g++) gate[g] = MN_P(float, SCRATCH + g);

    for (int t = 0; t < steps; t++) {
        for (int b = 0; b < batch; b++) {
            const int row = time_major ? t * batch + b : b * steps + t;
            const float *x = in + (size_t)row * n_input;
            float *h = hidden_all + (size_t)b * units, *c = cell_all + (size_t)b * units;
            for (int g = 0; g < GATES; g++) {
                const float *w_in = MN_P(const float, W_IN + g), *w_rec = MN_P(const float, W_REC + g);
                const float *bias = MN_P(const float, BIAS + g);
                for (int u = 0; u < units; u++) {
                    const float from_x = lstm_dot(x, w_in + (size_t)u * n_input, n_input) + bias[u];
                    const float from_h = lstm_dot(h, w_rec + (size_t)u * units, units) + 0.0f;
                    const float pre = lstm_clamp(from_x) + lstm_clamp(from_h);
                    float y;
                    if (g != CELL_GATE) y = lstm_sigmoid(pre);
                    else y = cell_tanh ? lstm_tanhf(pre) : pre;
                    gate[g][u] = y;
                }
            }
            for (int u = 0; u < units; u++) {
                const float kept = gate[FORGET][u] * c[u];
                const float added = gate[INPUT_GATE][u] * gate[CELL_GATE][u];
                float cell = lstm_clamp(kept) + lstm_clamp(added);
                if (clip > 0.0f && cell == cell) {      /* np.minimum / np.maximum: NaN passes */
                    if (cell > clip) cell = clip;
                    if (cell < -clip) cell = -clip;
                }
                c[u] = cell;
                const float squashed = lstm_tanhf(cell);
                const float product = squashed * gate[OUTPUT_GATE][u];
                h[u] = lstm_clamp(product);
            }
            memcpy(out + (size_t)row * units, h, (size_t)units * sizeof(float));
        }
    }
}
