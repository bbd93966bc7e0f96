"""The loyalty pack: a loyalty-programme back office reached over MCP (the service lives in ``server/``)."""
