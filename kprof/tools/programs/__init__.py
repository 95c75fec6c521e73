"""The tools stage's room of the user's program as kprof runs it: the hooks' logs (launches, their
counts and sites), the memory pools made visible, the exit code kept, the host frames and their
lines, multi-process launchers and their ranks, what a run of it launched (its coverage).
"""
