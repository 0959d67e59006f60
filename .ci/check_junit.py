"""Fail when PostgreSQL tests did not run: none collected, or any of them skipped."""

import sys
import xml.etree.ElementTree as ET

root = ET.parse(sys.argv[1]).getroot()
cases = list(root.iter("testcase"))
pg = [c for c in cases if "[postgresql" in c.get("name", "")]
sqlite = [c for c in cases if "[sqlite" in c.get("name", "")]
skipped_pg = [c.get("name") for c in pg if c.find("skipped") is not None]
failed = [
    c.get("name") for c in cases if c.find("failure") is not None or c.find("error") is not None
]
print(f"{len(cases)} tests: {len(sqlite)} on SQLite, {len(pg)} on PostgreSQL")
if not pg or not sqlite:
    sys.exit("FAIL: the tests did not run on both SQLite and PostgreSQL")
if skipped_pg:
    sys.exit(f"FAIL: {len(skipped_pg)} PostgreSQL tests were skipped: {skipped_pg[:5]}")
if failed:
    sys.exit(f"FAIL: {len(failed)} tests failed")
