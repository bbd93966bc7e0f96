"""Ingestion: channel adapters, our inbound event types, ingest, and the turn assembler."""
