/* GATHER and SPLIT, the host port (x86-64) of kernels/gather.c, same symbols, same argument words.
 *
 * SPLIT copies every row's part as one memcpy. A lanes twin's SPLIT of a Keras LSTM's gates (16 rows of 80 floats
 * into 4 parts) makes 64 copies of 80 bytes per step, where the call costs more than the copy; here a part of at
 * most MNH_SMALL bytes is copied inline with AVX-512 (whole 64-byte vectors, then one masked), each vector read
 * before it is written, as memcpy's parts (which never overlap their input) allow. GATHER is the portable kernel.
 */
#define mn_split mn_split_portable
#include <string.h>
#include "gather.portable.inc"
#undef mn_split
#include "mn_host.h"

#if defined(__AVX512BW__)
enum { MNH_SMALL = 256 };

static inline void small_copy(uint8_t *dst, const uint8_t *src, size_t n) {
    size_t i = 0;
    for (; i + 64 <= n; i += 64) _mm512_storeu_si512((void *)(dst + i), _mm512_loadu_si512((const void *)(src + i)));
    if (i < n) {
        const __mmask64 k = ((__mmask64)1 << (n - i)) - 1;
        _mm512_mask_storeu_epi8(dst + i, k, _mm512_maskz_loadu_epi8(k, src + i));
    }
}

void mn_split(const mn_word *args) {
    const uint8_t *in = MN_P(const uint8_t, S_IN);
    const int32_t outer = MN_I(S_OUTER), count = MN_I(S_COUNT);
    const size_t row = (size_t)args[S_ROW];
    for (int32_t k = 0; k < count; k++) {
        const mn_word *part = args + S_PARTS + 3 * k;
        if ((size_t)part[2] > MNH_SMALL) {
            mn_split_portable(args);
            return;
        }
    }
    for (int32_t k = 0; k < count; k++) {
        const mn_word *part = args + S_PARTS + 3 * k;
        uint8_t *out = (uint8_t *)part[0];
        const size_t offset = (size_t)part[1], size = (size_t)part[2];
        for (int32_t r = 0; r < outer; r++) small_copy(out + (size_t)r * size, in + (size_t)r * row + offset, size);
    }
}
#else
void mn_split(const mn_word *args) { mn_split_portable(args); }
#endif
