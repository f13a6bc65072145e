"""Closed observation domains and their typed values (SPEC G: "closed domains").

A domain is fixed when the scenario loads; every value — an operand in the scenario or an
observation in evidence — is converted into the domain's Python representation once, by
:func:`coerce`, or refused:

============  ==============================  =============================================
kind          JSON accepted                   Python value
============  ==============================  =============================================
integer       a JSON integer (no fraction)    ``int`` (a ``bool`` is never a number)
decimal       a JSON number                   ``Decimal`` (``1``, ``1.0``, ``1e0`` equal)
boolean       ``true`` / ``false``            ``bool``
string        a string of at most ``max``     ``str`` (no lone surrogates)
date          ``YYYY-MM-DD``                  ``datetime.date``
instant       RFC 3339 with a mandatory       ``int`` nanoseconds since the epoch (UTC),
              offset (``Z`` or ``±HH:MM``)    so ``Z`` equals ``+00:00``
set           an array of the element kind    ``frozenset`` (duplicates collapse by value)
record        an object with exactly the      ``dict`` (an optional field may be absent:
              declared fields                 absent is not null)
============  ==============================  =============================================

Any domain may be declared ``nullable``; then JSON ``null`` is a present value (``None``),
distinct from a missing field and from a missing observation. Equality of decimals holds at
every depth (inside records and sets) because the conversion happens at every depth.

JSON reaches this module already decoded with
:func:`factory.documents.reading.read_json` (``decimals=True``), so numbers with a
fraction or exponent are ``Decimal`` and integers are ``int``.
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Context, Decimal
from typing import Any

from factory.gate.errors import SCENARIO_INVALID

MAX_DIGITS = 100  # significant digits of an integer or decimal
MAX_EXPONENT = 1000  # |exponent| of a decimal
MAX_SET_ITEMS = 10_000
DEFAULT_STRING_MAX = 4096
STRING_MAX_LIMIT = 1 << 20
MAX_RECORD_FIELDS = 256

SCALAR_KINDS = ("integer", "decimal", "boolean", "string", "date", "instant")
KINDS = (*SCALAR_KINDS, "set", "record")
ORDERED_KINDS = frozenset({"integer", "decimal", "string", "date", "instant"})

_DATE = re.compile(r"^([0-9]{4})-([0-9]{2})-([0-9]{2})$")
_INSTANT = re.compile(
    r"^([0-9]{4})-([0-9]{2})-([0-9]{2})[Tt]([0-9]{2}):([0-9]{2}):([0-9]{2})"
    r"(?:\.([0-9]{1,9}))?(?:([Zz])|([+-])([0-9]{2}):([0-9]{2}))$"
)
_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)
_NS = 1_000_000_000
# An instant's UTC moment must fall in years 1–9999 (what ``datetime`` and RFC 3339 can
# render): 0001-01-01T00:00:00+05:00 is in year 0 and is refused like any other bad text.
INSTANT_MIN_NS = -62_135_596_800 * _NS  # 0001-01-01T00:00:00Z
INSTANT_MAX_NS = 253_402_300_800 * _NS - 1  # 9999-12-31T23:59:59.999999999Z
_MAX_BITS = 300  # below 10**90: surely within MAX_DIGITS, no decimal rendering needed
_EXACT = Context(prec=MAX_DIGITS + 2)  # normalisation must never round a bounded decimal


class OutsideDomain(ValueError):
    """A JSON value is not a member of the domain; ``str(self)`` says why (no value)."""


class Missing:
    """The marker of an absent record field (distinct from ``None``, which is null)."""

    _instance: Missing | None = None

    def __new__(cls) -> Missing:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "MISSING"


MISSING = Missing()


@dataclass(frozen=True, slots=True)
class Domain:
    """One closed domain. ``of`` is the element domain of a set; ``fields`` and
    ``optional`` describe a record; ``max_length`` bounds a string."""

    kind: str
    nullable: bool = False
    max_length: int = DEFAULT_STRING_MAX
    of: Domain | None = None
    fields: tuple[tuple[str, Domain], ...] = ()
    optional: frozenset[str] = frozenset()

    @property
    def ordered(self) -> bool:
        return self.kind in ORDERED_KINDS

    def describe(self) -> dict[str, Any]:
        """The normalised JSON form (part of the scenario's spec hash)."""
        out: dict[str, Any] = {"kind": self.kind}
        if self.nullable:
            out["nullable"] = True
        if self.kind == "string":
            out["max"] = self.max_length
        if self.of is not None:
            out["of"] = self.of.describe()
        if self.kind == "record":
            out["fields"] = {name: dom.describe() for name, dom in self.fields}
            if self.optional:
                out["optional"] = sorted(self.optional)
        return out


def parse_domain(raw: Any, where: str, depth: int = 0) -> Domain:
    """Build a :class:`Domain` from its scenario form; :data:`SCENARIO_INVALID` names ``where``."""
    if depth > 8:
        raise SCENARIO_INVALID(f"{where}: domains nest at most 8 deep")
    if not isinstance(raw, Mapping):
        raise SCENARIO_INVALID(f'{where}: a domain is a table such as {{ kind = "integer" }}')
    allowed = {"kind", "nullable", "max", "of", "fields", "optional"}
    extra = sorted(set(raw) - allowed)
    if extra:
        raise SCENARIO_INVALID(f"{where}: unknown domain key {extra[0]!r}")
    kind = raw.get("kind")
    if kind not in KINDS:
        raise SCENARIO_INVALID(f"{where}: kind must be one of {', '.join(KINDS)}")
    nullable = raw.get("nullable", False)
    if not isinstance(nullable, bool):
        raise SCENARIO_INVALID(f"{where}: nullable must be true or false")
    _only(raw, kind, where)
    if kind == "string":
        limit = raw.get("max", DEFAULT_STRING_MAX)
        if type(limit) is not int or not 1 <= limit <= STRING_MAX_LIMIT:
            raise SCENARIO_INVALID(f"{where}: max must be an integer from 1 to {STRING_MAX_LIMIT}")
        return Domain("string", nullable, max_length=limit)
    if kind == "set":
        elem = parse_domain(raw.get("of"), f"{where}.of", depth + 1)
        if elem.kind not in SCALAR_KINDS or elem.nullable:
            raise SCENARIO_INVALID(f"{where}.of: a set holds a non-nullable scalar kind")
        return Domain("set", nullable, of=elem)
    if kind == "record":
        return _parse_record(raw, nullable, where, depth)
    return Domain(kind, nullable)


def _only(raw: Mapping[str, Any], kind: str, where: str) -> None:
    own = {"string": {"max"}, "set": {"of"}, "record": {"fields", "optional"}}.get(kind, set())
    stray = sorted(k for k in ("max", "of", "fields", "optional") if k in raw and k not in own)
    if stray:
        raise SCENARIO_INVALID(f"{where}: {stray[0]!r} does not apply to kind {kind!r}")


def _parse_record(raw: Mapping[str, Any], nullable: bool, where: str, depth: int) -> Domain:
    fields = raw.get("fields")
    if not isinstance(fields, Mapping) or not fields:
        raise SCENARIO_INVALID(f"{where}.fields: a record declares at least one field")
    if len(fields) > MAX_RECORD_FIELDS:
        raise SCENARIO_INVALID(f"{where}.fields: at most {MAX_RECORD_FIELDS} fields")
    parsed = tuple(
        (str(name), parse_domain(dom, f"{where}.fields.{name}", depth + 1))
        for name, dom in sorted(fields.items())
    )
    optional = raw.get("optional", [])
    if not isinstance(optional, list) or not all(isinstance(o, str) for o in optional):
        raise SCENARIO_INVALID(f"{where}.optional: a list of field names")
    unknown = sorted(set(optional) - {name for name, _ in parsed})
    if unknown:
        raise SCENARIO_INVALID(f"{where}.optional: {unknown[0]!r} is not a field")
    return Domain("record", nullable, fields=parsed, optional=frozenset(optional))


def coerce(domain: Domain, value: Any) -> Any:
    """The typed member of ``domain`` for a decoded JSON ``value``; :class:`OutsideDomain`."""
    if value is None:
        if domain.nullable:
            return None
        raise OutsideDomain(f"null is not a {domain.kind} (the domain is not nullable)")
    kind = domain.kind
    if kind == "integer":
        return _integer(value)
    if kind == "decimal":
        return _decimal(value)
    if kind == "boolean":
        if type(value) is not bool:
            raise OutsideDomain(f"expected true or false, got {_json_kind(value)}")
        return value
    if kind == "string":
        return _string(value, domain.max_length)
    if kind == "date":
        return parse_date(value)
    if kind == "instant":
        return parse_instant(value)
    if kind == "set":
        return _set(domain, value)
    return _record(domain, value)


def _json_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | Decimal | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, Mapping):
        return "an object"
    return "null" if value is None else "an unsupported value"


