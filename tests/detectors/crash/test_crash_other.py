"""crash_other: errors that are none of the other crash codes still decode, with a cause and advice."""

from __future__ import annotations

from crash_cases import OTHER, wording_tests

test_pytorch_wording_decodes_to_its_code, test_decodes_real_pytorch_wordings = wording_tests(OTHER)
