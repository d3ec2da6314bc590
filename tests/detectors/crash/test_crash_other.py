"""crash_other: errors that are none of the other crash codes still decode, with a cause and advice."""

from __future__ import annotations

import pytest
from crash_cases import (
    OTHER,
    check_pytorch_wording,
    check_wording,
    pytorch_ids,
    pytorch_rows,
    wording_ids,
    wording_rows,
)


@pytest.mark.parametrize("source,etype,message,code", pytorch_rows(OTHER),
                         ids=pytorch_ids(pytorch_rows(OTHER)))
def test_pytorch_wording_decodes_to_its_code(source, etype, message, code):
    check_pytorch_wording(source, etype, message, code)


@pytest.mark.parametrize("etype,message,code,detail", wording_rows(OTHER),
                         ids=wording_ids(wording_rows(OTHER)))
def test_decodes_real_pytorch_wordings(etype, message, code, detail):
    check_wording(etype, message, code, detail)
