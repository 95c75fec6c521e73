"""The bench and profile stage: ``kprof bench`` and ``kprof peak`` (:mod:`kprof.measure.bench`),
``kprof profile``'s numbers from ncu's rows (:mod:`kprof.measure.profiling`), and what a measured
rate is a fraction of, and whether it is plausible (:mod:`kprof.measure.ceilings`).
"""
