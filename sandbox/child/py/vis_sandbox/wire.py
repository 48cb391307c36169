"""JSON for the link and the snapshot header, without the json package.

The json package imports re (and re, enum) and compiles its patterns at
import: milliseconds a new session's first block would wait for. Its C
accelerator, _json, which json itself runs on, does the work here with
json's defaults (ints and floats as json reads them, NaN and Infinity
allowed, dict keys as they are). Where _json is missing, json is used.
"""

try:
    from _json import encode_basestring, encode_basestring_ascii, make_encoder, make_scanner
except ImportError:  # pragma: no cover (every CPython 3.10+ builds _json)
    make_encoder = None


def _default(o):
    raise TypeError(f"Object of type {type(o).__name__} is not JSON serializable")


def _constant(name):
    return {"-Infinity": float("-inf"), "Infinity": float("inf"), "NaN": float("nan")}[name]


class _Context:
    """What the C scanner reads of a json.JSONDecoder."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = staticmethod(_constant)
    memo = None


if make_encoder is not None:
    _compact = make_encoder(None, _default, encode_basestring, None, ":", ",", False, False, True)
    _ascii = make_encoder(None, _default, encode_basestring_ascii, None, ":", ",", False, False, True)
    _scan = make_scanner(_Context())

    def dumps(obj, ascii=False):
        """obj as compact JSON (separators "," and ":"); ascii escapes
        every non-ASCII character, as json.dumps does by default."""
        return "".join((_ascii if ascii else _compact)(obj, 0))

    def loads(s):
        """The value of the JSON text s (str, or UTF-8 bytes)."""
        if not isinstance(s, str):
            s = s.decode("utf-8")
        end = len(s)
        i = 0
        while i < end and s[i] in " \t\n\r":
            i += 1
        try:
            value, i = _scan(s, i)
        except StopIteration:
            value, i = None, -1
        while 0 <= i < end and s[i] in " \t\n\r":
            i += 1
        if i != end:
            import json
            return json.loads(s)  # raises json's own error for the same text
        return value
else:  # pragma: no cover
    import json

    def dumps(obj, ascii=False):
        return json.dumps(obj, ensure_ascii=ascii, separators=(",", ":"))

    def loads(s):
        return json.loads(s)
