"""The database layer: models, engine and session configuration, the after-commit outbox."""
