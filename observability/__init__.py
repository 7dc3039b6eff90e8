"""Operational signals both servers share: structured logs, traces, Prometheus helpers."""
