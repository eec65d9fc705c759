"""The gateway's runtime: every turn of the long-running service, from whichever door, in one place.

- ``turns``: the turn service (order per session, concurrency across sessions, the drain at shutdown);
- ``envelopes``: what a door submits (``Inbound``) and gets back (``TurnOutcome``);
- ``services``: the wiring: a channel's message becomes a turn of the person who sent it, and its answer
  goes back to the chat (``GatewayRuntime._submit_chat`` / ``_run`` / ``_reply``);
- ``admission``: admission of channel senders and each person's assistant (bounded, least recently used);
- ``delivery``: results to any front door (a running channel, the web chat, the terminal);
- ``messenger``: the ``message`` / ``spawn`` tools' side of the gateway;
- ``scheduler`` and ``heartbeat``: the turns that come from the clock, with their real outcomes recorded.
"""
