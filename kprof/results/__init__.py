"""The results stage: the history of benchmark runs (:mod:`kprof.results.history`), the text reports
(:mod:`kprof.results.render`) and the plots (:mod:`kprof.results.plot`). What the tools found, in
one vocabulary with its JSON and SARIF, is :mod:`kprof.findings`, below every stage that shares it.
"""
