"""Push notifications over APNs: the outbox, its sender, presence and Live Activities.

Above threads in the layers (it hears of changes through app/threads/changes.py) and below
realtime (which reports its sockets' subscriptions to `presence`).
"""
