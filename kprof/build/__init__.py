"""The build stage: a spec's kernel to a cubin. The compiler call, the content-addressed cache and
each kernel's resource usage (:mod:`kprof.build.build`, the only nvcc caller), NVRTC where no nvcc
fits (:mod:`kprof.build.nvrtc`), and what the resources allow on each architecture
(:mod:`kprof.build.occupancy`, no GPU).
"""
