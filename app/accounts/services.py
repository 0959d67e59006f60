"""Users and API tokens."""

from __future__ import annotations

from datetime import datetime, timedelta
from uuid import UUID

from sqlalchemy import bindparam, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from app.db.models import ApiToken, User
from app.lib.problems import ProblemException
from app.lib.security import (
    hash_password,
    new_token,
    token_digest,
    verify_password,
    weak_password_reasons,
)
from app.lib.time import utcnow


def normalise_email(email: str) -> str:
    return email.strip().lower()


async def get_user_by_email(session: AsyncSession, email: str) -> User | None:
    return await session.scalar(select(User).where(User.email == normalise_email(email)))


async def create_user(
    session: AsyncSession, email: str, password: str, *, is_staff: bool = False
) -> User:
    check_new_password(password, email)
    user = User(
        email=normalise_email(email), password_hash=hash_password(password), is_staff=is_staff
    )
    session.add(user)
    await session.flush()
    return user


async def list_users(session: AsyncSession) -> list[tuple[User, int]]:
    """Every user, oldest first, with the number of live (unrevoked, unexpired) tokens."""
    live = (
        select(func.count(ApiToken.id))
        .where(
            ApiToken.user_id == User.id,
            ApiToken.revoked_at.is_(None),
            ApiToken.expires_at > utcnow(),
        )
        .scalar_subquery()
    )
    rows = await session.execute(select(User, live).order_by(User.created_at, User.email))
    return [(user, int(count)) for user, count in rows.tuples()]


async def set_password(session: AsyncSession, user: User, password: str) -> None:
    """A new password under the same policy as sign-up (`check_new_password`)."""
    check_new_password(password, user.email)
    user.password_hash = hash_password(password)
    await session.flush()


async def live_tokens(session: AsyncSession, user: User) -> list[ApiToken]:
    query = (
        select(ApiToken)
        .where(
            ApiToken.user_id == user.id,
            ApiToken.revoked_at.is_(None),
            ApiToken.expires_at > utcnow(),
        )
        .order_by(ApiToken.created_at)
    )
    return list(await session.scalars(query))


async def revoke_user_tokens(session: AsyncSession, user: User, token_id: UUID | None) -> int:
    """Revoke the user's live tokens (or just `token_id`); open sockets using them close
    within WS_TOKEN_CHECK_SECONDS. Returns how many were revoked."""
    query = update(ApiToken).where(ApiToken.user_id == user.id, ApiToken.revoked_at.is_(None))
    if token_id is not None:
        query = query.where(ApiToken.id == token_id)
    result = await session.execute(query.values(revoked_at=utcnow()))
    return int(result.rowcount or 0)  # type: ignore[attr-defined]


def check_new_password(password: str, email: str) -> None:
    """Refuse a weak new password with a 400 naming every rule it breaks (never applied
    at login: existing passwords keep working)."""
    if reasons := weak_password_reasons(password, email):
        rules = "; ".join(reasons)
        raise ProblemException(
            400,
            f"The password is too weak: it must be {rules}.",
            errors=[{"field": "password", "message": rules, "source": "body"}],
        )


async def authenticate(session: AsyncSession, email: str, password: str) -> User | None:
    user = await get_user_by_email(session, email)
    if not verify_password(password, user.password_hash if user else None):
        return None
    return user


async def issue_token(session: AsyncSession, user: User, ttl_days: int) -> tuple[str, ApiToken]:
    raw = new_token()
    token = ApiToken(
        user_id=user.id,
        token_hash=token_digest(raw),
        expires_at=utcnow() + timedelta(days=ttl_days),
    )
    session.add(token)
    await session.flush()
    return raw, token


# Built once (statement construction costs more than the indexed lookup itself); one
# row, the user, for a token that is neither revoked nor expired.
_USER_FOR_TOKEN = (
    select(User)
    .join(ApiToken, ApiToken.user_id == User.id)
    .where(
        ApiToken.token_hash == bindparam("digest"),
        ApiToken.revoked_at.is_(None),
        ApiToken.expires_at > bindparam("now"),
    )
)


_USER_AND_EXPIRY = _USER_FOR_TOKEN.add_columns(ApiToken.expires_at)


async def user_and_expiry_for_token(
    session: AsyncSession, digest: str
) -> tuple[User, datetime] | None:
    """The user of a live token (by digest) and when the token expires."""
    row = (await session.execute(_USER_AND_EXPIRY, {"digest": digest, "now": utcnow()})).first()
    return None if row is None else (row[0], row[1])


async def user_for_token(session: AsyncSession, raw_token: str) -> User | None:
    """The user a live (unexpired, unrevoked) token belongs to."""
    return await session.scalar(
        _USER_FOR_TOKEN, {"digest": token_digest(raw_token), "now": utcnow()}
    )


async def revoke_token(session: AsyncSession, raw_token: str) -> None:
    await session.execute(
        update(ApiToken)
        .where(ApiToken.token_hash == token_digest(raw_token), ApiToken.revoked_at.is_(None))
        .values(revoked_at=utcnow())
    )
