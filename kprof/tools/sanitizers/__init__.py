"""The tools stage's room of compute-sanitizer and kprof's own checkers: the checker protocol and
its one registry, the runs of each tool, their XML read into findings, how a run is classified,
which kernels a tool checks, the copies of the user's program the tools run (side by side only where
they cannot collide).
"""
