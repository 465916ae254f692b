"""The named steps of a search's ranking (core/search/pipeline.py lists them in order).

A step is a function of one argument, the question's `Ranking` (state.py): the folder, the
question's signals, the mode, the tiers asked for and the candidates so far. A collect step
returns its ranked lists (`Ranked`: a retriever's name, chunk ids best first, its fusion
weight); an adjust step changes `ranking.found` in place and returns nothing. Each step says
in its docstring what it is for and what it was measured to do (benchmarks/README.md), and
decides itself whether it applies (a dense-only search skips the lexical ones). Adding one:
docs/architecture.md, "a ranking step".
"""

__all__: list[str] = []
