"""crash_device_mismatch: the wordings of tensors or weights on different devices."""

from __future__ import annotations

import pytest
from crash_cases import (
    DEVICE,
    check_pytorch_wording,
    check_wording,
    pytorch_ids,
    pytorch_rows,
    wording_ids,
    wording_rows,
)


@pytest.mark.parametrize("source,etype,message,code", pytorch_rows(DEVICE),
                         ids=pytorch_ids(pytorch_rows(DEVICE)))
def test_pytorch_wording_decodes_to_its_code(source, etype, message, code):
    check_pytorch_wording(source, etype, message, code)


@pytest.mark.parametrize("etype,message,code,detail", wording_rows(DEVICE),
                         ids=wording_ids(wording_rows(DEVICE)))
def test_decodes_real_pytorch_wordings(etype, message, code, detail):
    check_wording(etype, message, code, detail)
