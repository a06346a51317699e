"""Codes that a request names by their full name: a tool takes "EUR" where the user wrote "euros".

The grounding check counts such a code as mentioned when the conversation has one of its names.
The lists are short on purpose: US states (USPS codes), the most traded currencies (ISO 4217), a
few countries (ISO 3166 alpha-2) and units of measure. Each name is matched as a whole word, in
the singular or the plural. A code shared by two things (CA: California, Canada) takes the names
of both.
"""

from __future__ import annotations

__all__ = ["KNOWN"]

_STATES = {
    "al": "alabama", "ak": "alaska", "az": "arizona", "ar": "arkansas", "ca": "california",
    "co": "colorado", "ct": "connecticut", "de": "delaware", "dc": "district of columbia",
    "fl": "florida", "ga": "georgia", "hi": "hawaii", "id": "idaho", "il": "illinois",
    "in": "indiana", "ia": "iowa", "ks": "kansas", "ky": "kentucky", "la": "louisiana",
    "me": "maine", "md": "maryland", "ma": "massachusetts", "mi": "michigan", "mn": "minnesota",
    "ms": "mississippi", "mo": "missouri", "mt": "montana", "ne": "nebraska", "nv": "nevada",
    "nh": "new hampshire", "nj": "new jersey", "nm": "new mexico", "ny": "new york",
    "nc": "north carolina", "nd": "north dakota", "oh": "ohio", "ok": "oklahoma", "or": "oregon",
    "pa": "pennsylvania", "ri": "rhode island", "sc": "south carolina", "sd": "south dakota",
    "tn": "tennessee", "tx": "texas", "ut": "utah", "vt": "vermont", "va": "virginia",
    "wa": "washington", "wv": "west virginia", "wi": "wisconsin", "wy": "wyoming",
}  # fmt: skip

_CURRENCIES = {
    "usd": ("us dollar", "dollar"), "eur": ("euro",), "gbp": ("british pound", "pound sterling", "pound"),
    "jpy": ("yen",), "cny": ("yuan", "renminbi", "rmb"), "cad": ("canadian dollar",),
    "aud": ("australian dollar",), "nzd": ("new zealand dollar",), "chf": ("swiss franc",),
    "inr": ("rupee",), "krw": ("korean won",), "mxn": ("mexican peso",), "brl": ("brazilian real", "reais"),
    "rub": ("ruble", "rouble"), "sek": ("swedish krona", "swedish kronor"),
    "nok": ("norwegian krone", "norwegian kroner"), "dkk": ("danish krone", "danish kroner"),
    "hkd": ("hong kong dollar",), "sgd": ("singapore dollar",), "zar": ("south african rand",),
    "try": ("turkish lira",), "pln": ("zloty",),
}  # fmt: skip

_COUNTRIES = {
    "us": ("united states", "usa", "america"), "gb": ("united kingdom", "uk", "britain", "england"),
    "uk": ("united kingdom", "britain", "england"), "ca": ("canada",), "de": ("germany",),
    "fr": ("france",), "jp": ("japan",), "cn": ("china",), "in": ("india",), "it": ("italy",),
    "es": ("spain",), "au": ("australia",), "mx": ("mexico",), "br": ("brazil",),
}  # fmt: skip

_UNITS = {
    "cm": ("centimeter", "centimetre"), "mm": ("millimeter", "millimetre"),
    "km": ("kilometer", "kilometre"), "mi": ("mile",), "ft": ("feet", "foot"), "kg": ("kilogram",),
    "lb": ("pound",), "lbs": ("pound",), "oz": ("ounce",), "ml": ("milliliter", "millilitre"),
    "mph": ("miles per hour",), "kmh": ("kilometers per hour",), "km/h": ("kilometers per hour",),
}  # fmt: skip


def _merge(*tables: dict[str, str] | dict[str, tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
    out: dict[str, tuple[str, ...]] = {}
    for table in tables:
        for code, names in table.items():
            out[code] = out.get(code, ()) + ((names,) if isinstance(names, str) else names)
    return out


KNOWN: dict[str, tuple[str, ...]] = _merge(_STATES, _CURRENCIES, _COUNTRIES, _UNITS)
"""A code, lower-case, and the names that ground it."""
