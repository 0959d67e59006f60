"""The model door's parts: one protocol ("stream this turn"), a client per wire format.

- `types`: the chunk shape every client yields, the call, the target, usage, `ModelClient`;
- `errors`: provider status/type/message -> `LLMError` (one wording for every client);
- `openai_client`: our own OpenAI-compatible client (aiohttp + msgspec, no litellm);
- `litellm_client`: litellm's public `acompletion` for every other provider;
- `demo_client`: the offline demo model;
- `model_info`: litellm's public model map (context windows, prices, token counts);
- `profiles`: named provider profiles (kind, base URL, key's variable, headers, prices).

`app/orchestrator/door/llm.py` holds the registry (kind -> client) and the retry loop.
"""

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # litellm: no download at import
