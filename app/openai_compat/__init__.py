"""The OpenAI-compatible surface (`/v1`): the caller's agents as models, chat completions
that run an agent through the same runner as `POST /api/threads/{id}/messages`."""
