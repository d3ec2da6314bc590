"""How runs are named apart in a list (the report index, every audit format): one rule."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence


def distinct_names(runs: Sequence[tuple[str, str]]) -> list[str]:
    """How each ``(name, path)`` is shown in a list of runs: its name, and where two runs share
    a name, the name followed by the shortest tail of its path that tells them apart
    (``healthy (copy/healthy)``, ``healthy (sample_runs/healthy)``); runs that share the
    whole path are numbered."""
    parts = [[p for p in str(path).replace("\\", "/").split("/") if p] for _, path in runs]
    groups: dict[str, list[int]] = {}
    for i, (name, _) in enumerate(runs):
        groups.setdefault(name, []).append(i)
    labels = [name for name, _ in runs]
    for name, members in groups.items():
        if len(members) < 2:
            continue
        longest = max(len(parts[i]) for i in members)
        for depth in range(1, longest + 1):
            tails = ["/".join(parts[i][-depth:]) for i in members]
            if len(set(tails)) == len(tails) or depth == longest:
                break
        shared = Counter(tails)
        seen: dict[str, int] = {}
        for i, tail in zip(members, tails, strict=True):
            seen[tail] = seen.get(tail, 0) + 1
            suffix = f" #{seen[tail]}" if shared[tail] > 1 else ""
            labels[i] = f"{name} ({tail}{suffix})"
    return labels
