"""A request body read no further than a byte limit: both servers' guard against big bodies."""

from __future__ import annotations

from starlette.requests import Request


async def read_bounded(request: Request, limit: int) -> bytes | None:
    """The body, or None once it is over ``limit`` bytes (a declared length is refused unread)."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        return None
    body = bytearray()
    async for part in request.stream():
        body += part
        if len(body) > limit:
            return None
    return bytes(body)
