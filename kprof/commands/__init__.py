"""The command layer, the only one that looks kernels up and builds them: the command line
(:mod:`kprof.commands.cli`: argv to typed options), the options (:mod:`kprof.commands.options`), one
function per command (:mod:`kprof.commands.commands`), the same commands from Python
(:mod:`kprof.commands.api`, re-exported as ``kprof.run``, ``kprof.sanitize``, ...) and their shared
steps (:mod:`kprof.commands.pipeline`), and ``kprof new`` (:mod:`kprof.commands.scaffold`). ``kprof
doctor``'s checks are :mod:`kprof.tools.machine.doctor`, beside the tools they look for.
"""
