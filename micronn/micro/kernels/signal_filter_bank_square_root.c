/* SignalFilterBankSquareRoot, uint64 (TFLM signal library): rounded integer square roots, shifted right by the
 * run-time scale_bits (SignalFftAutoScale's output), as uint32.
 *
 * The root is floor(sqrt(x)) rounded up when the remainder x - s*s exceeds s, except at the cap: 0xFFFF for
 * x < 2^32 and 0xFFFFFFFF above, which it never passes. TFLM fails an invoke whose scale_bits lies outside
 * [0, 31] (micronn's reference raises); the device cannot, and writes zeros instead, and reports MN_SQRT_BAD_SCALE
 * in mn_status.
 */
#include "mn_kernels.h"

enum { OUT, IN, SCALE, COUNT };
#define MN_SQRT_BAD_SCALE (-1002)

__attribute__((weak)) int32_t mn_status; /* the kernels' error channel (see spill.c) */

/* floor(sqrt(x)), one result bit per step from the top (no division, no 64-bit multiply). */
static uint32_t floor_sqrt64(uint64_t x) {
    uint64_t root = 0, bit = (uint64_t)1 << 62;
    while (bit > x) bit >>= 2;
    while (bit) {
        if (x >= root + bit) {
            x -= root + bit;
            root = (root >> 1) + bit;
        } else {
            root >>= 1;
        }
        bit >>= 2;
    }
    return (uint32_t)root;
}

void mn_signal_filter_bank_square_root_u64(const mn_word *args) {
    uint32_t *out = MN_P(uint32_t, OUT);
    const uint64_t *x = MN_P(const uint64_t, IN);
    const int32_t shift = *MN_P(const int32_t, SCALE), count = MN_I(COUNT);
    if (shift < 0 || shift > 31) {
        for (int32_t i = 0; i < count; i++) out[i] = 0;
        mn_status = MN_SQRT_BAD_SCALE;
        return;
    }
    for (int32_t i = 0; i < count; i++) {
        const uint64_t v = x[i];
        const uint32_t s = floor_sqrt64(v);
        const uint32_t cap = (v >> 32) ? 0xFFFFFFFFu : 0xFFFFu;
        const uint64_t remainder = v - (uint64_t)s * s;
        out[i] = (s + (uint32_t)(remainder > s && s != cap)) >> shift;
    }
}
