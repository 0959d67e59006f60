"""Model usage per user: what their runs spent (`GET /api/me/usage`), and the optional
monthly budget that refuses a new message once it is spent."""