def _integer(value: Any) -> int:
    if type(value) is not int:
        raise OutsideDomain(f"expected an integer, got {_json_kind(value)}")
    if value.bit_length() > _MAX_BITS and len(str(abs(value))) > MAX_DIGITS:
        raise OutsideDomain(f"integer has more than {MAX_DIGITS} digits")
    return value


def _decimal(value: Any) -> Decimal:
    if type(value) is int:
        value = Decimal(_integer(value))
    elif not isinstance(value, Decimal):
        raise OutsideDomain(f"expected a number, got {_json_kind(value)}")
    if not value.is_finite():
        raise OutsideDomain("a decimal must be finite")
    _sign, digits, exponent = value.as_tuple()
    assert isinstance(exponent, int)
    if len(digits) > MAX_DIGITS or abs(exponent) > MAX_EXPONENT:
        raise OutsideDomain("decimal is too large or too precise")
    return value if value else Decimal(0)  # -0 is 0


def _string(value: Any, limit: int) -> str:
    if not isinstance(value, str):
        raise OutsideDomain(f"expected a string, got {_json_kind(value)}")
    if len(value) > limit:
        raise OutsideDomain(f"string longer than {limit} characters")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise OutsideDomain("string holds a lone surrogate") from exc
    return value


def parse_date(value: Any) -> _dt.date:
    """A calendar date ``YYYY-MM-DD`` (zero-padded; an instant is not a date). A TOML
    local date (``datetime.date``) is one too; a TOML date-time is not."""
    if isinstance(value, _dt.date) and not isinstance(value, _dt.datetime):
        return value
    match = _DATE.fullmatch(value) if isinstance(value, str) else None
    if match is None:
        raise OutsideDomain("expected a date YYYY-MM-DD")
    try:
        return _dt.date(*(int(g) for g in match.groups()))
    except ValueError as exc:
        raise OutsideDomain("not a calendar date") from exc


