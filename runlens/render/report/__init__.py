"""The report of one run: HTML and Markdown pages (``html``, ``markdown``) over a
:class:`~runlens.render.report.view.ReportView` (``view``) and its charts (``charts``), and the
terminal text of ``runlens analyze`` (``text``)."""
