/* CAST, the host port (x86-64) of kernels/cast.c, same symbol, same argument words.
 *
 * The portable kernel converts value by value through mn_load / mn_store, which switch on the types per element.
 * Here the types are dispatched once: a cast to the same integer type (audio_preprocessor's int32 -> int32) is a
 * memmove, which gives the element-by-element copy's bytes in either direction the lowering chose (every element
 * is read before its slot is written over, so reading all before writing is the same); other pairs run one loop
 * per pair in the lowering's direction, the same conversions as the portable kernel's (sign- or zero-extend to
 * 32 bits, keep the low bits; to bool x != 0). Plain C: no AVX2 needed.
 */
#define mn_cast mn_cast_portable
#include <string.h>
#include "cast.portable.inc"
#undef mn_cast

#define CAST_LOOP(TI, TO, CONV)                                                                                    \
    do {                                                                                                       \
        const TI *s = (const TI *)x;                                                                           \
        TO *d = (TO *)out;                                                                                     \
        if (backward)                                                                                          \
            for (int32_t i = count - 1; i >= 0; i--) { const int32_t v = s[i]; d[i] = (TO)(CONV); }           \
        else                                                                                                   \
            for (int32_t i = 0; i < count; i++) { const int32_t v = s[i]; d[i] = (TO)(CONV); }                \
        return;                                                                                                \
    } while (0)

#define CAST_TO(TI)                                                                                                \
    switch (out_type) {                                                                                            \
    case MN_INT8: CAST_LOOP(TI, int8_t, v);                                                                        \
    case MN_UINT8: CAST_LOOP(TI, uint8_t, v);                                                                      \
    case MN_INT16: CAST_LOOP(TI, int16_t, v);                                                                      \
    case MN_INT32: CAST_LOOP(TI, int32_t, v);                                                                      \
    case MN_BOOL: CAST_LOOP(TI, uint8_t, v != 0);                                                                  \
    default: break;                                                                                                \
    }

void mn_cast(const mn_word *args) {
    void *out = MN_P(void, OUT);
    const void *x = MN_P(const void, IN);
    const int32_t count = MN_I(COUNT), in_type = MN_I(IN_TYPE), out_type = MN_I(OUT_TYPE);
    const int32_t backward = MN_I(BACKWARD);
    static const size_t size[4] = {1, 1, 2, 4};
    if (count <= 0) return;
    if (in_type == out_type && in_type >= MN_INT8 && in_type <= MN_INT32) {
        memmove(out, x, (size_t)count * size[in_type]);
        return;
    }
    switch (in_type) {
    case MN_INT8: CAST_TO(int8_t) break;
    case MN_UINT8: CAST_TO(uint8_t) break;
    case MN_INT16: CAST_TO(int16_t) break;
    case MN_INT32: CAST_TO(int32_t) break;
    default: break;
    }
    mn_cast_portable(args);
}
