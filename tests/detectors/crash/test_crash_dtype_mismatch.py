"""crash_dtype_mismatch: the wordings of tensors of different dtypes."""

from __future__ import annotations

import pytest
from crash_cases import (
    DTYPE,
    check_pytorch_wording,
    check_wording,
    pytorch_ids,
    pytorch_rows,
    wording_ids,
    wording_rows,
)


@pytest.mark.parametrize("source,etype,message,code", pytorch_rows(DTYPE),
                         ids=pytorch_ids(pytorch_rows(DTYPE)))
def test_pytorch_wording_decodes_to_its_code(source, etype, message, code):
    check_pytorch_wording(source, etype, message, code)


@pytest.mark.parametrize("etype,message,code,detail", wording_rows(DTYPE),
                         ids=wording_ids(wording_rows(DTYPE)))
def test_decodes_real_pytorch_wordings(etype, message, code, detail):
    check_wording(etype, message, code, detail)
