"""Adjust step `lift_field_names`: a report's reST fields and roles point at their code.

A report about documentation tooling quotes the markup it feeds in (`:param text:`, `:type
text: bytes | str`, `:rtype:`, `:py:func:`), and the code that handles a field or role names
it as a string where it registers it (sphinx's `PyTypedField('parameter', names=('param',
...), typenames=('paramtype', 'type'))` in `domains/python.py`), while a bigger sibling that
merely shares the prose words wins the ranking. Among the FIELDS_AMONG best candidate files,
each file whose chunks hold a field name as a quoted string (`'param'` or `"param"`) has its
best candidate lifted by `retrieve.field_weight` × the best score × the share of the report's
field names it holds. Reports only; a report without `:name:` markup is left as it is.

Measured (benchmarks/README.md, Round 20 "pasted reports"): Python reports dev (74), first
pass, R@5 .885 → .899, MRR .732 → .735 (sphinx-9258 6 → 3, 10323 4 → 3; 8551's second file
3 → 4); weight 0.2: MRR .733 (9258 6 → 5); 0.4: MRR .744 with 8551's second file 3 → 5; 0.5:
R@5 .892. The multi-language set and eval-search rank as before.
"""

from __future__ import annotations

import re

from codeask.core.search.steps.state import Ranking, leading

#: The best candidate files whose chunks are read.
FIELDS_AMONG = 10
#: A field or role: `:param:`, `:param text:` (a reST field with its argument), not `http://`
#: nor `a::b`.
FIELD = re.compile(r"(?<![\w:/]):([a-z][a-z0-9_-]{1,30})(?: [^:\n`]{0,40})?:(?=[\s`\w])")


def field_names(text: str) -> set[str]:
    """The names of the reST fields and roles in `text`."""
    return set(FIELD.findall(text))


def lift_field_names(ranking: Ranking) -> None:
    """See the module's docstring."""
    found, fused = ranking.found, ranking.found.fused
    weight = ranking.folder.settings.retrieve.field_weight
    if not ranking.lexical or not ranking.signals.report or weight <= 0 or not fused:
        return
    names = field_names(ranking.signals.text)
    if not names:
        return
    best = found.file_scores()
    leaders = leading(best, FIELDS_AMONG)
    unit = weight * max(fused.values()) / len(names)
    for path in leaders:
        text = "\n".join(chunk.text for chunk in ranking.folder.storage.chunks_of(path))
        held = sum(1 for name in names if f"'{name}'" in text or f'"{name}"' in text)
        live = [c for c in found.by_path[path] if c.id in fused]
        if held and live:
            target = max(live, key=lambda c: fused[c.id])
            fused[target.id] += unit * held
            found.found_by[target.id].append("field")
