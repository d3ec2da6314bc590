"""The held-out labeled set: a second generator, independent of ``sample_runs/``.

``python -m benchmarks.heldout`` (or ``python benchmarks/heldout/generate.py``)
trains every run of :data:`benchmarks.heldout.catalog.RUNS` on the CPU into
``benchmarks/_data/heldout/<name>/`` (git-ignored), recorded by the public
``recorders.Recorder``, and writes ``label.json`` beside each run.

It was written before any result on it was seen, and shares no code with
``sample_runs/_training.py``: other models (a small vision transformer on
synthetic patches, a GRU language model, a VAE with its KL term, an InfoNCE
embedding model, a wide tabular model with LayerNorm, a deep sigmoid/tanh
stack, a ReLU RNN), other optimizers and schedules (AdamW, RMSprop, SGD with
Nesterov momentum, OneCycle, linear decay, a step change), gradient
accumulation, clipping, bf16 autocast, 200 to 6,000 steps.

A label is the fault the run was made with (``catalog.Fault``), and the
fault's effect is *measured in torch during training* by
:class:`benchmarks.heldout.probe.Probe` (gradient norms of the first and last
weight matrix, every parameter's update against its weight, the loss and the
validation losses). :mod:`benchmarks.heldout.criteria` states, for each fault,
what the measurements must show; a run whose measurements do not show its
fault is listed as unconfirmed (with the numbers) before any scoring and is
not graded. No criterion reads a runlens detector or its parameters.
"""
