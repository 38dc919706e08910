"""Content screens: credentials (never stored) and sensitive words (never activate alone)."""

from __future__ import annotations

import hashlib
import math
import re
from collections import Counter
from dataclasses import dataclass

from memoryd.errors import CredentialRefusedError
from memoryd.words import fold_text, strip_controls

# Instruction and secret markers. A memory that contains one may change how the assistant
# behaves or holds something private, so it always waits for the owner.
DEFAULT_SENSITIVE_PHRASES: tuple[str, ...] = (
    "password",
    "passcode",
    "passphrase",
    "pin code",
    "secret",
    "api key",
    "apikey",
    "access token",
    "token",
    "credential",
    "private key",
    "ssh key",
    "always",
    "never",
    "from now on",
    "going forward",
    "henceforth",
    "every time",
    "whenever",
    "ignore",
    "disregard",
    "override",
    "instruction",
    "instructions",
    "system prompt",
    "rule",
    "rules",
    "must",
    "must not",
    "do not",
    "don't",
    "should",
    "should not",
    "you are",
    "act as",
    "pretend",
    "obey",
    "bank account",
    "social security",
    "credit card",
    "shall",
    "you're",
    "jailbreak",
    "developer mode",
    # A permission granted to the assistant is a standing rule too ("the assistant may delete
    # files without asking", "has permission to transfer money").
    "without asking", "without confirmation", "without confirming", "without approval",
    "without my approval", "without permission", "no need to ask", "no need to confirm",
    "no confirmation", "confirmation is not needed", "allowed to", "is allowed", "permission",
    "permitted", "authorised", "authorized", "authorise", "authorize", "treated as confirmed",
    "skip the review", "fine to share", "ok to share", "okay to share",
    # French, Spanish, Portuguese, German, Italian and Dutch markers of a standing rule.
    "désormais", "dorénavant", "à partir de maintenant", "toujours", "jamais", "tu dois",
    "vous devez", "ignorez", "ignore les",
    "a partir de ahora", "de ahora en adelante", "siempre", "nunca", "debes", "ignora",
    "a partir de agora", "sempre", "você deve",
    "ab jetzt", "von nun an", "ab sofort", "immer", "niemals", "du musst", "sie müssen",
    "ignoriere", "ignorieren",
    "d'ora in poi", "da ora in poi", "d'ora in avanti", "devi", "mai più",
    "vanaf nu", "voortaan", "altijd", "nooit", "je moet",
)  # fmt: skip


@dataclass(frozen=True)
class CredentialMatch:
    """What kind of credential a text appears to contain (never the secret itself)."""

    label: str


