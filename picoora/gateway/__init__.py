"""The long-running service: HTTP API, web chat, channels, scheduler, heartbeat."""
