"""The gateway's part of ``picoora status``: whether a gateway answers on its port (and has a token), each
enabled channel, the scheduled jobs with their next run, the heartbeat, and every session's model choice.

Read from the config and the store's state only: the gateway itself is asked nothing but ``/health``."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from picoora.cli.status_report import OK, Line, count

if TYPE_CHECKING:
    from picoora.config import Config
    from picoora.store.protocol import Store

HEALTH_TIMEOUT = 1.5  # seconds; the gateway is local, or on the LAN


def service_lines(config: Config, store: Store | None) -> list[Line]:
    """``store`` None: nothing is stored yet (no jobs, no beats, no choices)."""
    state = store.state.all() if store is not None else {}
    return [_gateway_line(config, state), _cron_line(config, store), _heartbeat_line(config, state),
            *_session_model_lines(state)]


def _gateway_line(config: Config, state: dict[str, str]) -> Line:
    settings = config.gateway
    host, port, version = settings.host, settings.port, _health(settings.host, settings.port)
    started = state.get("gateway.listening", "")  # where the last gateway started (--host/--port included)
    if version is None and ":" in started:
        last_host, _, last_port = started.rpartition(":")
        if last_port.isdigit() and (last_host, int(last_port)) != (host, port):
            version = _health(last_host, int(last_port))
            if version is not None:
                host, port = last_host, int(last_port)
    token = "token set" if settings.token else "no token (each run makes one up; `picoora onboard` writes one)"
    running = f"{OK} running ({version})" if version is not None else "not running (start it: picoora gateway)"
    return Line("Gateway", f"{host}:{port}, {token}; {running}",
                facts={"host": host, "port": port, "token_set": bool(settings.token),
                       "running": version is not None, "version": version})


def _health(host: str, port: int) -> str | None:
    """The version a picoora gateway at host:port reports on /health, or None when none answers."""
    import httpx

    from picoora.gateway.binding import base_url

    try:
        answer = httpx.get(base_url(host, port) + "/health", timeout=HEALTH_TIMEOUT)
        if answer.status_code == 200 and answer.json().get("status") == "ok":
            return str(answer.json().get("version", ""))
    except (httpx.HTTPError, ValueError, AttributeError):
        pass  # nothing there, or something that is not a picoora gateway: not running
    return None


def _cron_line(config: Config, store: Store | None) -> Line:
    from picoora.scheduler.jobs import JobBook

    book = JobBook(store, default_zone=config.agents.defaults.timezone) if store is not None else None
    pairs = [(job, book.run_record(job.id)) for job in book.jobs()] if book is not None else []
    jobs = [job for job, _ in pairs]
    upcoming = {job.id: book.next_run(job, run) for job, run in pairs if book is not None}
    rows = [{"id": job.id, "kind": job.kind, "spec": job.spec, "enabled": job.enabled,
             "state": book.state(job, run) if book is not None else "off", "next_run": _utc(upcoming[job.id])}
            for job, run in pairs]
    facts = {"enabled": config.cron.enabled, "jobs": rows}
    if not config.cron.enabled:
        return Line("Cron", f"off (cron.enabled); {count(len(jobs), 'job')} kept", facts=facts)
    if not jobs:
        return Line("Cron", "on, no jobs (add one: picoora cron add every 1d \"Summarise my notes\")", facts=facts)
    text = f"on, {count(len(jobs), 'job')} ({sum(job.enabled for job in jobs)} enabled)"
    due = sorted((moment, job_id) for job_id, moment in upcoming.items() if moment is not None)
    if due:
        moment, job_id = due[0]
        text += f"; next: {job_id} at {moment.astimezone(timezone.utc):%Y-%m-%d %H:%M} UTC (`picoora cron list`)"
    return Line("Cron", text, facts=facts)


def _utc(moment: datetime | None) -> str | None:
    return moment.astimezone(timezone.utc).isoformat() if moment is not None else None


def _heartbeat_line(config: Config, state: dict[str, str]) -> Line:
    from picoora.gateway.runtime.heartbeat import LAST_BEAT

    settings = config.heartbeat
    on = settings.enabled and bool(settings.interval)
    try:
        last = json.loads(state.get(LAST_BEAT) or "null")
    except ValueError:
        last = None
    last = last if isinstance(last, dict) else None
    facts = {"enabled": on, "interval_minutes": settings.interval,
             "last_beat": last.get("at") if last else None, "last_outcome": last.get("outcome") if last else None}
    text = f"on, every {settings.interval} min" if on else "off (heartbeat.enabled)"
    if last:
        text += f"; last beat {str(last.get('at'))[:16]}: {last.get('outcome')}"
    return Line("Heartbeat", text, facts=facts)


def _session_model_lines(state: dict[str, str]) -> list[Line]:
    from picoora.session_models import MODEL_STATE, parse_choice

    lines = []
    for key, value in sorted(state.items()):
        choice = parse_choice(value) if key.startswith(MODEL_STATE) else None
        if choice is not None:
            session = key[len(MODEL_STATE):]
            lines.append(Line("Session", f"{session} answers with {choice[0]}/{choice[1]} (chosen with /model)",
                              facts={"session": session, "provider": choice[0], "model": choice[1]}))
    return lines
