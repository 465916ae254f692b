"""The engine: plain Python, no pygls.

The CLI, the LSP adapter, the benchmarks and the tests all drive it.
"""
