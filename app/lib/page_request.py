"""A cursor-paged list's query, `limit` and `cursor`, read once: the `page` dependency.

A list paged this way says `dependencies=PAGE` in its route decorator and takes
`page: PageRequest`; the OpenAPI document shows both query parameters where `page`
stands in the handler's signature.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from litestar.di import Provide
from litestar.params import Parameter

from app.lib.pagination import DEFAULT_PAGE_SIZE, PageLimit, page_size


@dataclass(frozen=True, slots=True)
class PageRequest:
    size: int  # the page size to serve: `limit`, capped at MAX_PAGE_SIZE
    cursor: str | None  # the last page's `next_cursor`; None: the first page


def provide_page(
    limit: PageLimit = DEFAULT_PAGE_SIZE,
    cursor: Annotated[str | None, Parameter(max_length=200)] = None,
) -> PageRequest:
    return PageRequest(page_size(limit), cursor)


PAGE = {"page": Provide(provide_page, sync_to_thread=False)}
