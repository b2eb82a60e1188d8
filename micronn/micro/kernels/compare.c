/* EQUAL, NOT_EQUAL, LESS, LESS_EQUAL, GREATER, GREATER_EQUAL (bool output) and LOGICAL_AND, LOGICAL_OR (bool
 * operands), with broadcasting (mn_elementwise.h's walk, byte strides per operand).
 *
 * Operands are compared as they are: float32 as IEEE values (a NaN compares unequal and unordered, as numpy
 * does), integers as their type, bool as bytes. int8 comparisons, which rescale quantized operands, are not
 * lowered here. Outputs are 1 or 0. */
#include "mn_elementwise.h"

enum { OUT, IN1, IN2, OP, TYPE, GEO };
enum { EQ, NE, LT, LE, GT, GE };
enum { T_BOOL, T_INT16, T_INT32, T_INT64, T_FLOAT32 };

/* -1, 0 or 1 for ordered operands; 2 when a float is NaN (every ordered test then fails, NOT_EQUAL holds). */
static inline int order(const uint8_t *a, const uint8_t *b, int type) {
    switch (type) {
    case T_BOOL: return (*a > *b) - (*a < *b);
    case T_INT16: { int16_t x, y; memcpy(&x, a, 2); memcpy(&y, b, 2); return (x > y) - (x < y); }
    case T_INT32: { int32_t x, y; memcpy(&x, a, 4); memcpy(&y, b, 4); return (x > y) - (x < y); }
    case T_INT64: { int64_t x, y; memcpy(&x, a, 8); memcpy(&y, b, 8); return (x > y) - (x < y); }
    default: {
        float x, y;
        memcpy(&x, a, 4);
        memcpy(&y, b, 4);
        return x > y ? 1 : x < y ? -1 : x == y ? 0 : 2;
    }
    }
}

static void compare_row(uint8_t *p0, const uint8_t *p1, const uint8_t *p2, int32_t n, int32_t s0, int32_t s1,
                        int32_t s2, const mn_word *args) {
    const int op = MN_I(OP), type = MN_I(TYPE);
    for (int32_t i = 0; i < n; i++, p0 += s0, p1 += s1, p2 += s2) {
        const int c = order(p1, p2, type);
        int r;
        switch (op) {
        case EQ: r = c == 0; break;
        case NE: r = c != 0; break;
        case LT: r = c == -1; break;
        case LE: r = c == -1 || c == 0; break;
        case GT: r = c == 1; break;
        default: r = c == 1 || c == 0; break;
        }
        *p0 = (uint8_t)r;
    }
}

void mn_compare(const mn_word *args) {
    mn_walk(args, GEO, MN_P(uint8_t, OUT), MN_P(const uint8_t, IN1), MN_P(const uint8_t, IN2), compare_row);
}

/* Arguments OUT, IN1, IN2, ANY (0 AND, 1 OR), then the walk. Each operand byte is read before the output byte is
 * written (exactly in place is fine). */
enum { L_ANY = 3, L_GEO };

static void logical_row(uint8_t *p0, const uint8_t *p1, const uint8_t *p2, int32_t n, int32_t s0, int32_t s1,
                        int32_t s2, const mn_word *args) {
    const int any = MN_I(L_ANY);
    for (int32_t i = 0; i < n; i++, p0 += s0, p1 += s1, p2 += s2) {
        const int a = *p1 != 0, b = *p2 != 0;
        *p0 = (uint8_t)(any ? a || b : a && b);
    }
}

void mn_logical(const mn_word *args) {
    mn_walk(args, L_GEO, MN_P(uint8_t, OUT), MN_P(const uint8_t, IN1), MN_P(const uint8_t, IN2), logical_row);
}
