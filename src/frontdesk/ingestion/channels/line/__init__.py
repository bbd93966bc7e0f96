"""LINE Messaging API channel: webhook payload models and inbound parsing (``inbound.parse_events``)."""
