"""crash_other: errors that are none of the other crash codes still decode, with a cause and advice."""

from __future__ import annotations

import pytest
from crash_cases import NONFINITE, OTHER, wording_tests

from runlens.detectors.crash.decode import decode

test_pytorch_wording_decodes_to_its_code, test_decodes_real_pytorch_wordings = wording_tests(OTHER)


@pytest.mark.parametrize(("etype", "message"), NONFINITE)
def test_a_check_that_stopped_a_nonfinite_value_says_so(etype, message):
    d = decode({"type": etype, "message": message})
    assert d.code == OTHER and d.kind == "nonfinite" and "NaN or Inf" in d.cause


@pytest.mark.parametrize(("etype", "message"), [("ValueError", "could not convert string to float: 'nan'"),
                                                ("RuntimeError", "Boolean value of Tensor with more than one value "
                                                                 "is ambiguous")])
def test_silent_twin_other_errors_are_not_read_as_nonfinite(etype, message):
    assert decode({"type": etype, "message": message}).kind != "nonfinite"
