// Holds the stream until the host sets *flag, so everything queued behind it (an event, the kernel,
// an event) is already on the GPU when it starts: the timed interval holds no host launch gap.
// Gives up after max_spins sleeps, so a host that dies never hangs the GPU.
extern "C" __global__ void kprof_spin(const volatile int* flag, long long max_spins) {
    for (long long i = 0; i < max_spins && *flag == 0; ++i) __nanosleep(1000);
}
