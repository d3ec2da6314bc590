"""The third labeled set: bugs written into real training loops, judged against fixed twins.

A method of its own, unlike the first two generators (which inject a fault
through one training function's parameters and judge it from the run alone):
every buggy run here is a user's loop with the bug written into it, trained
side by side with its fixed twin (same seed, data and batches), and its label
is confirmed by the bug's measured effect against the twin
(``truth.py`` states each criterion). Six architectures neither earlier set
has, fourteen bugs neither has, runs of 60 to 20,000 steps, and a third of
the set healthy runs with alarming but normal shapes. Written and generated
before any detector was tuned on it; graded once (``benchmarks/accuracy.py
--set third``).
"""
