"""crash_shape_mismatch: the shape wordings, and the cause read from the sizes in the message."""

from __future__ import annotations

import pytest
from crash_cases import SHAPE, wording_tests

from runlens.detectors.crash.decode import decode


@pytest.mark.parametrize("message,words", [
    ("mat1 and mat2 shapes cannot be multiplied (64x512 and 256x10)", "got 512 features per row where the layer takes 256"),
    ("Expected input batch_size (4) to match target batch_size (5).", "4 predictions for 5 targets"),
    ("input.size(-1) must be equal to input_size. Expected 8, got 9", "takes 8 features per time step but got 9"),
])
def test_shape_cause_reads_the_numbers_in_the_message(message, words):
    decoded = decode({"type": "RuntimeError", "message": message})
    assert decoded.code == SHAPE and words in decoded.cause


test_pytorch_wording_decodes_to_its_code, test_decodes_real_pytorch_wordings = wording_tests(SHAPE)
