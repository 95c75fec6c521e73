"""The tool stage, in rooms: the sanitizers and kprof's own checkers with their one registry
(:mod:`kprof.tools.sanitizers`), the user's program as kprof runs it (:mod:`kprof.tools.programs`),
a pytest suite under the tools (:mod:`kprof.tools.suites`), Nsight Compute
(:mod:`kprof.tools.nsight`) and the machine kprof runs on, ``kprof doctor``
(:mod:`kprof.tools.machine`). CUPTI's kernel timestamps are the child's
(:mod:`kprof.child.cupti_timer`).
"""
