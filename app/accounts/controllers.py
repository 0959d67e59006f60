from __future__ import annotations

from functools import partial

from litestar import Controller, Request, delete, get, post
from litestar.datastructures import CacheControlHeader
from litestar.di import Provide
from litestar.exceptions import NotAuthorizedException
from sqlalchemy.ext.asyncio import AsyncSession

from app.accounts import services
from app.accounts.deps import SECURITY, SignedInController, bearer_token
from app.accounts.schemas import TokenCreate, TokenRead, UserRead
from app.accounts.serializers import user_read
from app.accounts.throttle import LoginThrottle, provide_login_throttle
from app.db.models import User
from app.db.outbox import on_commit
from app.lib.client_address import client_address
from app.lib.problems import problems
from app.lib.security import token_digest
from app.settings import Settings


class AuthController(Controller):
    path = "/api/auth"
    tags = ["auth"]

    dependencies = {"login_throttle": Provide(provide_login_throttle, sync_to_thread=False)}

    @post(
        "/token",
        operation_id="CreateToken",
        responses=problems(429, 503),
        security=[],
        # A bearer token must never sit in a browser or proxy cache.
        cache_control=CacheControlHeader(no_store=True),
    )
    async def create_token(
        self,
        request: Request,
        data: TokenCreate,
        db_session: AsyncSession,
        settings: Settings,
        login_throttle: LoginThrottle,
    ) -> TokenRead:
        """Exchange an email and password for a bearer token. Too many failed logins
        for an account or from an address answer 429 (see `Retry-After`)."""
        address = client_address(request, settings.trusted_networks)
        await login_throttle.attempt(data.email, address)
        user = await services.authenticate(db_session, data.email, data.password)
        if user is None:
            raise NotAuthorizedException("Wrong email or password.")
        await login_throttle.succeeded(data.email, address)
        raw, token = await services.issue_token(db_session, user, settings.token_ttl_days)
        return TokenRead(
            access_token=raw, token_type="bearer", expires_at=token.expires_at, user=user_read(user)
        )

    @delete(
        "/token",
        operation_id="RevokeToken",
        responses=problems(),
        security=SECURITY,
    )
    async def revoke_token(
        self, request: Request, db_session: AsyncSession, current_user: User
    ) -> None:
        """Revoke the token used for this request."""
        token = bearer_token(request)
        if token:
            await services.revoke_token(db_session, token)
            digest = token_digest(token)
            cache = request.app.state.get("token_cache")
            if cache is not None:  # other processes forget it on the announcement
                on_commit(db_session, partial(cache.forget, digest))
            request.app.emit("token_revoked", digest)  # closes its sockets


class MeController(SignedInController):
    path = "/api/me"
    tags = ["auth"]

    @get("/", operation_id="GetMe", responses=problems())
    async def get_me(self, current_user: User) -> UserRead:
        """The user the token belongs to."""
        return user_read(current_user)
