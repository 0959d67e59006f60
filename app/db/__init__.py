"""The database layer. Importing it makes `sqlite+aiosqlite` URLs use the one-trip driver."""

from app.db import sqlite_driver

sqlite_driver.register()
