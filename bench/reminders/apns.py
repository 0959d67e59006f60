"""`python -m bench.reminders.apns`: the tests' fake APNs (tests/support/fake_apns.py) in
a process of its own, so its HTTP/2 work is not counted against the server's loop.

Prints one JSON line (its URL, CA and key settings), serves until its stdin is closed,
then prints one more: how many task reminders it accepted, and how many requests it
refused."""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
from pathlib import Path

from bench.common import freeze_heap
from tests.support.fake_apns import FakeApns


async def main() -> None:
    with tempfile.TemporaryDirectory() as directory:
        async with FakeApns(Path(directory)) as apns:
            freeze_heap()
            settings = {
                "APNS_BASE_URL": apns.base_url,
                "APNS_CA_FILE": apns.ca_file,
                "APNS_KEY_FILE": apns.key_file,
                "APNS_KEY_ID": apns.key_id,
                "APNS_TEAM_ID": apns.team_id,
            }
            print(json.dumps(settings), flush=True)
            await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
            reminders = sum(r.payload.get("kind") == "task_reminder" for r in apns.received)
            print(json.dumps({"reminders": reminders, "rejected": len(apns.rejected)}), flush=True)


if __name__ == "__main__":
    asyncio.run(main())
