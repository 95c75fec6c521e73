"""What proves kprof's checks work: the seeded-bug corpus, each bug with its clean twin
(:mod:`kprof.corpus.cases`), the cheat corpus of ``kprof bench`` (:mod:`kprof.corpus.benchcases`),
and the mutants that say how strong each spec's verdict is (:mod:`kprof.corpus.mutants`).
"""
