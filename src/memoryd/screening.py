"""Content screens: credentials (never stored) and sensitive words (never activate alone)."""

from __future__ import annotations

import hashlib
import math
import re
from collections import Counter
from dataclasses import dataclass

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
)


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
        re.compile(
            r"(?i)\b(?:password|passwd|pwd|passcode|secret|api[_\- ]?key|access[_\- ]?token|"
            r"auth[_\- ]?token|client[_\- ]?secret)\b\s*(?:is|=|:)\s*['\"]?[^\s'\"]{6,}"
        ),
    ),
    (
        "connection string with a password",
        re.compile(r"\b[a-z][a-z0-9+\-.]*://[^\s:/@]+:[^\s@/]{3,}@[^\s]+"),
    ),
)

_CARD_CANDIDATE = re.compile(r"(?<![\d-])(?:\d[ -]?){12,18}\d(?![\d-])")
_HIGH_ENTROPY_CANDIDATE = re.compile(r"[A-Za-z0-9+/_\-=]{32,}")
# Names, slugs and file names are runs of ordinary words joined by these; secrets are not.
_SEPARATORS = re.compile(r"[-_.]+")
_LINK_OR_PATH = re.compile(r"^(?:[a-z][a-z0-9+.\-]*://|www\.|~/|\./|\.\./|/[\w.\-]+/)", re.I)


def find_credential(text: str) -> CredentialMatch | None:
    """The first credential-like thing in ``text``, or None. Errs on the side of refusing."""
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


def redact_credentials(text: str, replacement: str = "[credential removed]") -> str:
    """``text`` with every credential-like span replaced, so a turn that pastes a secret can be
    queued, shown to the model and logged without the secret."""
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


def find_sensitive(text: str, phrases: tuple[str, ...] = DEFAULT_SENSITIVE_PHRASES) -> str | None:
    """The first sensitive phrase found as whole words (case-insensitive), or None."""
    lowered = " ".join(text.casefold().replace("\u2019", "'").split())
    for phrase in phrases:
        if re.search(r"(?<![\w'])" + re.escape(phrase) + r"(?![\w'])", lowered):
            return phrase
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
