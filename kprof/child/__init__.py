"""The child stage: the small program every tool wraps (``python -m kprof.child.runner JOB.json
RESULT.json``, :mod:`kprof.child.runner`) and what it is made of: the workspace on the GPU (buffers,
modules, launches, :mod:`kprof.child.workspace`), the device layer, the only caller of the CUDA
driver (:mod:`kprof.child.device`), the timing loop (:mod:`kprof.child.timing`), cuBLAS
(:mod:`kprof.child.cublas`), the frameworks' arrays and Python baselines
(:mod:`kprof.child.framework`), the host data (:mod:`kprof.child.hostdata`) and the verdict
(:mod:`kprof.child.verify`). The parent hands it a :class:`kprof.launch.job.Job` and reads its
answer as a :class:`kprof.launch.childresult.ChildResult`.
"""
