"""OpenTelemetry traces (OTLP over HTTP): accepted and counted, never recorded."""

from __future__ import annotations

import re

from .base import Provider

PROVIDER = Provider(
    name="otlp",
    base_url_vars=("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",),
    proxy_path="/v1/traces",  # a traces endpoint is the whole URL, not a base
    records=False,
    path=re.compile(r"(?:^|/)v1/(?:traces|metrics|logs)$"),
    host_marks=("otlp", "otel"),
)
