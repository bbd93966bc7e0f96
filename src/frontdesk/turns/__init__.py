"""The turn as one unit: collect the batch, run reasoning, commit one ``TurnRecord``, deliver.

Ingestion keeps the ingest, the conversation's lease and the quiet window; reasoning returns a
value and never writes; this package commits what a turn did in one transaction, under the
lease fence, and hands the reply to output's delivery.
"""
