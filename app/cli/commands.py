"""`litestar users|tokens|agents|seed …`: staff commands that talk to the database directly."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NoReturn, TypeVar
from uuid import UUID

import click
from litestar import Litestar
from sqlalchemy.ext.asyncio import AsyncSession

from app.lib.cli import app_group, run_in_session, with_app

if TYPE_CHECKING:
    from app.db.models import User

T = TypeVar("T")


def fail(message: str) -> NoReturn:
    raise click.ClickException(message)


async def user_or_fail(session: AsyncSession, email: str) -> User:
    from app.accounts.services import get_user_by_email

    user = await get_user_by_email(session, email)
    if user is None:
        fail(f"No user with email {email}.")
    return user


users_group = app_group("users", "Manage users.")


@users_group.command(name="create", help="Create a user.")
@click.option("--email", required=True)
@click.option("--password", required=True)
@click.option("--staff", is_flag=True, default=False)
@with_app
def create_user_command(app: Litestar, email: str, password: str, staff: bool) -> None:
    from app.accounts.services import create_user, get_user_by_email
    from app.lib.problems import ProblemException

    async def work(session: AsyncSession) -> Any:
        if await get_user_by_email(session, email):
            fail(f"A user with email {email} already exists.")
        try:
            return await create_user(session, email, password, is_staff=staff)
        except ProblemException as exc:
            fail(exc.detail)

    user = run_in_session(app, work)
    click.echo(str(user.id))


@users_group.command(name="list", help="List users: email, staff, live tokens, id.")
@with_app
def list_users_command(app: Litestar) -> None:
    from app.accounts.services import list_users

    for user, tokens in run_in_session(app, list_users):
        staff = "staff" if user.is_staff else "-"
        click.echo(f"{user.email}\t{staff}\t{tokens} token(s)\t{user.id}")


@users_group.command(name="set-password", help="Set a user's password (the sign-up policy).")
@click.option("--email", required=True)
@click.option("--password", required=True, prompt=True, hide_input=True)
@with_app
def set_password_command(app: Litestar, email: str, password: str) -> None:
    from app.accounts.services import set_password
    from app.lib.problems import ProblemException

    async def work(session: AsyncSession) -> None:
        user = await user_or_fail(session, email)
        try:
            await set_password(session, user, password)
        except ProblemException as exc:
            fail(exc.detail)

    run_in_session(app, work)
    click.echo(f"Password of {email} changed (its tokens stay valid: `tokens revoke`).")


tokens_group = app_group("tokens", "Manage API tokens.")


@tokens_group.command(name="list", help="A user's live tokens: id, created, expires.")
@click.option("--email", required=True)
@with_app
def list_tokens_command(app: Litestar, email: str) -> None:
    from app.accounts.services import live_tokens

    async def work(session: AsyncSession) -> list[Any]:
        return await live_tokens(session, await user_or_fail(session, email))

    for token in run_in_session(app, work):
        created, expires = token.created_at.isoformat(), token.expires_at.isoformat()
        click.echo(f"{token.id}\tcreated {created}\texpires {expires}")


@tokens_group.command(name="revoke", help="Revoke a user's tokens (all, or --token-id).")
@click.option("--email", required=True)
@click.option("--token-id", type=click.UUID, default=None, help="Only this token.")
@with_app
def revoke_tokens_command(app: Litestar, email: str, token_id: UUID | None) -> None:
    from app.accounts.services import revoke_user_tokens

    async def work(session: AsyncSession) -> int:
        return await revoke_user_tokens(session, await user_or_fail(session, email), token_id)

    revoked = run_in_session(app, work)
    if token_id is not None and revoked == 0:
        fail(f"No live token {token_id} of {email}.")
    click.echo(f"Revoked {revoked} token(s) of {email}; open sockets close within seconds.")


agents_group = app_group("agents", "Manage agents.")


@agents_group.command(name="create", help="Create an agent and print its id.")
@click.option("--owner", "owner_email", required=True, help="Owner's email.")
@click.option("--name", required=True)
@click.option("--agent-type", required=True)
@click.option("--model", default=None)
@click.option("--system-prompt", default=None)
@click.option("--shared", is_flag=True, default=False, help="Visible to every user.")
@with_app
def create_agent_command(
    app: Litestar,
    owner_email: str,
    name: str,
    agent_type: str,
    model: str | None,
    system_prompt: str | None,
    shared: bool,
) -> None:
    from app.agents.services import create_agent
    from app.lib.problems import ProblemException

    async def work(session: AsyncSession) -> Any:
        owner = await user_or_fail(session, owner_email)
        try:
            return await create_agent(
                session,
                owner,
                name=name,
                agent_type=agent_type,
                model=model,
                system_prompt=system_prompt,
                is_shared=shared,
            )
        except ProblemException as exc:
            fail(exc.detail)

    agent = run_in_session(app, work)
    click.echo(str(agent.id))


seed_group = app_group("seed", "Load data to explore.")


@seed_group.command(name="demo", help="Create (or refresh) the demo user, agents and threads.")
@with_app
def seed_demo_command(app: Litestar) -> None:
    from app.cli.demo import seed_demo

    token = run_in_session(app, seed_demo)
    click.echo("demo user: demo@example.com / demo-password")
    click.echo(f"demo token: {token}")
