"""Scheduled jobs: ``at`` (once), ``every`` (an interval) and ``cron`` (an expression in a time zone).

``jobs`` holds the job records and the book that keeps them in the store (both backends, so they survive
restarts and can be edited by ``picoora cron`` while the gateway runs); ``service`` runs them with
APScheduler and hands each firing to the message bus, the one way into the agent.
"""
