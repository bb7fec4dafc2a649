"""Guard: the page's server answers only its own origin, with its per-run token (ASGI middleware).

A page on 127.0.0.1 is reachable by every web page the user visits (a form posted at it) and,
through DNS rebinding, readable by one: a name the attacker controls first resolves to their
server, then to 127.0.0.1, and their script reads our answers as same-origin. So every request
must name our exact host and port (Host), come from our own page when a browser says where from
(Origin), and carry the random token of this run: from the URL `mdrag ui` opens, then a cookie
that only this origin gets. A request that changes anything (POST) repeats the token in its body.
"""

from __future__ import annotations

import hmac
import urllib.parse
from http.cookies import SimpleCookie
from typing import Any

from starlette.responses import PlainTextResponse, RedirectResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

# The page's own script and style, nothing inline, nothing from elsewhere: a note that slipped
# markup past the renderer would still run nothing.
SECURITY_HEADERS = [
    (
        b"content-security-policy",
        b"default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        b"connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
    ),
    (b"x-content-type-options", b"nosniff"),
    # same-origin, not no-referrer: with no-referrer Chromium sends `Origin: null` on our own form posts.
    (b"referrer-policy", b"same-origin"),
    (b"x-frame-options", b"DENY"),
    (b"cache-control", b"no-store"),
]
SAFE_METHODS = ("GET", "HEAD")


def cookie_name(port: int) -> str:
    """Cookies are not kept apart by port: two pages on two ports each need their own name."""
    return f"mdrag_ui_{port}"


def same(given: str | None, token: str) -> bool:
    return given is not None and hmac.compare_digest(given.encode(), token.encode())


class Guard:
    """Refuses (403) a request with another Host or Origin, or without this run's token."""

    def __init__(self, app: ASGIApp, token: str, port: int) -> None:
        self.app = app
        self.token = token
        self.port = port
        self.hosts = {f"127.0.0.1:{port}", f"localhost:{port}"}
        self.origins = {f"http://{host}" for host in self.hosts}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        refusal = self._refusal(scope, headers)
        if refusal is not None:
            await PlainTextResponse(refusal, status_code=403)(scope, receive, self._secured(send))
            return
        query = urllib.parse.parse_qs(scope.get("query_string", b"").decode("latin-1"))
        if "token" in query and scope["method"] in SAFE_METHODS:
            # The URL `mdrag ui` opened: swap the token for a cookie, and take it out of the address
            # bar (and so out of the history and of any Referer).
            rest = urllib.parse.urlencode({k: v for k, v in query.items() if k != "token"}, doseq=True)
            response = RedirectResponse(scope["path"] + (f"?{rest}" if rest else ""), status_code=303)
            response.set_cookie(
                cookie_name(self.port), self.token, httponly=True, samesite="strict", path="/"
            )
            await response(scope, receive, self._secured(send))
            return
        await self.app(scope, receive, self._secured(send))

    def _refusal(self, scope: Scope, headers: dict[str, str]) -> str | None:
        if headers.get("host") not in self.hosts:
            return "refused: this page answers only on its own address (wrong Host)\n"
        origin = headers.get("origin")
        if origin is not None and origin not in self.origins:
            return "refused: a request from another site (wrong Origin)\n"
        if scope["method"] not in (*SAFE_METHODS, "POST"):
            return f"refused: method {scope['method']} is not served\n"
        query = urllib.parse.parse_qs(scope.get("query_string", b"").decode("latin-1"))
        if scope["method"] in SAFE_METHODS and same((query.get("token") or [None])[0], self.token):
            return None
        cookies = SimpleCookie()
        try:
            cookies.load(headers.get("cookie", ""))
        except Exception:  # a malformed Cookie header is as good as none
            return "refused: no valid token (open the address `mdrag ui` printed)\n"
        morsel = cookies.get(cookie_name(self.port))
        if not same(morsel.value if morsel else None, self.token):
            return "refused: no valid token (open the address `mdrag ui` printed)\n"
        return None

    def _secured(self, send: Send) -> Send:
        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *SECURITY_HEADERS]}
            await send(message)

        return send_with_headers


def form_token_ok(form: Any, token: str) -> bool:
    """A state-changing request repeats the token in its body (the cookie alone is sent by any
    site's form the browser submits to us; SameSite=Strict is a second guard, not the only one)."""
    value = form.get("token")
    return isinstance(value, str) and same(value, token)
