"""Things due at a time: task reminders (the scheduler claims them on the database)."""
