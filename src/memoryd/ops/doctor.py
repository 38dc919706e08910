"""``memoryd doctor``: check every moving part with one small real call each, all at once and
with short timeouts, and say for each failure what to do next.

Routes that are the same model at the same endpoint are called once. Failures that are the same
at one endpoint (a server that is down fails every route it serves) are reported once. The
caption route is asked whether its model reads images where the provider can tell (Ollama's
``/api/show`` lists a model's capabilities).
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from memoryd.config.settings import Settings, masked_location
from memoryd.errors import MemorydError, StoreDamagedError
from memoryd.providers.llm import Gateway, Message, Provider, Route, chat_route, routes_of
from memoryd.providers.llm.types import AnswerCutOffError
from memoryd.proxy.policy import down_hint, is_ollama

DOCTOR_TIMEOUT = 4.0
DEFAULT_URLS = {
    Provider.OPENAI: "https://api.openai.com/v1",
    Provider.ANTHROPIC: "https://api.anthropic.com",
}
CONFIG_HINT = "`memoryd config show` says where each setting comes from"


@dataclass(frozen=True)
class Check:
    """One check's verdict: ``ok`` false fails the run; a warning or a note does not."""

    name: str
    ok: bool
    detail: str
    next_step: str | None = None
    # "warn": it works but probably not as meant; "info": something doctor could not tell.
    level: str | None = None

    @property
    def verdict(self) -> str:
        """``ok``, ``warn``, ``info`` or ``FAIL``."""
        return "FAIL" if not self.ok else (self.level or "ok")

    def to_json(self) -> dict[str, Any]:
        """JSON shape."""
        return {
            "name": self.name,
            "ok": self.ok,
            "status": self.verdict.lower(),
            "detail": self.detail,
            "next_step": self.next_step,
        }


@dataclass(frozen=True)
class Diagnosis:
    """How one call went: ``problem`` None means it answered; else what is wrong, what next."""

    what: str
    problem: str | None = None
    next_step: str | None = None

    def about(self, what: str) -> Diagnosis:
        """The same answer about ``what``."""
        return replace(self, what=what)


def run_doctor(settings: Settings) -> list[Check]:
    """Store, embedder, tokenizer and each LLM route side by side; failures are checks."""
    try:
        routes = routes_of(settings)
        broken: Check | None = None
        upstream = _chat_upstream(settings)
        if upstream is not None:
            # The chat proxy's upstream, called like the routes (once per model and endpoint).
            routes[upstream.operation] = upstream
    except MemorydError as error:
        routes, broken = {}, Check("llm", False, str(error), CONFIG_HINT)
    files = _files_check(settings)  # before anything opens (and so tightens) the store
    groups: dict[tuple[Any, ...], list[str]] = {}
    for operation, route in routes.items():
        identity = (route.provider, route.model, route.base_url, route.api_key)
        groups.setdefault(identity, []).append(operation)
    tasks: list[Callable[[], Any]] = [
        lambda: _store_check(settings),
        lambda: _embedder_check(settings),
        _tokenizer_check,
    ]
    tasks += [_pinger(routes[ops[0]]) for ops in groups.values()]
    caption = routes.get("caption")
    if caption is not None and caption.inherited_model:
        caption = None  # pictures are OCR'd: the default model is never sent them
    if caption is not None:
        tasks.append(lambda: _vision_check(caption))
    _import_clients()
    with ThreadPoolExecutor(max_workers=len(tasks)) as pool:
        results = [future.result() for future in [pool.submit(task) for task in tasks]]
    (store, signature), embedder, tokenizer = results[0], results[1], results[2]
    checks = [store, *files, embedder, tokenizer]
    checks += _mismatch(settings, signature, embedder)
    answers = list(zip(groups.values(), results[3 : 3 + len(groups)], strict=True))
    if broken is not None:
        checks.append(broken)
    elif not routes:
        checks.append(
            Check(
                "llm",
                True,
                "no LLM configured: extraction, merging, reflection and captions are off "
                "(`memoryd config set llm.model NAME` turns them on)",
            )
        )
    checks += _route_checks(routes, answers)
    if "caption" in routes and routes["caption"].inherited_model:
        checks.append(
            Check(
                "llm caption",
                True,
                "pictures in documents are read with local OCR; the default model is not sent "
                "images (it may not read them)",
                "to caption pictures, set a model that reads images: `memoryd config set "
                "llm.caption.model qwen2.5vl`",
                level="info",
            )
        )
    caption_failed = any("caption" in ops and answer.problem for ops, answer in answers)
    if caption is not None and not caption_failed:
        checks.append(results[-1])
    return checks


