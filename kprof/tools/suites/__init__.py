"""The tools stage's room of a pytest suite under the tools: one child per batch and tool, its
events, what each child decided.
"""
