"""The chat proxy on ``memoryd serve``: ``POST /v1/chat/completions`` and ``GET /v1/models``,
OpenAI-compatible, in front of the configured upstream chat route (SPEC §7).

For each request: the context pack for the latest user message is appended, fenced, to the
app's system message (within a deadline: a recall that fails or is late sends the request on
without it, and the log says why); the request goes to the upstream (OpenAI-compatible as is,
Anthropic translated) and its answer streams back as it arrives; once the answer is complete
the turn (the user's message and the answer, at the time the request came in) is queued for
extraction, once. :mod:`memoryd.proxy.policy` holds the rules; this module does the I/O.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import anyio
import httpx
from fastapi import Request
from starlette.background import BackgroundTask
from starlette.responses import JSONResponse, Response, StreamingResponse

from memoryd.errors import MemorydError
from memoryd.http.proxy_state import Exchange, LastRequest, Remembered
from memoryd.providers.embedder import query_side
from memoryd.providers.llm import Provider, Route
from memoryd.proxy.anthropic import (
    ANTHROPIC_VERSION,
    AnthropicStream,
    from_anthropic,
    models_from_anthropic,
    to_anthropic,
)
from memoryd.proxy.policy import (
    CONTEXT_HEADER,
    CONVERSATION_HEADER,
    ChatRequestError,
    ProxySettings,
    StreamedAnswer,
    Turn,
    answer_of,
    conversation_of,
    down_hint,
    finished,
    finished_history,
    history_digest,
    latest_turn,
    messages_of,
    openai_error,
    turn_key,
    with_pack,
)

if TYPE_CHECKING:
    from memoryd.service import MemoryService

log = logging.getLogger("memoryd.proxy")

DEFAULT_URLS = {
    Provider.OPENAI: "https://api.openai.com/v1",
    Provider.ANTHROPIC: "https://api.anthropic.com",
}
CONNECT_SECONDS = 5.0
TAINT_PACK = "the context pack gave the model passages of the owner's documents"
TAINT_TOOLS = "the model read tool output in this turn"


class ChatProxy:
    """The proxy's state: its settings, the upstream route, the conversations it has seen and
    the turns it has queued."""

    def __init__(
        self,
        service: MemoryService,
        settings: ProxySettings,
        route: Route | None,
    ) -> None:
        self.service = service
        self.settings = settings
        self.route = route
        self.last: LastRequest | None = None
        self._conversations = Remembered()
        self._queued = Remembered()
        self._client: httpx.AsyncClient | None = None

    def start_warming(self) -> None:
        """Load what a context pack needs (the embedder, the tokenizer) in the background, so
        the first chat after start is not past the recall deadline for that alone."""
        if self.settings.enabled and self.settings.inject != "off":
            threading.Thread(target=self._warm, name="memoryd-proxy-warm", daemon=True).start()

    def _warm(self) -> None:
        try:
            self.service.context("warm up the chat proxy", stamp=False)
            # An empty store's recall embeds nothing: the query model (built on first use in a
            # new home, seconds) is loaded here, not on the first chat, past its deadline.
            query_side(self.service.embedder).embed(["warm up the chat proxy"])
        except Exception as error:  # the first request will say what is wrong
            log.warning("proxy: warming recall failed: %s", error)

    def configure(self, settings: ProxySettings, route: Route | None) -> None:
        """New settings or a new upstream (memoryd.toml changed while serve runs)."""
        self.settings, self.route = settings, route

    def upstream_line(self) -> str:
        """The upstream in words, for the status line and the log."""
        if self.route is None:
            return "no upstream chat model configured"
        return f"{self.route.provider.value} at {self._base_url(self.route)}"

    def status_line(self) -> str:
        """The web page's status line: the last request and its upstream."""
        if not self.settings.enabled:
            return "Chat proxy: off (proxy.enabled)"
        if self.last is None:
            return f"Chat proxy: no request yet; upstream {self.upstream_line()}"
        return self.last.line()

    # ----------------------------------------------------------------- models

    async def models(self) -> Response:
        """The upstream's model list, in OpenAI's shape."""
        route = self.route
        if not self.settings.enabled:
            return _proxy_off()
        if route is None:
            return _no_upstream()
        base = self._base_url(route)
        try:
            if route.provider is Provider.ANTHROPIC:
                answer = await self._http().get(
                    base.rstrip("/") + "/v1/models", headers=self._headers(route)
                )
                if answer.status_code == 200:
                    return JSONResponse(models_from_anthropic(answer.json()))
            else:
                answer = await self._http().get(
                    base.rstrip("/") + "/models", headers=self._headers(route)
                )
        except (httpx.HTTPError, ValueError) as error:
            return self._unreachable(route, error)
        return Response(
            answer.content,
            status_code=answer.status_code,
            media_type=answer.headers.get("content-type", "application/json"),
        )

    # ------------------------------------------------------------ completions

    async def complete(self, request: Request) -> Response:
        """One chat completion through the proxy (streamed when the app asks)."""
        route = self.route
        if not self.settings.enabled:
            return _proxy_off()
        if route is None:
            return _no_upstream()
        try:
            body = json.loads(await request.body())
            if not isinstance(body, dict):
                raise ChatRequestError("the body must be a JSON object")
            messages = messages_of(body)
            turn = latest_turn(messages)
            conversation = conversation_of(
                request.headers.get(CONVERSATION_HEADER), turn, messages, self._conversations.get
            )
        except (ValueError, ChatRequestError) as error:
            return JSONResponse(
                openai_error(f"memoryd: {error}", "invalid_request_error"), status_code=400
            )
        at = datetime.now(UTC)
        model = str(body.get("model") or route.model)
        tainted_by = self._begin_turn(conversation, turn)
        block, note, documents = await self._pack(turn, conversation)
        if documents:
            tainted_by = tainted_by or TAINT_PACK
        forwarded = {**body, "model": model, "messages": with_pack(messages, block)}
        exchange = Exchange(conversation, turn, messages, at, tainted_by, model)
        headers = {CONVERSATION_HEADER: conversation, CONTEXT_HEADER: note}
        try:
            return await self._forward(route, forwarded, exchange, headers)
        except ChatRequestError as error:
            return JSONResponse(
                openai_error(f"memoryd: {error}", "invalid_request_error"), status_code=400
            )

    def _begin_turn(self, conversation: str, turn: Turn | None) -> str | None:
        """The conversation's tool session: a new owner turn clears its taint; tool output
        read in this turn taints it (a ``remember`` through ``/v1/tools/call`` with this
        conversation as its session then waits for the owner)."""
        if turn is None:
            return None
        untrusted = turn.read_tool_output
        self.service.sessions.begin_call(conversation, f"turn-{turn.number}", untrusted)
        return TAINT_TOOLS if untrusted else None

    async def _pack(self, turn: Turn | None, conversation: str) -> tuple[str, str, bool]:
        """The fenced block for the turn, a note for the log and the response header, and
        whether the block holds passages of documents; an empty block when injection is off,
        recall failed, or it was late."""
        inject = self.settings.inject
        if inject == "off" or turn is None:
            return "", "off" if inject == "off" else "none: no user message", False
        started = time.monotonic()
        budget = self.settings.budget

        def build() -> tuple[str, int, bool]:
            if inject == "memories":
                recalled = self.service.recall(turn.user, budget=budget)
                return recalled.text, recalled.packed.tokens, False
            pack = self.service.context(turn.user, budget=budget)
            return pack.text, pack.tokens, any(item.kind == "chunk" for item in pack.items)

        deadline = self.settings.recall_deadline
        try:
            with anyio.move_on_after(deadline) as scope:
                text, tokens, chunks = await anyio.to_thread.run_sync(build, abandon_on_cancel=True)
        except Exception as error:  # recall failing must never block the chat
            log.warning(
                "proxy: recall failed (%s); conversation %s goes upstream without the pack",
                error,
                conversation,
                exc_info=not isinstance(error, MemorydError),
            )
            return "", f"none: recall failed ({type(error).__name__})", False
        if scope.cancelled_caught:
            log.warning(
                "proxy: recall took over its %.1f s deadline; conversation %s goes upstream "
                "without the pack",
                deadline,
                conversation,
            )
            return "", f"none: recall over its {deadline:g} s deadline", False
        if chunks:
            self.service.sessions.mark(conversation, TAINT_PACK)
        spent = (time.monotonic() - started) * 1000
        note = f"{inject}: {tokens} tokens in {spent:.0f} ms" if text else "none: empty"
        return text, note, chunks

    async def _forward(
        self,
        route: Route,
        body: dict[str, Any],
        exchange: Exchange,
        headers: dict[str, str],
    ) -> Response:
        """Send the request upstream and relay its answer: an OpenAI-compatible upstream's
        bytes as they come, Anthropic's translated event by event."""
        base = self._base_url(route).rstrip("/")
        translate: AnthropicStream | None = None
        if route.provider is Provider.ANTHROPIC:
            url, payload = base + "/v1/messages", to_anthropic(body, exchange.model)
            translate = AnthropicStream(exchange.model)
        else:
            url, payload = base + "/chat/completions", body
        outgoing = self._http().build_request(
            "POST", url, json=payload, headers=self._headers(route)
        )
        try:
            answer = await self._http().send(outgoing, stream=True)
        except httpx.HTTPError as error:
            return self._unreachable(route, error, exchange)
        if answer.status_code != 200:
            return await self._upstream_refused(route, answer, exchange, headers)
        if not body.get("stream"):
            content = await answer.aread()
            await answer.aclose()
            try:
                completion = json.loads(content)
                if translate is not None:
                    completion = from_anthropic(completion)
                    content = json.dumps(completion).encode()
                text, finish, called = answer_of(completion)
            except (ValueError, AttributeError):
                text, finish, called = "", None, False
            self._record(exchange, route, "answered (200)")
            return Response(
                content,
                media_type="application/json",
                headers=headers,
                background=BackgroundTask(self._finish, exchange, text, finish, called),
            )
        reader = StreamedAnswer()

        async def relay() -> AsyncIterator[bytes]:
            try:
                async for data in answer.aiter_raw():
                    out = translate.feed(data) if translate is not None else data
                    if out:
                        reader.feed(out)
                        yield out
            except httpx.HTTPError as error:
                log.warning("proxy: the upstream's stream broke off: %s", error)
                failure = openai_error(f"the upstream's answer broke off: {error}", "api_error")
                yield b"data: " + json.dumps(failure).encode() + b"\n\n"
            finally:
                await answer.aclose()

        async def after() -> None:
            # A stream that broke off, or that the app hung up on, is no finished turn.
            if reader.done or reader.finish is not None:
                await self._finish(exchange, reader.text, reader.finish, reader.called_tools)

        self._record(exchange, route, "streaming (200)")
        return StreamingResponse(
            relay(),
            media_type="text/event-stream",
            headers={**headers, "cache-control": "no-cache"},
            background=BackgroundTask(after),
        )

    async def _finish(
        self, exchange: Exchange, text: str, finish: str | None, called_tools: bool
    ) -> None:
        """The answer is complete: remember where the conversation stands and queue the
        turn for extraction, once."""
        if exchange.turn is None or not finished(text, finish, called_tools):
            return
        history = finished_history(exchange.messages, text)
        self._conversations.add(history_digest(history), exchange.conversation)
        if not self.settings.observe:
            return
        if not self._queued.add(turn_key(exchange.conversation, exchange.turn, text), ""):
            return  # the same request answered the same way again: no new turn
        user = exchange.turn.user

        def observe() -> None:
            try:
                observed = self.service.observe_turn(
                    user, text, at=exchange.at, tainted_by=exchange.tainted_by
                )
            except MemorydError as error:
                log.warning("proxy: could not queue the turn for extraction: %s", error)
                return
            if not observed.queued:
                log.info("proxy: turn not queued: %s", observed.notice)

        await anyio.to_thread.run_sync(observe)

    async def _upstream_refused(
        self,
        route: Route,
        answer: httpx.Response,
        exchange: Exchange,
        headers: dict[str, str],
    ) -> Response:
        """The upstream's error, passed on in OpenAI's shape."""
        content = await answer.aread()
        await answer.aclose()
        status = answer.status_code
        self._record(exchange, route, f"the upstream answered HTTP {status}")
        try:
            parsed = json.loads(content)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict) and isinstance(parsed.get("error"), dict):
            error = parsed["error"]
            message = str(error.get("message", ""))
            if route.provider is Provider.OPENAI and "type" in error:
                return JSONResponse(parsed, status_code=status, headers=headers)
        else:
            message = content.decode("utf-8", "replace")[:500]
        hint = f"the upstream {self.upstream_line()} answered HTTP {status}: {message}"
        if status == 404:
            hint += f" (is the model {exchange.model!r} there? GET /v1/models lists them)"
        return JSONResponse(
            openai_error(hint, "upstream_error", str(status)), status_code=status, headers=headers
        )

    def _unreachable(
        self, route: Route, error: Exception, exchange: Exchange | None = None
    ) -> Response:
        """The upstream did not answer: 502 in OpenAI's shape, with what to check; 504 when it
        was reached but did not answer within the route's timeout (a slow model, not a server
        that is down)."""
        base = self._base_url(route)
        slow = isinstance(error, httpx.TimeoutException) and not isinstance(
            error, httpx.ConnectTimeout
        )
        message = f"memoryd: cannot reach the upstream chat model at {base}; {down_hint(base)}"
        if slow:
            message = (
                f"memoryd: the upstream chat model at {base} did not answer within "
                f"{route.timeout:g} s; for a slower model raise it: `memoryd config set "
                "llm.chat.timeout SECONDS` (or llm.timeout, every route's)"
            )
        log.warning("proxy: %s (%s)", message, type(error).__name__)
        if exchange is not None:
            self._record(exchange, route, f"upstream unreachable ({type(error).__name__})")
        return JSONResponse(
            openai_error(message, "upstream_unreachable", "upstream_unreachable"),
            status_code=504 if slow else 502,
        )

    def _record(self, exchange: Exchange, route: Route, outcome: str) -> None:
        self.last = LastRequest(exchange.at, exchange.model, self.upstream_line(), outcome)
        log.info("proxy: %s", self.last.line())

    def _http(self) -> httpx.AsyncClient:
        """One client for the upstream, made in the server's event loop on first use."""
        if self._client is None:
            route = self.route
            read = route.timeout if route is not None else 60.0
            self._client = httpx.AsyncClient(
                timeout=httpx.Timeout(read, connect=CONNECT_SECONDS),
                limits=httpx.Limits(max_connections=256, max_keepalive_connections=32),
                follow_redirects=False,
            )
        return self._client

    async def aclose(self) -> None:
        """Close the upstream client."""
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    @staticmethod
    def _base_url(route: Route) -> str:
        return route.base_url or DEFAULT_URLS[route.provider]

    @staticmethod
    def _headers(route: Route) -> dict[str, str]:
        if route.provider is Provider.ANTHROPIC:
            headers = {"anthropic-version": ANTHROPIC_VERSION}
            if route.api_key:
                headers["x-api-key"] = route.api_key
            return headers
        return {"authorization": f"Bearer {route.api_key}"} if route.api_key else {}


def _no_upstream() -> Response:
    message = (
        "memoryd: no upstream chat model is configured; set one with `memoryd config set "
        "llm.base_url URL` and `memoryd config set llm.model NAME` (or llm.chat.* for a chat "
        "model of its own)"
    )
    return JSONResponse(openai_error(message, "upstream_not_configured"), status_code=503)


def _proxy_off() -> Response:
    message = "memoryd: the chat proxy is off; `memoryd config set proxy.enabled on` turns it on"
    return JSONResponse(openai_error(message, "proxy_off"), status_code=404)
