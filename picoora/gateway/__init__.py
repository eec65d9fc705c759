"""``picoora gateway``: the long-running service (HTTP API, OpenAI-compatible endpoint, web chat,
channels, scheduler, heartbeat).

    app.py       the FastAPI app: routers, error shapes, limits, CORS, the lifespan
    server.py    running it: uvicorn, the start-up lines, SIGTERM/SIGINT, exit codes
    runtime/     every turn of the service, whichever door it came through: the turn service, the
                 wiring (a channel message becomes a turn), people, delivery, scheduler, heartbeat
    channels/    one package per chat platform, translating it to turns and back

FastAPI and uvicorn are imported only by ``picoora gateway``.
"""
