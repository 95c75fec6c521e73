// Benchmark integrity on the GPU (kprof bench): a buffer's fingerprint, and its floating-point values
// doubled in place, so the checks after the timed calls cost microseconds, not a host round trip.
//
// kprof_fingerprint: the sum, over the buffer's 32-bit words (and its last 1-3 bytes), of a 64-bit mix
// of the word and its position (splitmix64's finaliser). A sum is independent of the order the threads
// add in, so the same bytes always give the same fingerprint; a changed byte changes it (but for a
// collision of about 1 in 2^64).
__device__ __forceinline__ unsigned long long kprof_mix(unsigned long long x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

extern "C" __global__ void kprof_fingerprint(const unsigned int* __restrict__ words, long long nbytes,
                                             unsigned long long* __restrict__ out) {
    const long long nwords = nbytes / 4;
    const long long stride = (long long)gridDim.x * blockDim.x;
    unsigned long long acc = 0;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < nwords; i += stride) {
        acc += kprof_mix(((unsigned long long)i << 32) | words[i]);
    }
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        const unsigned char* tail = (const unsigned char*)(words + nwords);
        for (long long j = 0; j < nbytes % 4; ++j) {
            acc += kprof_mix(((unsigned long long)(nwords + j) << 32) | (0x100u + tail[j]));
        }
    }
    for (int offset = 16; offset > 0; offset >>= 1) {
        acc += __shfl_down_sync(0xffffffffu, acc, offset);
    }
    if ((threadIdx.x & 31) == 0) {
        atomicAdd(out, acc);
    }
}

// kprof_double: every value of a float16 (kind 0), bfloat16 (1), float32 (2) or float64 (3) buffer
// doubled by adding one to its exponent, exactly; zeros, subnormals, infinities, NaNs and values a
// doubling would overflow stay as they are. Signs and the inputs' domains (positive, below one...)
// are kept as a generated input needs them.
template <typename Word, int MANT, int EXP>
__device__ __forceinline__ Word kprof_doubled(Word w) {
    const Word mask = (Word)((1ull << EXP) - 1);
    const Word e = (Word)((w >> MANT) & mask);
    return (e == 0 || e >= mask - 1) ? w : (Word)(w + ((Word)1 << MANT));
}

extern "C" __global__ void kprof_double(void* __restrict__ buf, long long count, int kind) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += stride) {
        if (kind == 0) {
            unsigned short* p = (unsigned short*)buf;
            p[i] = kprof_doubled<unsigned short, 10, 5>(p[i]);
        } else if (kind == 1) {
            unsigned short* p = (unsigned short*)buf;
            p[i] = kprof_doubled<unsigned short, 7, 8>(p[i]);
        } else if (kind == 2) {
            unsigned int* p = (unsigned int*)buf;
            p[i] = kprof_doubled<unsigned int, 23, 8>(p[i]);
        } else {
            unsigned long long* p = (unsigned long long*)buf;
            p[i] = kprof_doubled<unsigned long long, 52, 11>(p[i]);
        }
    }
}