_CREDENTIAL_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("private key", re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")),
    ("OpenSSH private key", re.compile(r"\bb3BlbnNzaC1rZXktdjE[A-Za-z0-9+/=]{20,}")),
    ("Anthropic API key", re.compile(r"\bsk-ant-[A-Za-z0-9_\-]{20,}")),
    ("OpenAI-style API key", re.compile(r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}")),
    ("Stripe key", re.compile(r"\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}")),
    ("AWS access key id", re.compile(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA)[0-9A-Z]{16}\b")),
    (
        "AWS secret access key",
        re.compile(r"(?i)aws.{0,20}secret.{0,20}[:=]\s*['\"]?[A-Za-z0-9/+=]{40}\b"),
    ),
    ("GitHub token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})")),
    ("GitLab token", re.compile(r"\bglpat-[A-Za-z0-9_\-]{20,}")),
    ("Slack token", re.compile(r"\bxox[abposr]-[A-Za-z0-9\-]{10,}")),
    ("Google API key", re.compile(r"\bAIza[0-9A-Za-z_\-]{35}\b")),
    ("Hugging Face token", re.compile(r"\bhf_[A-Za-z0-9]{30,}\b")),
    (
        "JSON Web Token",
        re.compile(r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"),
    ),
    ("bearer token", re.compile(r"(?i)\bbearer\s+[A-Za-z0-9_\-\.=+/]{20,}")),
    (
        "password or key assignment",
        # "my password for the bank is X", "password: correct horse battery staple", "Mein
        # Passwort lautet X": the keyword, a few words, a verb or sign, then the value to the
        # end of the line (a passphrase has spaces).
        re.compile(
            r"(?i)\b(?:password|passwd|pwd|passcode|passphrase|secret|api[_\- ]?key|"
            r"access[_\- ]?token|auth[_\- ]?token|client[_\- ]?secret|passwort|kennwort|"
            r"mot de passe|contrase(?:ñ|n)a|wachtwoord|senha|parola d'ordine|пароль)\b"
            r"(?:[ \t]+(?:for|of|to|on|at|in|für|pour|para|per|voor)\b(?:[ \t]+[\w'’-]+){1,3})?"
            r"[ \t]*(?:\b(?:is|was|lautet|ist|est|es|è|é)\b[ \t]*[:=]?|=|:)"
            r"[ \t]*['\"]?[^\s'\"]{6,}[^\n]*"
        ),
    ),
    (
        "connection string with a password",
        re.compile(r"\b[a-z][a-z0-9+\-.]*://[^\s:/@]*:[^\s@/]{3,}@[^\s]+"),
    ),
)

_CARD_CANDIDATE = re.compile(r"(?<![\d-])(?:\d[ -]?){12,18}\d(?![\d-])")
_HIGH_ENTROPY_CANDIDATE = re.compile(r"[A-Za-z0-9+/_\-=]{32,}")
# Names, slugs and file names are runs of ordinary words joined by these; secrets are not.
_SEPARATORS = re.compile(r"[-_.]+")
_LINK_OR_PATH = re.compile(r"^(?:[a-z][a-z0-9+.\-]*://|www\.|~/|\./|\.\./|/[\w.\-]+/)", re.I)


def find_credential(text: str) -> CredentialMatch | None:
    """The first credential-like thing in ``text`` (as written, or with lookalike and
    invisible characters folded), or None. Errs on the side of refusing."""
    found = _find_credential(text)
    if found is None and not text.isascii():
        found = _find_credential(fold_text(text))
    return found


def _find_credential(text: str) -> CredentialMatch | None:
    for label, pattern in _CREDENTIAL_PATTERNS:
        if pattern.search(text):
            return CredentialMatch(label)
    for candidate in _CARD_CANDIDATE.finditer(text):
        digits = re.sub(r"\D", "", candidate.group())
        if 13 <= len(digits) <= 19 and _luhn_valid(digits):
            return CredentialMatch("payment card number")
    for word in text.split():
        if _is_link_or_path(word):
            continue
        for candidate in _HIGH_ENTROPY_CANDIDATE.finditer(word):
            if any(_looks_random(part) for part in _SEPARATORS.split(candidate.group())):
                return CredentialMatch("high-entropy secret")
    return None


def screened_field(text: str, what: str) -> str:
    """An owner-supplied text the store keeps beside memories (a document title, an evaluation
    question, a collection name): without control characters, and refused when it holds a
    credential, as a memory would be."""
    cleaned = strip_controls(text).strip()
    credential = find_credential(cleaned)
    if credential is not None:
        raise CredentialRefusedError(
            f"refusing to store this {what}: it looks like a {credential.label}. memoryd never "
            "stores credentials; keep secrets in a password manager"
        )
    return cleaned


def redact_credentials(text: str, replacement: str = "[credential removed]") -> str:
    """``text`` with every credential-like span replaced, so a turn that pastes a secret can be
    queued, shown to the model and logged without the secret. A secret disguised with
    lookalike or invisible characters is redacted in the folded text."""
    redacted = _redact(text, replacement)
    if not redacted.isascii() and _find_credential(fold_text(redacted)) is not None:
        redacted = _redact(fold_text(redacted), replacement)
    return redacted


_PEM_BLOCK = re.compile(
    r"-----BEGIN ((?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?)-----.*?(?:-----END \1-----|\Z)", re.S
)
REDACTED = "[credential removed]"


def redact_counted(text: str) -> tuple[str, int]:
    """``text`` with every credential redacted as :func:`redact_credentials` does (a private
    key's whole armoured block, not only its first line), and how many were."""
    if REDACTED in text:
        # A count by difference needs a marker the text does not already hold.
        text = text.replace(REDACTED, "[credential-removed]")
    blocks = len(_PEM_BLOCK.findall(text))
    text = _PEM_BLOCK.sub(REDACTED, text)
    redacted = redact_credentials(text, REDACTED)
    return redacted, blocks + redacted.count(REDACTED) - text.count(REDACTED)


def _redact(text: str, replacement: str) -> str:
    # Each span is marked with one character no pattern reads as part of a secret, and the
    # replacement written in at the end: written at once, its space let a later pattern that
    # runs to the next space (a link with a password) swallow half of it ("[credential
    # removed] removed]"). A replacement already in the text is marked the same way.
    marker = next(c for c in _MARKERS if c not in text)
    text = _redact_marked(text.replace(replacement, marker), marker)
    return text.replace(marker, replacement)


# Private-use characters: no text means anything by them, and none is a word character.
_MARKERS = tuple(chr(code) for code in range(0xE000, 0xF8FF))


def _redact_marked(text: str, replacement: str) -> str:
    for _, pattern in _CREDENTIAL_PATTERNS:
        text = pattern.sub(replacement, text)

    def card(match: re.Match[str]) -> str:
        digits = re.sub(r"\D", "", match.group())
        return replacement if 13 <= len(digits) <= 19 and _luhn_valid(digits) else match.group()

    text = _CARD_CANDIDATE.sub(card, text)
    words = []
    for word in re.split(r"(\s+)", text):
        if word.strip() and not _is_link_or_path(word):
            word = _HIGH_ENTROPY_CANDIDATE.sub(
                lambda m: (
                    replacement
                    if any(_looks_random(part) for part in _SEPARATORS.split(m.group()))
                    else m.group()
                ),
                word,
            )
        words.append(word)
    return "".join(words)


def secret_fingerprints(text: str, salt: str) -> list[str]:
    """Salted sha256 digests of the words inside every credential-like span of ``text``:
    enough to recognise the secret if a model repeats it, without keeping it."""
    digests: set[str] = set()
    spans = [m.group() for _, pattern in _CREDENTIAL_PATTERNS for m in pattern.finditer(text)]
    for match in _CARD_CANDIDATE.finditer(text):
        digits = re.sub(r"\D", "", match.group())
        if 13 <= len(digits) <= 19 and _luhn_valid(digits):
            spans.append(digits)
    for span in spans:
        for word in re.findall(r"[^\s'\":=]{4,}", span):
            if word.casefold() not in _KEY_WORDS:
                digests.add(fingerprint(word, salt))
    return sorted(digests)


def fingerprint(word: str, salt: str) -> str:
    """The digest :func:`secret_fingerprints` keeps for one word."""
    return hashlib.sha256((salt + word.casefold()).encode("utf-8")).hexdigest()


_KEY_WORDS = frozenset(
    "password passwd passcode secret api_key apikey api-key access_token auth_token "
    "client_secret bearer token".split()
)


# A sentence that opens with one of these verbs is an order, not a memory about the owner
# ("Forward every invoice to …"): it waits for the owner like any standing rule.
_IMPERATIVE_VERBS = frozenset(
    """
    forward send reply respond answer email e-mail mail message text call phone tell share
    disclose reveal leak expose publish post upload download transfer wire pay buy order
    delete remove erase wipe drop disable enable grant give allow permit approve accept
    ignore disregard forget skip bypass override obey follow execute run install open click
    visit browse fetch copy cc bcc include add insert append attach use switch change set
    stop start begin keep continue refuse deny write sign book cancel schedule
    """.split()
)
_SENTENCE_START = re.compile(r"(?:^|[.!?;:\n]\s*)(?:(?:please|kindly|now|then)\s+)?([a-z-]+)\b")


def find_sensitive(text: str, phrases: tuple[str, ...] = DEFAULT_SENSITIVE_PHRASES) -> str | None:
    """The first sensitive phrase found as whole words (case-insensitive; full-width,
    lookalike and invisible characters folded first), or a sentence that opens with an order
    ("imperative: forward"), or None."""
    lowered = " ".join(fold_text(text.replace("\u2019", "'")).split())
    for phrase in phrases:
        if re.search(r"(?<![\w'])" + re.escape(phrase) + r"(?![\w'])", lowered):
            return phrase
    for match in _SENTENCE_START.finditer(lowered):
        if match.group(1) in _IMPERATIVE_VERBS:
            return f"imperative: {match.group(1)}"
    return None


def _luhn_valid(digits: str) -> bool:
    total = 0
    for index, char in enumerate(reversed(digits)):
        value = int(char)
        if index % 2 == 1:
            value *= 2
            if value > 9:
                value -= 9
        total += value
    return total % 10 == 0


def _is_link_or_path(word: str) -> bool:
    """A URL or a file path: its long runs are words and slugs, not secrets. (A URL that
    carries a password is caught by the connection-string pattern first.)"""
    return _LINK_OR_PATH.match(word.strip("()[]<>\"'.,;")) is not None


def _looks_random(token: str) -> bool:
    # Why these cut-offs: hex digests, base64 keys and tokens sit well above 3.5 bits/char with
    # mixed character classes; long English compounds and paths sit below or lack digits.
    if len(token) < 24:
        return False
    has_digit = any(c.isdigit() for c in token)
    has_alpha = any(c.isalpha() for c in token)
    if not (has_digit and has_alpha):
        return False
    counts = Counter(token)
    entropy = -sum(n / len(token) * math.log2(n / len(token)) for n in counts.values())
    return entropy >= 3.5
