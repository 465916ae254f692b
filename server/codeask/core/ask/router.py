"""Whether a question is about git history: `ask` adds commits, blame and diffs when it is.

An embedding nearest-centroid rule over paired prototype questions, plus a small keyword prior
(`HISTORY_PATTERNS`) for phrasings that are almost always about history.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np

#: Prototype questions, written as minimal pairs (same topic, history vs code intent) so that
#: the difference of the two class centroids points along "intent" and topic words cancel out.
#: Their topics and wording are kept apart from tests/data/history_questions.jsonl.
HISTORY_PROTOTYPES = (
    "who wrote the config loader?",
    "when did the auth middleware change?",
    "why was the pagination helper removed?",
    "what changed in the csv importer recently?",
    "which commit broke the websocket handler?",
    "show the history of the email templates",
    "who last modified the thumbnail generator?",
    "when was the search ranking tweak added?",
    "why did we rewrite the billing invoices code?",
    "what did the user profile page look like before the redesign?",
    "list the recent commits that touched the database pool",
    "who introduced the plugin loader?",
    "when were the translation strings last updated?",
    "why was the sitemap builder disabled?",
    "what did Alice change in the notification service?",
    "which change made the backup job slow?",
    "who is the author of the metrics collector?",
    "what went into the latest commit?",
    "what have I modified today?",
    "show my uncommitted changes",
    "what is new since the last release?",
    "summarise yesterday's commits",
    "what was the previous commit about?",
    "why was this line changed?",
    "git blame for these lines",
    "has the session store been modified this week?",
    "when did we drop support for python 3.8?",
    "what was reverted in the last merge?",
)
CODE_PROTOTYPES = (
    "how does the config loader work?",
    "where is the auth middleware defined?",
    "what does the pagination helper return?",
    "how do I configure the csv importer?",
    "what calls the websocket handler?",
    "how are the email templates rendered?",
    "how can I extend the thumbnail generator?",
    "explain the search ranking",
    "how are billing invoices computed?",
    "which component renders the user profile page?",
    "is the database pool thread-safe?",
    "how do I write a new plugin for the plugin loader?",
    "where are the translation strings loaded from?",
    "how does the sitemap builder discover pages?",
    "what does the notification service send?",
    "how to run the backup job manually",
    "what does the metrics collector measure?",
    "how does the commit graph widget lay out branches?",
    "where is the merge conflict resolver implemented?",
    "what does the revert method of the undo stack do?",
    "how is the author avatar fetched?",
    "how does the changeset serializer work?",
    "where does the app read its git revision for the version string?",
    "how does the history sidebar paginate?",
    "what does commit_transaction do?",
    "how do I change the timeout setting?",
    "how does the file change watcher debounce events?",
    "what is the difference between the two diff modes of the viewer?",
)
#: Phrasings that are almost always about git history; the embedding decides the rest.
HISTORY_PATTERNS = tuple(
    re.compile(p, re.IGNORECASE)
    for p in (
        r"\bwho (wrote|added|changed|introduced|removed|deleted|touched|modified|authored|last)\b",
        r"\bwhen (did|was|were|has|have)\b.*"
        r"\b(chang|add|introduc|remov|delet|modif|fix|writ|renam|break|broke)",
        r"\bwhy (was|were|did|has|have)\b.*"
        r"\b(remov|chang|add|delet|revert|renam|introduc|disabl|increas|decreas|switch)",
        r"\b(last|latest|previous|recent|most recent) (\w+ )?(commits?|changes)\b",
        r"\bgit (log|history|blame)\b|\bblame\b",
        r"\buncommitted\b|\bnot (yet )?committed\b",
        r"\bwhat did (i|we) (just )?change\b",
        r"\bcommit (history|that|which)\b|\bwhich commit\b",
    )
)


def keyword_prior(question: str) -> float:
    """1.0 when a strong history phrasing matches, else 0.0 (also the keyword-only baseline)."""
    return 1.0 if any(p.search(question) for p in HISTORY_PATTERNS) else 0.0


class HistoryRouter:
    """Decides whether a question is about history, by embedding similarity to prototype
    questions (plus a small keyword prior).

    score = (mean similarity to history prototypes − mean similarity to code prototypes),
    scaled to the unit centroid-difference direction and centred between the two classes,
    + prior_weight × keyword prior. A nearest-centroid rule rather than nearest neighbours:
    with paired prototypes a neighbour vote follows the topic ("retry logic") instead of
    the intent ("who wrote"). Prototypes are embedded once, on first use.
    """

    def __init__(
        self,
        embed: Callable[[list[str]], np.ndarray],
        *,
        prior_weight: float = 0.1,
        threshold: float = 0.0,
    ) -> None:
        self._embed = embed
        self.prior_weight = prior_weight
        self.threshold = threshold
        self._axis: tuple[np.ndarray, float] | None = None

    def _direction(self) -> tuple[np.ndarray, float]:
        """(unit history-minus-code direction, midpoint of the two classes along it)."""
        if self._axis is None:
            vectors = np.asarray(self._embed([*HISTORY_PROTOTYPES, *CODE_PROTOTYPES]))
            history, code = np.split(vectors, [len(HISTORY_PROTOTYPES)])
            axis = history.mean(axis=0) - code.mean(axis=0)
            axis = axis / np.linalg.norm(axis)
            middle = float(((history @ axis).mean() + (code @ axis).mean()) / 2)
            self._axis = (axis, middle)
        return self._axis

    def score(self, question: str) -> float:
        """Higher means more likely about history; above `threshold` routes to history."""
        axis, middle = self._direction()
        query = np.asarray(self._embed([question]))[0]
        return float(query @ axis) - middle + self.prior_weight * keyword_prior(question)

    def is_history_question(self, question: str) -> bool:
        """Whether to add commits, blame and diffs to the context of this question."""
        return self.score(question) > self.threshold
