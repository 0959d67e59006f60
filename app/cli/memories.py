"""`litestar memories embed`: give every memory a vector of the configured model.

Resumable: it walks the memories lacking a current vector (new, edited, failed, or every
one after a change of `MEMORY_EMBEDDINGS`) and each batch commits, so a stopped run is
continued by running it again. `--forget-other-models` then deletes the vectors of the
models no longer configured (recall reads only the configured model's).
"""

from __future__ import annotations

import anyio
import click
from advanced_alchemy.extensions.litestar import SQLAlchemyPlugin
from litestar import Litestar
from sqlalchemy.ext.asyncio import async_sessionmaker

from app.lib.cli import app_group, with_app
from app.memories import embedding, vectors
from app.memories.keeper import embed_pending

memories_group = app_group("memories", "Memories' vectors for recall by meaning.")


@memories_group.command(name="embed", help="Embed every memory lacking a current vector.")
@click.option("--forget-other-models", is_flag=True, help="Then delete other models' vectors.")
@with_app
def embed_command(app: Litestar, forget_other_models: bool) -> None:
    click.echo(anyio.run(_embed, app, forget_other_models))


async def _embed(app: Litestar, forget_other_models: bool) -> str:
    from app.orchestrator.door.embeddings import configured_embedder

    settings = app.state.settings
    embedder = embedding.chosen(settings.memory_embeddings, configured_embedder(settings))
    if embedder is None:
        raise click.ClickException("No embedding model: MEMORY_EMBEDDINGS is off.")
    engine = app.plugins.get(SQLAlchemyPlugin).config[0].get_engine()
    sessions = async_sessionmaker(engine, expire_on_commit=False)
    try:
        stored = await embed_pending(sessions, embedder)
        forgotten = 0
        if forget_other_models:
            async with sessions() as session, session.begin():
                forgotten = await vectors.forget_other_models(session, embedder.model)
    finally:
        await engine.dispose()
    line = f"{stored} memories embedded with {embedder.model}"
    return line + (f"; {forgotten} vectors of other models deleted" if forget_other_models else "")
