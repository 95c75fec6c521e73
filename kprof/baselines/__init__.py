"""Framework baselines for ``kprof bench --baseline``: callables that run a spec's operation the way a
framework user would, timed in the same run as the kernel (``kprof/child/framework.py``)."""
