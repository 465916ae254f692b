"""How this process runs, whatever it does: background threads yield the CPU to the
editor's requests (`background`), glibc's heap gives big freed blocks back (`heap`),
every folder and file written for an index or a cache is owner-only (`private_files`), and a
lock's holder is asked without taking the lock (`flock_probe`), and a bulk pass runs the cyclic
garbage collector less often (`collector`), and a one-shot process gives the index pages
a step read back (`resident`), and a write to a pipe takes every byte however many writes
it takes (`pipe_write`), and a text's words are found by their bytes in numpy, many at once,
by the tokenizer and the lexical builder alike (`word_table`).
Imports nothing of ours.

`__all__` lists the modules other rooms (and the faces) may import (tests/test_architecture.py
checks it); the others are this room's own.
"""

__all__ = [
    "background",
    "collector",
    "flock_probe",
    "heap",
    "pipe_write",
    "private_files",
    "resident",
    "word_table",
]
