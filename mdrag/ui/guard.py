"""Guard: the page answers only under its per-run key, on its own Host, to its own pages (ASGI middleware).

The key is the first segment of every path: the page is http://127.0.0.1:PORT/KEY/ and every link,
form and fetch of it is relative, so it carries the key; a request outside it is refused before any
work. No cookie holds the key: browsers do not keep cookies apart by port (SameSite is per site, and
every port of 127.0.0.1 is one site), so a page another local user serves on another port would
receive one, and could replay it. A path is never sent to another origin (Referrer-Policy
same-origin, and links out of a note open with noreferrer).

A page on 127.0.0.1 is also reachable by every web page the user visits and, through DNS rebinding,
readable by one: a name the attacker controls first resolves to their server, then to 127.0.0.1. So
every request must name our exact host and port (Host) and come from our own page when a browser
says where from (Origin). Each check reads the request's head once, in time linear in its size.
"""

from __future__ import annotations

import hmac

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
    # same-origin: the address (and so the key) never leaves in a Referer; not no-referrer, with
    # which Chromium sends `Origin: null` on our own form posts.
    (b"referrer-policy", b"same-origin"),
    (b"x-frame-options", b"DENY"),
    (b"cache-control", b"no-store"),
]
METHODS = ("GET", "HEAD", "POST")
# A request line and headers: a browser's, without cookies, is far less. The server refuses a head
# that arrives in parts past this; one that arrives whole is refused here.
MAX_HEAD_BYTES = 16 * 1024
NO_KEY = "not found: open the address `mdrag ui` printed (it holds this run's key)\n"


class Guard:
    """Refuses a request with another Host or Origin (403) or without this run's key in its path (404)."""

    def __init__(self, app: ASGIApp, key: str, port: int) -> None:
        self.app = app
        self.key = key.encode()
        self.prefix = f"/{key}"
        self.hosts = {f"127.0.0.1:{port}".encode(), f"localhost:{port}".encode()}
        self.origins = {b"http://" + host for host in self.hosts}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return  # the server runs no lifespan and serves no websockets: nothing else is answered
        refusal = self._refusal(scope)
        if refusal is not None:
            status, text = refusal
            await PlainTextResponse(text, status_code=status)(scope, receive, self._secured(send))
            return
        if scope["path"] == self.prefix:  # the page's address without its last slash
            query = scope.get("query_string", b"").decode("latin-1")
            response = RedirectResponse(self.prefix + "/" + (f"?{query}" if query else ""), status_code=303)
            await response(scope, receive, self._secured(send))
            return
        # The key becomes the root path: the routes below match the rest, and know nothing of it.
        inner = {**scope, "root_path": scope.get("root_path", "") + self.prefix}
        await self.app(inner, receive, self._secured(send))

    def _refusal(self, scope: Scope) -> tuple[int, str] | None:
        host = origin = None
        size = len(scope.get("raw_path") or b"") + len(scope.get("query_string") or b"")
        for name, value in scope["headers"]:
            size += len(name) + len(value)
            if name == b"host":
                host = value
            elif name == b"origin":
                origin = value
        if size > MAX_HEAD_BYTES:
            return 431, "refused: the request's headers are too large\n"
        if host not in self.hosts:
            return 403, "refused: this page answers only on its own address (wrong Host)\n"
        segment = scope["path"][1:].partition("/")[0]
        if not hmac.compare_digest(segment.encode(), self.key):
            return 404, NO_KEY
        if origin is not None and origin not in self.origins:
            return 403, "refused: a request from another site (wrong Origin)\n"
        if scope["method"] not in METHODS:
            return 405, f"refused: method {scope['method']} is not served\n"
        return None

    def _secured(self, send: Send) -> Send:
        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *SECURITY_HEADERS]}
            await send(message)

        return send_with_headers
