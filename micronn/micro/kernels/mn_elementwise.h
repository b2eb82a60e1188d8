/* The walk shared by micronn's broadcasting elementwise and reduction kernels (ADD, SUB, MUL, MAXIMUM,
 * MINIMUM, MEAN).
 *
 * lower_elementwise.py describes an operation as a walk over up to MN_WALK_DIMS dimensions of three operands
 * (an output or accumulator and two inputs), each with its own byte stride per dimension: 0 where an operand
 * is broadcast (or, for a reduction's accumulator, where the dimension is reduced). Dimensions that walk all
 * operands contiguously are merged on the host, so the innermost row is as long as possible and a kernel
 * only supplies what it does along one row. The walk visits rows in row-major order, so an output placed
 * exactly over a same-shaped input (the planner's in-place sharing) reads each element before writing it.
 */
#ifndef MN_ELEMENTWISE_H
#define MN_ELEMENTWISE_H

#include "mn_kernels.h"

#define MN_WALK_DIMS 6
#define MN_WALK_WORDS (4 * MN_WALK_DIMS) /* sizes, then the byte strides of operands 0, 1 and 2 */

/* One row: n elements, operand k at p_k advancing s_k bytes per element; `args` carries the kernel's scalars. */
typedef void mn_row_fn(uint8_t *p0, const uint8_t *p1, const uint8_t *p2, int32_t n, int32_t s0, int32_t s1,
                       int32_t s2, const mn_word *args);

/* Calls `row` for every row of the walk whose geometry starts at word `geo` of `args`. */
static inline void mn_walk(const mn_word *args, int geo, uint8_t *p0, const uint8_t *p1, const uint8_t *p2,
                           mn_row_fn *row) {
    enum { D = MN_WALK_DIMS, IN = MN_WALK_DIMS - 1 };
    const mn_word *size = args + geo, *s0 = size + D, *s1 = s0 + D, *s2 = s1 + D;
    int32_t index[MN_WALK_DIMS - 1] = {0};
    for (int d = 0; d < D; d++)
        if ((int32_t)size[d] <= 0) return;
    for (;;) {
        row(p0, p1, p2, (int32_t)size[IN], (int32_t)s0[IN], (int32_t)s1[IN], (int32_t)s2[IN], args);
        int d = IN - 1;
        for (; d >= 0; d--) { /* the odometer: step dimension d, or rewind it and carry to the one outside */
            const int32_t n = (int32_t)size[d];
            if (++index[d] < n) {
                p0 += (int32_t)s0[d], p1 += (int32_t)s1[d], p2 += (int32_t)s2[d];
                break;
            }
            index[d] = 0;
            p0 -= (int32_t)s0[d] * (n - 1), p1 -= (int32_t)s1[d] * (n - 1), p2 -= (int32_t)s2[d] * (n - 1);
        }
        if (d < 0) return;
    }
}

#endif
