"""crash_device_mismatch: the wordings of tensors or weights on different devices."""

from __future__ import annotations

from crash_cases import DEVICE, wording_tests

test_pytorch_wording_decodes_to_its_code, test_decodes_real_pytorch_wordings = wording_tests(DEVICE)
