"""The tools stage's room of the machine kprof runs on: ``kprof doctor``, what each command needs
and what is here.
"""
