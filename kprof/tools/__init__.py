"""The tool stage: one module per external tool and what reads its output. compute-sanitizer
(:mod:`kprof.tools.sanitizers.compute_sanitizer`), Nsight Compute (:mod:`kprof.tools.nsight.ncu`), kprof's own values
detector (:mod:`kprof.tools.sanitizers.values`, :mod:`kprof.tools.programs.launchlog`), CUPTI's kernel timestamps
(:mod:`kprof.child.cupti_timer`) and launch count (:mod:`kprof.tools.programs.launchcount`,
:mod:`kprof.tools.sanitizers.coverage`), how a tool's run is classified (:mod:`kprof.tools.sanitizers.toolrun`), the
switches that make frameworks' memory pools visible to a tool (:mod:`kprof.tools.programs.allocators`), and what
``kprof doctor`` finds of each tool and library (:mod:`kprof.tools.machine.doctor`).
"""
