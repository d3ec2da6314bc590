"""Training-side writers of run-log format v1.

``recorders.writer`` is framework-free (pyarrow only); ``recorders.torch``
holds the PyTorch :class:`~recorders.torch.Recorder`; the Lightning and
Hugging Face callbacks live in ``recorders.lightning`` and
``recorders.huggingface``. Nothing here imports scipy, pandas, jinja2 or
``runlens``: this package goes into training environments and stays small.
"""
