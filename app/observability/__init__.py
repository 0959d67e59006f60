"""Operating in production: request ids, logs, metrics, readiness, traces."""
