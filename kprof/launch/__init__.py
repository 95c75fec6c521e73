"""The launch stage, the parent's side of the child process: the typed, versioned job that goes to
the child (:mod:`kprof.launch.job`), the typed result that comes back, its version checked
(:mod:`kprof.launch.childresult`), and the one place a child is started and read
(:mod:`kprof.launch.launch`). What runs in the child is :mod:`kprof.child`.
"""