def _chat_upstream(settings: Settings) -> Route | None:
    """The chat proxy's upstream route when ``serve`` runs the proxy."""
    from memoryd.proxy.policy import proxy_settings_of

    return chat_route(settings) if proxy_settings_of(settings).enabled else None


def _import_clients() -> None:
    """Import the libraries several checks share before their threads start: a thread
    importing one while another looks it up would see it half-initialised. (Each SDK is
    imported by the one thread that needs it, once its endpoint answers at all.)"""
    import httpx  # noqa: F401
    import numpy  # noqa: F401


def _pinger(route: Route) -> Callable[[], Diagnosis]:
    return lambda: _ping(route)


def _store_check(settings: Settings) -> tuple[Check, Any]:
    from memoryd.wiring import open_store

    where = masked_location(settings.db)
    try:
        store = open_store(settings, create=False)
    except MemorydError as error:
        return Check("store", False, str(error)), None
    try:
        problems = store.integrity_errors()
        count = store.memories.count()
        signature = store.embedding_signature()
    except MemorydError as error:
        return Check("store", False, f"{where}: {error}"), None
    finally:
        store.close()
    if not problems:
        detail = f"{where}: {count} memories, integrity ok"
    elif settings.is_postgres:
        detail = "; ".join(problems)
    else:
        finding = "integrity_check: " + "; ".join(problems[:3])
        detail = str(StoreDamagedError(Path(settings.db), finding))
    step = "restore a backup (`memoryd restore`)" if problems else None
    return Check("store", not problems, detail, step), signature


def _files_check(settings: Settings) -> list[Check]:
    """Whether other accounts could read memoryd's files; loose ones are made owner-only."""
    from memoryd.storage.file_modes import loose_files, tighten

    store = None if settings.is_postgres else Path(settings.db)
    home = settings.home if settings.home.is_dir() else None
    loose = loose_files(store, home)
    if not loose:
        return []
    tighten(store, home)
    named = ", ".join(f"{path} (mode {mode:o})" for path, mode in loose)
    return [
        Check(
            "files",
            True,
            f"other accounts on this machine could read {named}; made them owner-only now "
            "(files 0600, home 0700)",
            "check who else may have read them; keep memoryd's home private",
            level="warn",
        )
    ]


def _embedder_check(settings: Settings) -> Check:
    from memoryd.providers.embedder import LocalMiniLM
    from memoryd.providers.remote_embedder import OpenAICompatibleEmbedder, embed_settings_of

    try:
        endpoint = embed_settings_of(settings)
    except MemorydError as error:
        return Check("embedder", False, str(error), CONFIG_HINT)
    if endpoint is None:
        try:
            local = LocalMiniLM()
            vector = local.embed(["hello world"])[0]
        except MemorydError as error:
            return Check("embedder", False, str(error))
        return Check("embedder", True, f"{local.model}, {len(vector)} dimensions")
    quick = replace(endpoint, timeout=min(endpoint.timeout, DOCTOR_TIMEOUT), max_retries=0)
    unreachable = _unreachable(endpoint.base_url or DEFAULT_URLS[Provider.OPENAI])
    if unreachable is not None:
        answer = unreachable.about(f"embedding model {endpoint.model!r}")
        return Check("embedder", False, f"{answer.what}: {answer.problem}", answer.next_step)
    try:
        vector = OpenAICompatibleEmbedder(quick).embed(["hello world"])[0]
    except MemorydError as error:
        answer = diagnose(
            error,
            what=f"embedding model {endpoint.model!r}",
            url=endpoint.base_url or DEFAULT_URLS[Provider.OPENAI],
            model=endpoint.model,
            timeout=quick.timeout,
            key_source=endpoint.key_source,
            key_names="embed.api_key_file (or MEMORYD_EMBED_API_KEY)",
        )
        return Check("embedder", False, f"{answer.what}: {answer.problem}", answer.next_step)
    where = f" at {endpoint.base_url}" if endpoint.base_url else ""
    return Check("embedder", True, f"{endpoint.model}{where}, {len(vector)} dimensions")


