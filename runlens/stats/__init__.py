"""Pure numpy/scipy statistics that know nothing about runs.

Import from the submodules (``runlens.stats.trend``, ``.robust``,
``.variance``, ...): each is small and self-contained.
"""
