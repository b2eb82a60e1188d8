/* The C helpers a freestanding toolchain expects, for code linked without a C library: memcpy, memmove, memset,
 * memcmp and the ARM EABI run-time helpers. Shared by the device runtime (modules resolve against it) and exported
 * firmware. Compiled with -ffreestanding -fno-builtin so the helpers do not turn into calls to themselves. */
#include <stddef.h>
#include <stdint.h>

/* -- memory helpers (word-wise when both pointers are aligned) -------------------------------------- */
void *memcpy(void *dst, const void *src, size_t n) {
    unsigned char *d = dst;
    const unsigned char *s = src;
    if ((((uintptr_t)d | (uintptr_t)s) & 3) == 0) {
        for (; n >= 4; n -= 4, d += 4, s += 4) *(uint32_t *)d = *(const uint32_t *)s;
    }
    while (n--) *d++ = *s++;
    return dst;
}

void *memmove(void *dst, const void *src, size_t n) {
    unsigned char *d = dst;
    const unsigned char *s = src;
    if (d == s || n == 0) return dst;
    if (d < s || d >= s + n) return memcpy(dst, src, n);
    while (n--) d[n] = s[n];
    return dst;
}

void *memset(void *dst, int c, size_t n) {
    unsigned char *d = dst;
    uint32_t w = (unsigned char)c * 0x01010101u;
    while (n && ((uintptr_t)d & 3)) { *d++ = (unsigned char)c; n--; }
    for (; n >= 4; n -= 4, d += 4) *(uint32_t *)d = w;
    while (n--) *d++ = (unsigned char)c;
    return dst;
}

int memcmp(const void *a, const void *b, size_t n) {
    const unsigned char *x = a, *y = b;
    for (; n; n--, x++, y++) if (*x != *y) return *x < *y ? -1 : 1;
    return 0;
}

#if defined(__arm__)
/* -- ARM EABI run-time helpers (RTABI): what Thumb code calls for what its CPU lacks ----------------- */
void __aeabi_memcpy(void *d, const void *s, size_t n) { memcpy(d, s, n); }
void __aeabi_memcpy4(void *d, const void *s, size_t n) { memcpy(d, s, n); }
void __aeabi_memcpy8(void *d, const void *s, size_t n) { memcpy(d, s, n); }
void __aeabi_memmove(void *d, const void *s, size_t n) { memmove(d, s, n); }
void __aeabi_memmove4(void *d, const void *s, size_t n) { memmove(d, s, n); }
void __aeabi_memmove8(void *d, const void *s, size_t n) { memmove(d, s, n); }
void __aeabi_memset(void *d, size_t n, int c) { memset(d, c, n); }  /* note the EABI argument order */
void __aeabi_memset4(void *d, size_t n, int c) { memset(d, c, n); }
void __aeabi_memset8(void *d, size_t n, int c) { memset(d, c, n); }
void __aeabi_memclr(void *d, size_t n) { memset(d, 0, n); }
void __aeabi_memclr4(void *d, size_t n) { memset(d, 0, n); }
void __aeabi_memclr8(void *d, size_t n) { memset(d, 0, n); }

/* Unsigned 32-bit division by shift and subtract; quotient in r0, remainder in r1 (a 64-bit return). */
static uint32_t mn_udiv(uint32_t n, uint32_t d, uint32_t *rem) {
    uint32_t q = 0, r = 0;
    if (d == 0) { *rem = n; return n ? 0xffffffffu : 0; }
    for (int i = 31; i >= 0; i--) {
        r = (r << 1) | ((n >> i) & 1u);
        if (r >= d) { r -= d; q |= 1u << i; }
    }
    *rem = r;
    return q;
}
uint32_t __aeabi_uidiv(uint32_t n, uint32_t d) { uint32_t r; return mn_udiv(n, d, &r); }
uint64_t __aeabi_uidivmod(uint32_t n, uint32_t d) {
    uint32_t r, q = mn_udiv(n, d, &r);
    return ((uint64_t)r << 32) | q;
}
static int32_t mn_idiv(int32_t n, int32_t d, int32_t *rem) {
    uint32_t un = n < 0 ? 0u - (uint32_t)n : (uint32_t)n, ud = d < 0 ? 0u - (uint32_t)d : (uint32_t)d, ur;
    uint32_t uq = mn_udiv(un, ud, &ur);
    *rem = (int32_t)(n < 0 ? 0u - ur : ur);           /* C semantics: truncate toward zero */
    return (int32_t)((n < 0) != (d < 0) ? 0u - uq : uq);
}
int32_t __aeabi_idiv(int32_t n, int32_t d) { int32_t r; return mn_idiv(n, d, &r); }
uint64_t __aeabi_idivmod(int32_t n, int32_t d) {
    int32_t r, q = mn_idiv(n, d, &r);
    return ((uint64_t)(uint32_t)r << 32) | (uint32_t)q;
}

/* 64-bit helpers written on 32-bit halves (a 32x32->64 multiply would call __aeabi_lmul on Thumb-1). */
typedef union { uint64_t u; struct { uint32_t lo, hi; } w; } mn_u64;
static uint64_t mn_mul32(uint32_t a, uint32_t b) {  /* 32x32 -> 64 from four 16x16 -> 32 products */
    uint32_t al = a & 0xffffu, ah = a >> 16, bl = b & 0xffffu, bh = b >> 16;
    uint32_t ll = al * bl, lh = al * bh, hl = ah * bl, hh = ah * bh;
    uint32_t mid = (ll >> 16) + (lh & 0xffffu) + (hl & 0xffffu);
    mn_u64 r;
    r.w.lo = (ll & 0xffffu) | (mid << 16);
    r.w.hi = hh + (lh >> 16) + (hl >> 16) + (mid >> 16);
    return r.u;
}
uint64_t __aeabi_lmul(uint64_t a, uint64_t b) {
    mn_u64 x = {a}, y = {b}, r;
    r.u = mn_mul32(x.w.lo, y.w.lo);
    r.w.hi += x.w.lo * y.w.hi + x.w.hi * y.w.lo;
    return r.u;
}
uint64_t __aeabi_llsl(uint64_t a, int n) {
    mn_u64 x = {a}, r;
    if (n >= 32) { r.w.hi = x.w.lo << (n - 32); r.w.lo = 0; }
    else if (n == 0) return a;
    else { r.w.hi = (x.w.hi << n) | (x.w.lo >> (32 - n)); r.w.lo = x.w.lo << n; }
    return r.u;
}
uint64_t __aeabi_llsr(uint64_t a, int n) {
    mn_u64 x = {a}, r;
    if (n >= 32) { r.w.lo = x.w.hi >> (n - 32); r.w.hi = 0; }
    else if (n == 0) return a;
    else { r.w.lo = (x.w.lo >> n) | (x.w.hi << (32 - n)); r.w.hi = x.w.hi >> n; }
    return r.u;
}
int64_t __aeabi_lasr(int64_t a, int n) {
    mn_u64 x = {(uint64_t)a}, r;
    int32_t hi = (int32_t)x.w.hi;
    if (n >= 32) { r.w.lo = (uint32_t)(hi >> (n - 32)); r.w.hi = (uint32_t)(hi >> 31); }
    else if (n == 0) return a;
    else { r.w.lo = (x.w.lo >> n) | (x.w.hi << (32 - n)); r.w.hi = (uint32_t)(hi >> n); }
    return (int64_t)r.u;
}
#endif
