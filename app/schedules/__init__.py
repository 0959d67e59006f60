"""Schedules of runs on threads: their rules, times (cron, RRULE, time zones) and REST."""
