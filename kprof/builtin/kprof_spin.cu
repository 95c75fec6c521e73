// Holds the stream until the host sets *flag, so everything queued behind it (an event, the kernel,
// an event) is already on the GPU when it starts: the timed interval holds no host launch gap.
// Gives up after max_spins sleeps, so a host that dies never hangs the GPU. __nanosleep is sm_70 and
// newer; on an older GPU each "sleep" is a wait of 1000 clock cycles (about as long at Pascal's clocks).
extern "C" __global__ void kprof_spin(const volatile int* flag, long long max_spins) {
    for (long long i = 0; i < max_spins && *flag == 0; ++i) {
#if __CUDA_ARCH__ >= 700
        __nanosleep(1000);
#else
        const long long start = clock64();
        while (clock64() - start < 1000) {
        }
#endif
    }
}
