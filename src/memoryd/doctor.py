"""``memoryd doctor``: check every moving part with one small real call each."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .embedding import Embedder
from .errors import MemorydError, StoreDamagedError
from .llm import Gateway, Message, load_routes
from .settings import Settings

DOCTOR_TIMEOUT = 5.0


@dataclass(frozen=True)
class Check:
    """One check's verdict."""

    name: str
    ok: bool
    detail: str

    def to_json(self) -> dict[str, Any]:
        """JSON shape."""
        return {"name": self.name, "ok": self.ok, "detail": self.detail}


def run_doctor(settings: Settings) -> list[Check]:
    """Store, embedder, tokenizer and each configured LLM route; never raises."""
    from .app import open_service

    checks: list[Check] = []
    try:
        # The LLM configuration is checked on its own below, not as part of the store; an
        # embeddings endpoint gets one tiny call with a short timeout and no retries.
        service = open_service(
            settings, create=False, gateway=Gateway({}), embedder=_quick_embedder(settings)
        )
    except MemorydError as error:
        checks.append(Check("store", False, str(error)))
    else:
        try:
            problems = service.admin.store_integrity_errors()
            if not problems:
                count = service.admin.memory_count()
                detail = f"{settings.db}: {count} memories, integrity ok"
            elif settings.is_postgres:
                detail = "; ".join(problems)
            else:
                finding = "integrity_check: " + "; ".join(problems[:3])
                detail = str(StoreDamagedError(Path(settings.db), finding))
            checks.append(Check("store", not problems, detail))
            try:
                vector = service.embedder.embed(["hello world"])[0]
                where = getattr(getattr(service.embedder, "settings", None), "base_url", None)
                at = f" at {where}" if where else ""
                checks.append(
                    Check(
                        "embedder",
                        True,
                        f"{service.embedder.model}{at}, {len(vector)} dimensions",
                    )
                )
            except MemorydError as error:
                checks.append(Check("embedder", False, str(error)))
        finally:
            service.close()
    from .tokens import O200kTokenizer

    ids = O200kTokenizer().encode("hello world")
    checks.append(Check("tokenizer", ids == [24912, 2375], f"o200k_base: 'hello world' → {ids}"))
    try:
        routes = load_routes(settings.home)
    except MemorydError as error:
        return [*checks, Check("llm", False, str(error))]
    if not routes:
        checks.append(
            Check(
                "llm",
                True,
                "no LLM configured: extraction, merging, reflection and captions are off",
            )
        )
    gateway = Gateway(routes)
    for operation, route in routes.items():
        try:
            gateway.complete(
                operation,
                'Answer with the JSON object {"ok": true}.',
                [Message("user", "ping")],
                json_mode=True,
            )
            checks.append(Check(f"llm {operation}", True, route.describe()))
        except MemorydError as error:
            checks.append(Check(f"llm {operation}", False, str(error)))
    return checks


def _quick_embedder(settings: Settings) -> Embedder | None:
    """The configured embeddings endpoint with a 5-second timeout and no retries (None for
    the local model, which open_service builds as usual)."""
    from dataclasses import replace

    from .embed_remote import OpenAICompatibleEmbedder, load_embed_settings

    found = load_embed_settings(settings.home)
    if found is None:
        return None
    return OpenAICompatibleEmbedder(
        replace(found, timeout=min(found.timeout, DOCTOR_TIMEOUT), max_retries=0)
    )
