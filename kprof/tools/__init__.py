"""The tool stage: one module per external tool and what reads its output. compute-sanitizer
(:mod:`kprof.tools.compute_sanitizer`), Nsight Compute (:mod:`kprof.tools.ncu`), kprof's own values
detector (:mod:`kprof.tools.values`, :mod:`kprof.tools.launchlog`), CUPTI's kernel timestamps
(:mod:`kprof.child.cupti_timer`) and launch count (:mod:`kprof.tools.launchcount`,
:mod:`kprof.tools.coverage`), how a tool's run is classified (:mod:`kprof.tools.toolrun`), the
switches that make frameworks' memory pools visible to a tool (:mod:`kprof.tools.allocators`), and what
``kprof doctor`` finds of each tool and library (:mod:`kprof.tools.doctor`).
"""
