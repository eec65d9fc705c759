"""``picoora gateway``: the long-running service (HTTP API, OpenAI-compatible endpoint, web chat,
channels, scheduler, heartbeat).

    app.py       the FastAPI app: routers, error shapes, limits, CORS, the lifespan
    server.py    running it: uvicorn, the start-up lines, SIGTERM/SIGINT, exit codes
    turns.py     HTTP turns as gateway-owned tasks (clients may leave; shutdown waits for them)
    services.py  what runs beside the HTTP app: the bus dispatcher, channels, scheduler, heartbeat

FastAPI and uvicorn are imported only by ``picoora gateway``.
"""
