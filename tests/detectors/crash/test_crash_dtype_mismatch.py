"""crash_dtype_mismatch: the wordings of tensors of different dtypes."""

from __future__ import annotations

from crash_cases import DTYPE, wording_tests

test_pytorch_wording_decodes_to_its_code, test_decodes_real_pytorch_wordings = wording_tests(DTYPE)
