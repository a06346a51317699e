"""The proxy's JSON: the owner's reader and writer (:mod:`toolmend._jsontext`), bytes in and out.

The proxy reads and writes JSON for every request and every stream event, so it takes orjson's
speed (the owner's fast path) on its hot path; what orjson refuses or would read lossily, the
owner hands to the standard library, and a lone surrogate in a reply is written escaped.

>>> loads(b'{"a": [1, "x"]}'), loads(b'{"a": NaN}')
({'a': [1, 'x']}, {'a': nan})
>>> dumps({"city": "Zürich", "cut": "\\ud83d"})
b'{"city":"Z\\xc3\\xbcrich","cut":"\\\\ud83d"}'
"""

from __future__ import annotations

from toolmend._jsontext import dumpb as dumps
from toolmend._jsontext import loads

__all__ = ["dumps", "loads"]
