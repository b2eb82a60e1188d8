/* micronn's exact float activations, timed by lstm_bound.py: the host ports' vector sigmoid and tanhf
 * (micronn/micro/kernels/host/mn_host_libm.h, which give glibc's bits on every input), or the scalar functions of
 * mn_libm.h where the compiler does not target AVX2. act_run(which, y, x, n, rounds): `rounds` passes of
 * y[0..n) = f(x[0..n)), which 0: TFLM's float sigmoid, 1: tanhf. */
#include "mn_host_libm.h"

void act_run(int which, float *y, const float *x, int n, long rounds) {
    for (long r = 0; r < rounds; r++) {
        __asm__ volatile("" ::: "memory"); /* every pass reads x and writes y again */
#if defined(MNH_AVX2)
        if (which == 0) mnh_sigmoid_n(y, x, n);
        else mnh_tanhf_n(y, x, n);
#else
        for (int i = 0; i < n; i++) y[i] = which == 0 ? mn_libm_sigmoid(x[i]) : mn_libm_tanhf(x[i]);
#endif
    }
}
