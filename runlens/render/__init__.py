"""Renderers, one subpackage per product: ``report`` (one run), ``audit`` (many runs) and
``compare`` (a run against a baseline), each with a module per format. Shared here: ``escape``
(escaping for every output), ``names`` (naming runs apart), ``chart_parts`` (chart primitives)
and ``templates`` (the one Jinja environment over ``reports/templates``). Renderers format only:
they read no run and write no file (``runlens.io.output`` does)."""
