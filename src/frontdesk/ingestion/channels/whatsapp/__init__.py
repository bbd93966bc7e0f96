"""WhatsApp Cloud API channel (Meta): webhook payloads in, Graph API messages out.

``inbound.parse_events`` turns one webhook body into our ``InboundEvent``s; ``payloads`` holds
the frozen models of Meta's webhook JSON. Facts and sources: ``shared/research/channels.md`` §3.
"""
