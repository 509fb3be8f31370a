"""Reading a node's /metrics page (its address is in the node's log) with the Prometheus
client library's parser for the format the page is in: OpenMetrics text, which the Rust
`prometheus-client` crate writes (a counter's TYPE line names it without `_total`, which
the library's older Prometheus 0.0.4 parser does not pair with its `_total` sample). The
OpenMetrics parser is strict: a page it reads is well formed (`# EOF`, cumulative buckets
ending in +Inf, counts that match)."""

import re
import urllib.request

from prometheus_client.openmetrics.parser import text_string_to_metric_families

ADDRESS = re.compile(r"metrics on (http://[0-9.:]+/metrics)")


def address(log_text):
    found = ADDRESS.findall(log_text)
    assert found, "the node logged no 'metrics on http://…/metrics' line"
    return found[-1]


def scrape(url, timeout=5):
    """{family name: Metric} as Prometheus's Python parser reads the page (counters are
    named without their `_total` suffix there)."""
    text = urllib.request.urlopen(url, timeout=timeout).read().decode()
    return {f.name: f for f in text_string_to_metric_families(text)}


def value(families, name, **labels):
    """The value of the sample `name` (e.g. `sluice_requests_total`) whose labels include
    `labels`; 0 when there is none."""
    family = families.get(name)
    for suffix in ("_total", "_count", "_sum", "_bucket"):
        if family is None and name.endswith(suffix):
            family = families.get(name[:-len(suffix)])
    if family is None:
        return 0
    for s in family.samples:
        if s.name == name and all(s.labels.get(k) == v for k, v in labels.items()):
            return s.value
    return 0
