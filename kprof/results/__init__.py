"""The results stage: findings in one vocabulary, with their JSON and SARIF (:mod:`kprof.findings`),
the history of benchmark runs (:mod:`kprof.results.history`), the text reports
(:mod:`kprof.results.render`) and the plots (:mod:`kprof.results.plot`).
"""
