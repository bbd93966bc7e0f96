"""Platform services every layer may use: store, jobs, model gateway, clock, tracing."""
