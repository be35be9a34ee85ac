"""Legado's rule language, read with parsel (CSS and XPath over lxml) and jsonpath-ng.

A rule reads a value (or a list) out of a page, as Legado's ``AnalyzeRule`` does:

- **JSoup default rules**: segments joined by ``@``, each ``class.NAME``, ``id.NAME``,
  ``tag.NAME``, ``text.TEXT`` (elements whose own text holds TEXT), ``children``, or any
  CSS selector ("bare CSS", ``.bookbox a``); each may end in an index: ``.N`` (one or
  more, ``.0:2``), ``!N`` (exclude), ``[N, A:B:S, !N]`` (lists and inclusive ranges,
  negative from the end). The last segment of a string rule names what is read:
  ``text``, ``textNodes``, ``ownText``, ``html``, ``all`` or an attribute (``href``).
- ``@css:SELECTOR@get``, XPath (``//…`` or ``@XPath:``), JSONPath (``$.…``, ``$[…]`` or
  ``@Json:``; on a JSON answer a bare ``a.b`` is ``$.a.b``).
- ``A&&B`` (both), ``A||B`` (the first that gives something), ``A%%B`` (interleaved).
- ``RULE##REGEX##REPLACEMENT`` (every match replaced; ``###`` at the end: the first
  only; ``$1`` groups), regexes run by the ``regex`` module with a time limit.
- ``@put:{k:"rule"}`` stores a value for ``@get:{k}``; ``{{RULE}}`` inside a string is
  replaced by what the rule reads.

JavaScript (``<js>``, ``@js:``, ``java.…`` calls, ``{{code}}``) is never run:
``needs_js`` names it and ``RuleError`` is raised when asked to evaluate it.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Union

import regex

from tracker.common.records import JSONValue

if TYPE_CHECKING:
    from parsel import Selector

__all__ = [
    "Content",
    "RuleContext",
    "RuleError",
    "get_elements",
    "get_string",
    "get_strings",
    "html_to_text",
    "needs_js",
    "parse_content",
]

REGEX_SECONDS = 0.5  # each regex of a source gets this long on one string
MAX_ITEMS = 5000  # elements a rule may yield (a page of 100,000 links costs a bounded walk)
Node = Union["Selector", JSONValue]


class RuleError(ValueError):
    """A rule that cannot be read: the message names the rule and why."""


_JS = re.compile(r"<js>|@js:|\bjava\.|\bsource\.(?:get|put)|\bcookie\.|\bbaseUrl\b", re.I)
_RULE_START = ("@css:", "@json:", "@xpath:", "@@", "$.", "$[", "/", "@get:", "@put:")


def _is_rule_inside(inner: str) -> bool:
    inner = inner.strip()
    return inner.lower().startswith(_RULE_START) or inner in ("key", "page")


def needs_js(rule: str | None) -> bool:
    """Whether ``rule`` (a rule or a URL template) needs JavaScript to be read."""
    if not rule:
        return False
    if _JS.search(rule):
        return True
    return any(not _is_rule_inside(m) for m in re.findall(r"\{\{(.*?)\}\}", rule, re.S))


@dataclass
class RuleContext:
    """What evaluating a source's rules shares: ``@put`` values, the page's URL."""

    base_url: str = ""
    vars: dict[str, str] = field(default_factory=dict)


@dataclass
class Content:
    """A page read once: HTML (a parsel ``Selector``) or a JSON value."""

    root: Node
    is_json: bool


def parse_content(text: str) -> Content:
    """The page ``text`` as JSON when it is JSON, else as HTML."""
    from parsel import Selector

    stripped = text.lstrip("\ufeff \t\r\n")
    if stripped[:1] in ("{", "["):
        try:
            return Content(json.loads(stripped), True)
        except (ValueError, RecursionError):
            pass
    return Content(Selector(text=text or "<html></html>"), False)


# --- regexes with a time limit ------------------------------------------------------------------
@functools.lru_cache(maxsize=2048)
def _compile(pattern: str) -> regex.Pattern[str]:
    try:
        return regex.compile(pattern)
    except regex.error as exc:
        raise RuleError(f"bad regular expression {pattern!r}: {exc}") from None


def _java_replacement(rep: str) -> Callable[[regex.Match[str]], str]:
    def expand(m: regex.Match[str]) -> str:
        def group(g: re.Match[str]) -> str:
            n = int(g.group(1))
            return (m.group(n) or "") if n <= (m.re.groups or 0) else g.group(0)

        return re.sub(r"\$(\d)", group, rep.replace("\\n", "\n"))

    return expand


def replace_regex(text: str, pattern: str, replacement: str, first_only: bool = False) -> str:
    """``text`` with ``pattern`` replaced (Legado's ``##`` part), within ``REGEX_SECONDS``."""
    compiled = _compile(pattern)
    try:
        count = 1 if first_only else 0
        return compiled.sub(
            _java_replacement(replacement), text, count=count, timeout=REGEX_SECONDS
        )
    except TimeoutError:
        raise RuleError(
            f"regular expression {pattern!r} took longer than {REGEX_SECONDS:g} s"
        ) from None


# --- splitting a rule -----------------------------------------------------------------------------
def _split_top(rule: str, seps: tuple[str, ...]) -> tuple[str, list[str]]:
    """Split ``rule`` at the first kind of separator of ``seps`` found outside brackets
    and quotes: (separator, parts), ("", [rule]) when there is none."""
    depth, quote, i = 0, "", 0
    found = ""
    cuts: list[int] = []
    while i < len(rule):
        c = rule[i]
        if quote:
            if c == quote:
                quote = ""
        elif c in "\"'":
            quote = c
        elif c in "[({":
            depth += 1
        elif c in "])}":
            depth = max(0, depth - 1)
        elif depth == 0:
            for sep in seps:
                if rule.startswith(sep, i) and (not found or sep == found):
                    found = sep
                    cuts.append(i)
                    i += len(sep) - 1
                    break
        i += 1
    if not found:
        return "", [rule]
    parts: list[str] = []
    start = 0
    for cut in cuts:
        parts.append(rule[start:cut])
        start = cut + len(found)
    parts.append(rule[start:])
    return found, parts


_PUT = re.compile(r"@put:\{([^{}]*)\}", re.S)
_GET = re.compile(r"@get:\{([^}]*)\}")


def _puts(raw: str) -> dict[str, str]:
    body = raw.strip()
    try:
        data = json.loads("{" + body + "}")
    except ValueError:
        quoted = re.sub(r"(^|,)\s*([A-Za-z_][\w]*)\s*:", r'\1"\2":', body.replace("\n", ""))
        try:
            data = json.loads("{" + quoted + "}")
        except ValueError:
            raise RuleError(f"@put:{{{raw}}} is not a list of key: rule") from None
    if not isinstance(data, dict):
        raise RuleError(f"@put:{{{raw}}} is not a list of key: rule")
    return {str(k): str(v) for k, v in data.items()}


def _prepare(content: Node, rule: str, ctx: RuleContext) -> str:
    """Run ``@put`` (storing values) and replace ``@get``; the rule left to read."""
    for raw in _PUT.findall(rule):
        for key, sub in _puts(raw).items():
            ctx.vars[key] = get_string(content, sub, ctx)
    rule = _PUT.sub("", rule)
    return _GET.sub(lambda m: ctx.vars.get(m.group(1).strip(), ""), rule)


# --- evaluation ---------------------------------------------------------------------------------
def get_elements(content: Node, rule: str, ctx: RuleContext | None = None) -> list[Node]:
    """The elements (or JSON values) ``rule`` selects in ``content`` (a list rule such
    as ``bookList`` or ``chapterList``; a leading ``-`` reverses the list)."""
    ctx = ctx or RuleContext()
    rule = rule.strip()
    if needs_js(rule):
        raise RuleError(f"rule {rule!r} needs JavaScript")
    reverse = rule.startswith("-")
    rule = rule.lstrip("-+").strip()
    if not rule:
        return []
    rule = _prepare(content, rule, ctx)
    sep, parts = _split_top(rule, ("&&", "||", "%%"))
    if sep:
        lists = [get_elements(content, p, ctx) for p in parts]
        out = _combine(sep, lists)
    else:
        out = _select(content, rule.split("##", 1)[0], for_elements=True)
    out = out[:MAX_ITEMS]
    return out[::-1] if reverse else out


def get_strings(content: Node, rule: str, ctx: RuleContext | None = None) -> list[str]:
    """The strings ``rule`` reads in ``content`` (a URL rule may give several)."""
    ctx = ctx or RuleContext()
    rule = rule.strip()
    if not rule:
        return []
    if needs_js(rule):
        raise RuleError(f"rule {rule!r} needs JavaScript")
    alone = _GET.fullmatch(rule.split("##", 1)[0].strip())
    if alone:  # @get:{k} by itself: the value kept by @put
        _, regex_part = _split_regex(rule)
        return [_apply_regex(ctx.vars.get(alone.group(1).strip(), ""), regex_part)]
    rule = _prepare(content, rule, ctx)
    if "{{" in rule:  # a template: each {{rule}} replaced by what it reads

        def fill(m: re.Match[str]) -> str:
            return get_string(content, m.group(1), ctx)

        rule, regex_part = _split_regex(rule)
        text = re.sub(r"\{\{(.*?)\}\}", fill, rule, flags=re.S)
        return [_apply_regex(text, regex_part)]
    sep, parts = _split_top(rule, ("&&", "||", "%%"))
    if sep:
        return [s for s in _combine(sep, [get_strings(content, p, ctx) for p in parts]) if s]
    rule, regex_part = _split_regex(rule)
    if not rule.strip():  # "##regex" alone: applied to the content itself
        values = [_as_text(content)]
    else:
        values = [_as_text(v) for v in _select(content, rule, for_elements=False)]
    return [_apply_regex(v, regex_part) for v in values][:MAX_ITEMS]


def get_string(content: Node, rule: str, ctx: RuleContext | None = None) -> str:
    """What ``rule`` reads in ``content``, its values joined by new lines (a ``##``
    replacement applies to the joined text, as in Legado)."""
    rule = rule.strip()
    if "{{" not in rule and "##" in rule and not _split_top(rule, ("&&", "||", "%%"))[0]:
        head, regex_part = _split_regex(rule)
        if head.strip():
            joined = "\n".join(s for s in get_strings(content, head, ctx) if s)
            return _apply_regex(joined, regex_part).strip()
    return "\n".join(s for s in get_strings(content, rule, ctx) if s).strip()


def _split_regex(rule: str) -> tuple[str, list[str]]:
    if "##" not in rule:
        return rule, []
    head, *rest = rule.split("##")
    return head, rest


def _apply_regex(text: str, parts: list[str]) -> str:
    if not parts:
        return text
    pattern = parts[0]
    replacement = parts[1] if len(parts) > 1 else ""
    first_only = len(parts) > 2  # RULE##REGEX##REPLACEMENT###
    if not pattern:
        return text
    return replace_regex(text, pattern, replacement, first_only)


def _combine(sep: str, lists: list[list[Node]] | list[list[str]]) -> list:  # type: ignore[type-arg]
    if sep == "||":
        for values in lists:
            if values:
                return list(values)
        return []
    if sep == "&&":
        return [v for values in lists for v in values]
    out = []  # %%: one of each in turn
    for i in range(max((len(v) for v in lists), default=0)):
        out += [values[i] for values in lists if i < len(values)]
    return out


def _select(content: Node, rule: str, *, for_elements: bool) -> list[Node]:
    low = rule.lower()
    if low.startswith("@json:") or rule.startswith(("$.", "$[")):
        return _jsonpath(content, rule[6:] if low.startswith("@json:") else rule)
    if low.startswith("@xpath:") or rule.startswith("/"):
        return _xpath(content, rule[7:] if low.startswith("@xpath:") else rule)
    if not _is_selector(content):  # JSON: a bare key path
        if isinstance(content, str) and for_elements is False and rule in ("text", "html"):
            return [content]
        return _jsonpath(content, "$." + rule.removeprefix("@@"))
    if low.startswith("@css:"):
        return _css(content, rule[5:], for_elements)
    if rule.startswith(":"):
        raise RuleError(f"rule {rule!r}: the regex all-in-one form is not read")
    return _default(content, rule.removeprefix("@@"), for_elements)


def _is_selector(node: Node) -> bool:
    from parsel import Selector

    return isinstance(node, Selector)


@functools.lru_cache(maxsize=1024)
def _compiled_path(path: str) -> Any:  # jsonpath-ng ships no types
    from jsonpath_ng.ext import parse

    try:
        return parse(path)
    except Exception as exc:  # jsonpath-ng raises its own Exception subclasses
        raise RuleError(f"JSONPath {path!r}: {exc}") from None


def _jsonpath(content: Node, path: str) -> list[Node]:
    if _is_selector(content):
        text = content.get() if hasattr(content, "get") else ""  # type: ignore[union-attr,call-overload]
        try:
            content = json.loads(text)
        except (ValueError, TypeError):
            return []
    try:
        found = [m.value for m in _compiled_path(path.strip()).find(content)]
    except RuleError:
        raise
    except Exception as exc:  # a path that does not fit this value
        raise RuleError(f"JSONPath {path!r}: {exc}") from None
    out: list[Node] = []
    for v in found:  # a path to an array stands for its items
        if isinstance(v, list):
            out.extend(v)
        else:
            out.append(v)
    return out


def _xpath(content: Node, path: str) -> list[Node]:
    if not _is_selector(content):
        return []
    try:
        found = content.xpath(path)  # type: ignore[union-attr]
    except ValueError as exc:
        raise RuleError(f"XPath {path!r}: {exc}") from None
    return [s if s.root is not None and not isinstance(s.root, str) else s.get() for s in found]


def _css(content: Node, rule: str, for_elements: bool) -> list[Node]:
    """``@css:SELECTOR`` then, for a string rule, ``@text``/``@href``… at the end."""
    selector, get = rule, ""
    if not for_elements and "@" in rule:
        selector, _, get = rule.rpartition("@")
    found = _css_select(content, selector.strip()) if selector.strip() else [content]
    return found if for_elements else [_read(n, get or "text") for n in found]


def _css_select(content: Node, css: str) -> list[Node]:
    try:
        return list(content.css(css))  # type: ignore[union-attr]
    except Exception as exc:  # cssselect's SelectorError and ExpressionError
        raise RuleError(f"CSS selector {css!r}: {exc}") from None


_GETTERS = ("text", "textnodes", "owntext", "html", "all", "src", "href", "content", "value")


def _default(content: Node, rule: str, for_elements: bool) -> list[Node]:
    segments = [s for s in rule.split("@")]
    get = ""
    if not for_elements and len(segments) >= 1:
        last = segments[-1].strip()
        if len(segments) > 1 or _looks_getter(last):
            get = last
            segments = segments[:-1]
    nodes: list[Node] = [content]
    for seg in segments:
        seg = seg.strip()
        if not seg:
            continue
        nxt: list[Node] = []
        for node in nodes:
            nxt.extend(_single(node, seg))
            if len(nxt) > MAX_ITEMS:
                break
        nodes = nxt
    if for_elements:
        return nodes
    return [_read(n, get or "text") for n in nodes]


def _looks_getter(seg: str) -> bool:
    return seg.lower() in _GETTERS or seg.lower().startswith("abs:")


_BRACKET_INDEX = re.compile(r"^[\d\s,:!\-]+$")
_INDEX_TAIL = re.compile(r"([.!])(-?\d+(?::-?\d+)*)$")


def _single(node: Node, seg: str) -> list[Node]:
    """One segment of a default rule (``class.x.0``, ``.bookbox a!0``, ``tag.li[1:3]``)."""
    body, pick = seg, None
    head, _, inside = seg[:-1].rpartition("[")
    if seg.endswith("]") and head and _BRACKET_INDEX.match(inside):
        body, pick = head, ("[", inside)
    else:
        m = _INDEX_TAIL.search(seg)
        if m and m.start() > 0:
            body, pick = seg[: m.start()], (m.group(1), m.group(2))
    kind, _, name = body.partition(".")
    if kind == "class" and name:
        found = _css_select(node, "." + ".".join(name.split()))
    elif kind == "id" and name:
        found = _css_select(node, "#" + name)
    elif kind == "tag" and name:
        found = _css_select(node, name)
    elif kind == "text" and name:
        lit = f'"{name}"' if '"' not in name else f"'{name}'"
        found = list(node.xpath(f".//*[text()[contains(., {lit})]]"))  # type: ignore[union-attr]
    elif body == "children":
        found = list(node.xpath("./*"))  # type: ignore[union-attr]
    else:
        found = _css_select(node, body)
    return _indexed(found, pick) if pick else found


def _indexed(items: list[Node], pick: tuple[str, str]) -> list[Node]:
    kind, spec = pick
    n = len(items)
    if kind in (".", "!"):
        wanted = [int(x) for x in spec.split(":")]
        idx = [(i + n if i < 0 else i) for i in wanted]
        if kind == ".":
            return [items[i] for i in idx if 0 <= i < n]
        drop = set(idx)
        return [v for i, v in enumerate(items) if i not in drop]
    exclude = spec.strip().startswith("!")
    chosen: list[int] = []
    for part in spec.strip().lstrip("!").split(","):
        part = part.strip()
        if not part:
            continue
        try:
            if ":" in part:
                bits = [b.strip() for b in part.split(":")]
                start = int(bits[0]) if bits[0] else 0
                end = int(bits[1]) if len(bits) > 1 and bits[1] else n - 1
                step = int(bits[2]) if len(bits) > 2 and bits[2] else 1
                start, end = (start + n if start < 0 else start), (end + n if end < 0 else end)
                if step == 0:
                    continue
                if start <= end:
                    chosen += list(range(start, end + 1, abs(step)))
                else:
                    chosen += list(range(start, end - 1, -abs(step)))
            else:
                i = int(part)
                chosen.append(i + n if i < 0 else i)
        except ValueError:
            raise RuleError(f"index [{spec}] is not a list of numbers and ranges") from None
    if exclude:
        drop = set(chosen)
        return [v for i, v in enumerate(items) if i not in drop]
    return [items[i] for i in chosen if 0 <= i < n]


def _read(node: Node, get: str) -> str:
    """What ``get`` names of one element: its text, own text, HTML or an attribute."""
    if not _is_selector(node):
        return _as_text(node)
    root = node.root  # type: ignore[union-attr]
    if isinstance(root, str):
        return root
    g = get.lower()
    if g == "text":
        return _squash(" ".join(node.xpath(".//text()").getall()))  # type: ignore[union-attr]
    if g == "textnodes":
        own = [t.strip() for t in node.xpath("./text()").getall()]  # type: ignore[union-attr]
        return "\n".join(t for t in own if t)
    if g == "owntext":
        return _squash(" ".join(node.xpath("./text()").getall()))  # type: ignore[union-attr]
    if g in ("html", "all"):
        return str(node.get())  # type: ignore[union-attr,call-overload]
    attr = get.removeprefix("abs:")
    value = node.attrib.get(attr)  # type: ignore[union-attr]
    return str(value) if value is not None else ""


def _squash(text: str) -> str:
    return re.sub(r"[ \t\r\f\v\u00a0]+", " ", text).strip()


def _as_text(v: Node) -> str:
    if v is None:
        return ""
    if isinstance(v, str):
        return v
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return str(v)
    if isinstance(v, (dict, list)):
        return json.dumps(v, ensure_ascii=False)
    return _read(v, "text")


def html_to_text(html: str) -> str:
    """Chapter text from a content rule's HTML: one line per block and ``<br>``."""
    if "<" not in html:
        return html.strip()
    import lxml.html

    try:
        root = lxml.html.fromstring(f"<div>{html}</div>")
    except (ValueError, lxml.etree.ParserError):
        return html.strip()
    for bad in root.xpath("//script|//style"):
        bad.drop_tree()
    for br in root.xpath("//br"):
        br.tail = "\n" + (br.tail or "")
    for block in root.xpath("//p|//div|//h1|//h2|//h3|//li|//dd"):
        block.tail = "\n" + (block.tail or "")
    lines = [_squash(line) for line in root.text_content().split("\n")]
    return "\n".join(line for line in lines if line)
