"""``pyconsumer ingest --metrics-port``'s numbers without Spark: what a run publishes, scraped
over HTTP on 127.0.0.1 and read with prometheus-client's own parser; the flag's bad values."""
from __future__ import annotations

import urllib.request

import pytest

from pyconsumer.cli import main
from pyconsumer.ingest.lag import PartitionLag
from pyconsumer.ingest.metrics import IngestMetrics

pytest.importorskip("prometheus_client")

from pyconsumer.ingest.prometheus import serve_ingest_metrics  # noqa: E402


def scrape(url: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    from prometheus_client.parser import text_string_to_metric_families

    with urllib.request.urlopen(url, timeout=10) as response:
        text = response.read().decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def test_a_scrape_gives_what_the_run_published() -> None:
    metrics = IngestMetrics()
    with serve_ingest_metrics(metrics, 0) as server:
        assert server.url.startswith("http://127.0.0.1:")
        assert scrape(server.url) == {("pyconsumer_ingest_records_total", ()): 0.0,
                                      ("pyconsumer_ingest_bytes_total", ()): 0.0,
                                      ("pyconsumer_ingest_micro_batches_total", ()): 0.0,
                                      ("pyconsumer_ingest_rejected_records_total", ()): 0.0}
        metrics.add_batch(100, 1400, rate=250.0)
        metrics.add_batch(20, 280, rejected=3, rate=40.0)
        metrics.set_positions({("t", 0): 70, ("t", 1): 50},
                              [PartitionLag("t", 0, 30, 420), PartitionLag("t", 1, 5, None)])
        metrics.set_positions({("t", 1): 55}, None)       # lag unknown: the last one stays
        p0, p1 = (("partition", "0"), ("topic", "t")), (("partition", "1"), ("topic", "t"))
        assert scrape(server.url) == {
            ("pyconsumer_ingest_records_total", ()): 120.0,
            ("pyconsumer_ingest_bytes_total", ()): 1680.0,
            ("pyconsumer_ingest_micro_batches_total", ()): 2.0,
            ("pyconsumer_ingest_rejected_records_total", ()): 3.0,
            ("pyconsumer_ingest_records_per_second", ()): 40.0,
            ("pyconsumer_ingest_offset", p0): 70.0, ("pyconsumer_ingest_offset", p1): 55.0,
            ("pyconsumer_ingest_records_lag", p0): 30.0,
            ("pyconsumer_ingest_records_lag", p1): 5.0,
            ("pyconsumer_ingest_bytes_lag", p0): 420.0}


def test_a_port_in_use_is_named() -> None:
    with serve_ingest_metrics(IngestMetrics(), 0) as server:
        with pytest.raises(OSError, match=rf"--metrics-port: cannot listen on 127.0.0.1:{server.port}"):
            serve_ingest_metrics(IngestMetrics(), server.port)


@pytest.mark.parametrize("value", ["http", "-1", "65536", "9090x"])
def test_bad_metrics_port_is_refused_naming_the_flag(
        value: str, tmp_path: object, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["ingest", "-b", "127.0.0.1:9", "-t", "events", "--output",
                 f"{tmp_path}/out", "--metrics-port", value])
    err = capsys.readouterr().err
    assert code == 2
    assert err == (f"pyconsumer ingest: --metrics-port: {value!r} is not a port number "
                   "(0 to 65535; 0: any free port)\n")