def parse_instant(value: Any) -> int:
    """An RFC 3339 instant with a mandatory offset, as nanoseconds since the epoch. A TOML
    offset date-time (aware ``datetime``) is one too; a local (naive) one is refused."""
    if isinstance(value, _dt.datetime):
        if value.utcoffset() is None:
            raise OutsideDomain("an instant needs an offset (Z or ±HH:MM); this one is local")
        delta = value - _EPOCH
        nanos = (delta.days * 86_400 + delta.seconds) * _NS + delta.microseconds * 1000
        return _in_range(nanos)
    match = _INSTANT.fullmatch(value) if isinstance(value, str) else None
    if match is None:
        raise OutsideDomain("expected an instant YYYY-MM-DDTHH:MM:SS[.f]Z or ±HH:MM offset")
    year, month, day, hour, minute, second, frac, zulu, sign, oh, om = match.groups()
    try:
        offset = _dt.timedelta(0)
        if not zulu:
            if int(oh) > 23 or int(om) > 59:
                raise ValueError("offset")
            offset = _dt.timedelta(hours=int(oh), minutes=int(om))
            if sign == "-":
                offset = -offset
        moment = _dt.datetime(
            int(year), int(month), int(day), int(hour), int(minute), int(second),
            tzinfo=_dt.timezone(offset),
        )  # fmt: skip
    except ValueError as exc:
        raise OutsideDomain("not a valid instant (date, time or offset out of range)") from exc
    delta = moment - _EPOCH
    nanos = int((frac or "0").ljust(9, "0"))
    return _in_range((delta.days * 86_400 + delta.seconds) * _NS + nanos)


