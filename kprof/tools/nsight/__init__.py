"""The tools stage's room of Nsight Compute: the only ncu caller, its reports read into profiles and
rules.
"""
