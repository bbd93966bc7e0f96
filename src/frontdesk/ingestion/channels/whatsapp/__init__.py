"""WhatsApp Cloud API channel (Meta): webhook payloads in, Graph API messages out.

``adapter`` serves the webhook (handshake, signature, store); ``inbound.parse_events`` turns one
webhook body into our ``InboundEvent``s; ``payloads`` holds the frozen models of Meta's webhook
JSON; ``renderer`` sends replies and downloads customer media. See ``README.md``.
"""
