"""The command layer, the only one that looks kernels up and builds them: the command line
(:mod:`kprof.commands.cli`: argv to typed options), the options (:mod:`kprof.commands.options`), one
function per command (:mod:`kprof.commands.commands`), the same commands from Python
(:mod:`kprof.commands.api`, re-exported as ``kprof.run``, ``kprof.sanitize``, ...), their shared steps
(:mod:`kprof.commands.pipeline`), ``kprof new`` (:mod:`kprof.commands.scaffold`) and ``kprof doctor``
(:mod:`kprof.commands.doctor`).
"""