def _mismatch(settings: Settings, signature: Any, embedder: Check) -> list[Check]:
    """The store was built with another embedding model than the one configured."""
    from memoryd.providers.embedder import LOCAL_MODEL_ID
    from memoryd.providers.remote_embedder import embed_settings_of

    if signature is None or not embedder.ok:
        return []
    endpoint = embed_settings_of(settings)
    configured = endpoint.model if endpoint is not None else LOCAL_MODEL_ID
    if configured == signature.model:
        return []
    return [
        Check(
            "embedder vs store",
            False,
            f"the store holds vectors from {signature.model!r}, but memoryd is configured "
            f"with {configured!r}",
            f"set embed.model back to {signature.model!r} (`memoryd config set embed.model "
            f"…`), or move the store to {configured!r} with `memoryd reembed`",
        )
    ]


def _tokenizer_check() -> Check:
    from memoryd.providers.tokenizer import O200kTokenizer

    ids = O200kTokenizer().encode("hello world")
    return Check("tokenizer", ids == [24912, 2375], f"o200k_base: 'hello world' → {ids}")


def _ping(route: Route) -> Diagnosis:
    """One tiny call with a short timeout and no retries."""
    quick = replace(route, timeout=min(route.timeout, DOCTOR_TIMEOUT), max_retries=0)
    what = f"{route.provider.value} model {route.model!r} at {_url(route)}"
    unreachable = _unreachable(_url(route))
    if unreachable is not None:
        return unreachable.about(what)
    try:
        Gateway({route.operation: quick}).complete(
            route.operation,
            'Answer with the JSON object {"ok": true}.',
            [Message("user", "ping")],
            json_mode=True,
        )
    except AnswerCutOffError:
        pass  # it answered: the ping's text is not judged, and a capped server cuts it short
    except MemorydError as error:
        return diagnose(
            error,
            what=what,
            url=_url(route),
            model=route.model,
            timeout=quick.timeout,
            key_source=route.key_source,
            key_names=f"llm.api_key_file or llm.{route.operation}.api_key_file (or "
            "MEMORYD_LLM_API_KEY)",
            provider=route.provider,
            api_key=route.api_key,
        )
    return Diagnosis(what)


def _unreachable(url: str) -> Diagnosis | None:
    """Whether the endpoint's host takes a TCP connection (before any SDK loads); None if so."""
    address = urlsplit(url)
    host = address.hostname or ""
    port = address.port or (443 if address.scheme == "https" else 80)
    step = down_hint(url)
    try:
        with socket.create_connection((host, port), timeout=DOCTOR_TIMEOUT):
            return None
    except socket.gaierror:
        return Diagnosis("", f"unknown host {host!r}", f"check the URL's host name (tried {url})")
    except TimeoutError:
        return Diagnosis("", f"no answer from {host}:{port} within {DOCTOR_TIMEOUT:g} s", step)
    except OSError as error:
        return Diagnosis("", f"cannot reach {url} ({(error.strerror or str(error)).lower()})", step)


def _url(route: Route) -> str:
    return route.base_url or DEFAULT_URLS[route.provider]


def diagnose(
    error: MemorydError,
    *,
    what: str,
    url: str,
    model: str,
    timeout: float,
    key_source: str | None,
    key_names: str,
    provider: Provider = Provider.OPENAI,
    api_key: str | None = None,
) -> Diagnosis:
    """What went wrong, from the SDK's error behind ``error``, and the next step."""
    cause = error.__cause__ or error.__context__
    status = getattr(cause, "status_code", None)
    kind = type(cause).__name__ if cause is not None else ""
    ollama = is_ollama(url)
    if "Timeout" in kind or kind == "DeadlineExceeded":  # the latter: connected, no answer
        step = f"is the server up and the URL right? (tried {url})"
        if kind == "DeadlineExceeded":
            step = f"a model may be loading or the machine busy: run doctor again soon ({url})"
        return Diagnosis(what, f"no answer within {timeout:g} s", step)
    if "Connection" in kind:
        return Diagnosis(what, f"cannot reach {url}", down_hint(url))
    if status in (401, 403):
        where = f"the key from {key_source}" if key_source else f"no key is set: set {key_names}"
        return Diagnosis(
            what, f"the endpoint refused the API key (HTTP {status})", f"check {where}"
        )
    if status == 404:
        if ollama:
            step = f"`ollama list` shows the models; `ollama pull {model}` fetches it"
        else:
            step = f"GET {url.rstrip('/')}/models lists the models the server has"
            listed = _listed_models(url, provider, api_key)
            if listed:
                step = f"the server has: {', '.join(listed[:10])}; " + step
        return Diagnosis(what, f"model {model!r} not found (HTTP 404)", step)
    if status == 429:
        return Diagnosis(what, "rate limited (HTTP 429)", "try again later, or check the plan")
    if status is not None and status >= 500:
        return Diagnosis(what, f"the server failed (HTTP {status})", "see the server's log")
    return Diagnosis(what, str(error), None)