def _in_range(nanos: int) -> int:
    """``nanos`` itself, or :class:`OutsideDomain` when its UTC moment is outside years
    1–9999 (the text may look valid: ``9999-12-31T23:59:59-05:00`` is in year 10000)."""
    if not INSTANT_MIN_NS <= nanos <= INSTANT_MAX_NS:
        raise OutsideDomain("the instant's UTC moment falls outside years 0001–9999")
    return nanos


def format_instant(nanos: int) -> str:
    """Render nanoseconds since the epoch as ``YYYY-MM-DDTHH:MM:SS[.fffffffff]Z``."""
    seconds, frac = divmod(nanos, _NS)
    moment = _EPOCH + _dt.timedelta(seconds=seconds)
    text = f"{moment.year:04d}-" + moment.strftime("%m-%dT%H:%M:%S")  # %Y drops zeros
    if frac:
        text += "." + f"{frac:09d}".rstrip("0")
    return text + "Z"


def _set(domain: Domain, value: Any) -> frozenset[Any]:
    if not isinstance(value, list):
        raise OutsideDomain(f"expected an array (a set), got {_json_kind(value)}")
    if len(value) > MAX_SET_ITEMS:
        raise OutsideDomain(f"a set holds at most {MAX_SET_ITEMS} items")
    assert domain.of is not None
    return frozenset(coerce(domain.of, item) for item in value)


def _record(domain: Domain, value: Any) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise OutsideDomain(f"expected an object (a record), got {_json_kind(value)}")
    names = {name for name, _ in domain.fields}
    stray = sorted(set(value) - names)
    if stray:
        raise OutsideDomain(f"record has an undeclared field {stray[0]!r}")
    out: dict[str, Any] = {}
    for name, field_domain in domain.fields:
        if name not in value:
            if name not in domain.optional:
                raise OutsideDomain(f"record lacks the required field {name!r}")
            out[name] = MISSING
            continue
        try:
            out[name] = coerce(field_domain, value[name])
        except OutsideDomain as exc:
            raise OutsideDomain(f"field {name!r}: {exc}") from None
    return out


def encode(domain: Domain, value: Any) -> Any:
    """The normalised JSON form of a typed value (safe for RFC 8785 hashing).

    Integers and decimals become strings (RFC 8785 numbers are doubles; a decimal or an
    integer above 2^53 would not survive); instants become UTC ``Z`` strings; sets become
    sorted arrays; a missing record field is left out.
    """
    if value is None:
        return None
    kind = domain.kind
    if kind == "integer":
        return str(value)
    if kind == "decimal":
        return format_decimal(value)
    if kind == "date":
        return value.isoformat()
    if kind == "instant":
        return format_instant(value)
    if kind == "set":
        assert domain.of is not None
        elem = domain.of
        return sorted((encode(elem, v) for v in value), key=_sort_key)
    if kind == "record":
        return {
            name: encode(dom, value[name])
            for name, dom in domain.fields
            if value[name] is not MISSING
        }
    return value


def _sort_key(item: Any) -> tuple[str, str]:
    return (type(item).__name__, str(item))


def format_decimal(value: Decimal) -> str:
    """A decimal without exponent or trailing zeros (``1.0`` → ``1``, ``-0`` → ``0``)."""
    if not value:
        return "0"
    return format(_EXACT.normalize(value), "f")
