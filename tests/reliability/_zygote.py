"""Forks training children from one process that has already imported torch.

A kill campaign of hundreds of trials would otherwise spend most of its
time importing torch. The parent writes one JSON argument list per line on
stdin; for each, this process forks a child that runs ``_train_child.main``
and answers with the child's pid. Children are reaped automatically
(SIGCHLD ignored), so a dead child's pid stops existing.
"""

from __future__ import annotations

import json
import os
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _train_child  # noqa: E402
import torch  # noqa: E402,F401 - the point: imported once, before any fork

import recorders.torch  # noqa: E402,F401

torch.set_num_threads(1)
# The first optimizer step imports torch._dynamo (most of a second): pay that once, here.
_m = torch.nn.Linear(2, 2)
_opt = torch.optim.SGD(_m.parameters(), lr=0.1)
_m(torch.ones(1, 2)).sum().backward()
_opt.step()
del _m, _opt
signal.signal(signal.SIGCHLD, signal.SIG_IGN)

for line in sys.stdin:
    argv = json.loads(line)
    pid = os.fork()
    if pid == 0:
        devnull = os.open(os.devnull, os.O_RDWR)
        os.dup2(devnull, 0)
        os.dup2(devnull, 1)
        try:
            code = _train_child.main(argv)
        except BaseException:  # noqa: BLE001 - the child's exit status is all the parent reads
            code = 1
        os._exit(code)
    print(pid, flush=True)
