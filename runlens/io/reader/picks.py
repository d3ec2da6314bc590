"""What the role inference decides about a table: each role's columns, how they make it, and why."""

from __future__ import annotations

from dataclasses import dataclass, field

_HOW = {"log": " (log of it)", "complement": " (1 - it)", "negated": " (minus it)"}


@dataclass
class Pick:
    """One role: the column(s) it is made of, how (``column``, ``sum``, ``log``, or a
    proxy of :mod:`.objective`: ``rate``, ``complement``, ``negated``), and why."""

    role: str
    columns: tuple[str, ...]
    how: str
    why: str


@dataclass
class Roles:
    index: str | None
    index_kind: str  # "step", "epoch" or "row"
    index_why: str
    picks: list[Pick] = field(default_factory=list)

    def get(self, role: str) -> Pick | None:
        return next((p for p in self.picks if p.role == role), None)

    def used(self) -> set[str]:
        return {c for p in self.picks for c in p.columns} | ({self.index} if self.index else set())

    def lines(self) -> list[str]:
        out = [f"index: {self.index_kind} ({self.index_why})"]
        out += [f"{p.role} <- {' + '.join(p.columns) if p.how == 'sum' else p.columns[0]}"
                f"{_HOW.get(p.how, '')}: {p.why}" for p in self.picks]
        return out
