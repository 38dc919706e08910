"""A bank statement as a European bank exports it (``;``-separated, decimal commas, day-first
dates, CRLF): about 200 rows of one year, the monthly bills on fixed days and the rest drawn
from a seeded source, so every run writes the same file."""

from __future__ import annotations

import random

HEADER = "Date;Payee;Amount (EUR);Category"
ELECTRICITY = "Vattenfall Europe Sales GmbH"
GROCER = "REWE Markt Berlin"
_MONTHLY = (
    (ELECTRICITY, "Electricity", (61.0, 98.0), 3),
    ("Hausverwaltung Krause", "Rent", (950.0, 950.0), 1),
    ("Telekom Deutschland", "Phone", (39.0, 39.0), 12),
    ("Arbeitgeber GmbH Gehalt", "Salary", (-3400.0, -3400.0), 28),
)
_OTHERS = (
    (GROCER, "Groceries", (18.0, 95.0)),
    ("Lidl Filiale 4411", "Groceries", (9.0, 60.0)),
    ("Aral Tankstelle", "Fuel", (40.0, 85.0)),
    ("Deutsche Bahn", "Travel", (19.0, 140.0)),
    ("Restaurant Da Mario", "Eating out", (25.0, 80.0)),
    ("Amazon EU", "Shopping", (12.0, 150.0)),
    ("Apotheke am Markt", "Health", (5.0, 40.0)),
    ("Kino Babylon", "Leisure", (11.0, 30.0)),
)


def euros(amount: float) -> str:
    """A payment as the bank writes it: negative, two decimals after a comma."""
    return f"{-amount:.2f}".replace(".", ",")


def bank_statement(rows: int = 200, seed: int = 7) -> str:
    """The statement's text: the header and ``rows`` rows in date order."""
    rng = random.Random(seed)
    drawn: list[tuple[int, int, str, str, float]] = []
    for month in range(1, 13):
        for payee, category, (low, high), day in _MONTHLY:
            drawn.append((month, day, payee, category, round(rng.uniform(low, high), 2)))
    while len(drawn) < rows:
        payee, category, (low, high) = rng.choice(_OTHERS)
        amount = round(rng.uniform(low, high), 2)
        drawn.append((rng.randint(1, 12), rng.randint(1, 28), payee, category, amount))
    lines = [HEADER]
    for month, day, payee, category, amount in sorted(drawn):
        lines.append(f"{day:02d}.{month:02d}.2026;{payee};{euros(amount)};{category}")
    return "\r\n".join(lines) + "\r\n"


def payment(text: str, payee: str, month: int) -> str:
    """The statement's row (as ``date;payee;amount;category``) paying ``payee`` in ``month``."""
    return next(
        line for line in text.splitlines() if payee in line and f".{month:02d}.2026;" in line
    )
