"""Meta Messenger and Instagram messaging: one adapter, two channel names.

Both products share Meta's Messenger Platform webhook format. ``object: "page"`` webhooks feed the
"messenger" channel and ``object: "instagram"`` webhooks the "instagram" channel; ``inbound.py``
turns either into our ``InboundEvent``s.
"""