def _listed_models(url: str, provider: Provider, api_key: str | None) -> list[str]:
    """The model ids ``GET …/models`` lists (empty when it cannot be asked)."""
    import httpx

    headers: dict[str, str] = {}
    if provider is Provider.ANTHROPIC:
        address = url.rstrip("/") + "/v1/models"
        headers["anthropic-version"] = "2023-06-01"
        if api_key:
            headers["x-api-key"] = api_key
    else:
        address = url.rstrip("/") + "/models"
        if api_key:
            headers["authorization"] = f"Bearer {api_key}"
    try:
        answer = httpx.get(address, headers=headers, timeout=DOCTOR_TIMEOUT)
        data = answer.json().get("data", []) if answer.status_code == 200 else []
        return [str(item["id"]) for item in data if isinstance(item, dict) and "id" in item]
    except (httpx.HTTPError, ValueError, AttributeError):
        return []


def _route_checks(
    routes: dict[str, Route], answers: list[tuple[list[str], Diagnosis]]
) -> list[Check]:
    """One check per route group that answered; one per distinct failure at an endpoint."""
    checks: list[Check] = []
    failures: dict[tuple[Any, ...], tuple[list[str], list[str]]] = {}
    for operations, answer in answers:
        name = "llm " + ", ".join(operations)
        if answer.problem is None:
            checks.append(Check(name, True, answer.what))
            continue
        route = routes[operations[0]]
        key = (route.provider, _url(route), answer.problem, answer.next_step)
        found = failures.setdefault(key, ([], []))
        found[0].extend(operations)
        if route.model not in found[1]:
            found[1].append(route.model)
    for (provider, url, problem, step), (operations, models) in failures.items():
        named = ", ".join(repr(model) for model in models)
        what = f"{provider.value} model{'s' if len(models) > 1 else ''} {named} at {url}"
        ordered = [op for op in routes if op in operations]
        checks.append(Check("llm " + ", ".join(ordered), False, f"{what}: {problem}", step))
    return checks


def _vision_check(route: Route) -> Check:
    """Whether the caption model reads images, where the provider says (Ollama does)."""
    import httpx

    name = "llm caption vision"
    unknown = f"could not tell whether {route.model!r} reads images"
    if route.provider is Provider.ANTHROPIC or route.base_url is None:
        return Check(name, True, f"{unknown} (the provider does not say)", level="info")
    root = route.base_url.rstrip("/").removesuffix("/v1")
    try:
        # The route's key goes along: the same server, and a proxy in front may want it.
        headers = {"authorization": f"Bearer {route.api_key}"} if route.api_key else {}
        answer = httpx.post(
            f"{root}/api/show", json={"model": route.model}, headers=headers, timeout=DOCTOR_TIMEOUT
        )
        capabilities = answer.json().get("capabilities") if answer.status_code == 200 else None
    except (httpx.HTTPError, ValueError, AttributeError):
        capabilities = None
    if not isinstance(capabilities, list):
        return Check(name, True, f"{unknown} (the server does not say)", level="info")
    if "vision" in capabilities:
        return Check(name, True, f"{route.model!r} reads images (Ollama lists vision)")
    listed = ", ".join(str(c) for c in capabilities) or "none"
    return Check(
        name,
        True,
        f"{route.model!r} does not read images according to Ollama (capabilities: {listed}); "
        "captions of images will fail",
        "pick a vision model, e.g. `ollama pull qwen2.5vl` then `memoryd config set "
        "llm.caption.model qwen2.5vl`",
        level="warn",
    )
