"""A simulated web for the discovery benchmark: 20 sites under their own host names,
over 20,000 pages generated deterministically from real Chinese text, traps, planted
copies of library works with obfuscations, and a fake search engine indexing it.

Library: the chapters of 红楼梦 and 三国演义 and the pieces of 鲁迅 (``../shared/data``).
Filler (never in the library): 儒林外史, 镜花缘, 老残游记, laws, Wikipedia paragraphs.

Sites (``HOSTS``):
- 6 novel sites (JieQi GBK ``/modules/article/search.php?searchkey=``, PTCMS
  ``/search.html?keyword=``, 笔趣阁 ``/s.php?q=``): books with a chapter list over two
  pages (``/book/B/``, ``/book/B/index_2.html``) whose "下一页" never ends (empty pages
  past the last: a trap off every book found), chapters, a book list with endless
  pagination (a trap past its last real page);
- 4 mirrors on other domains: books under ``/html/B/C.shtml``, every link with a new
  ``?sid=`` (a session trap: the server counts a path asked again under another sid);
- 4 forums: ``/forum/list?page=N`` (endless), threads; a thread holding a copy has a
  "下一页" that never ends (past its one page the forum shows it again);
- 3 blogs: posts with a calendar widget, ``/archive?y=&m=`` (one month lists posts,
  every other month is empty, and each links to the next and previous: an infinite
  calendar on every blog with a copy);
- 3 news aggregators: articles, links with ``sid`` and ``utm_`` parameters.

Planted copies (``World.planted``: URL -> work id): 160 novel chapters on the novel sites
(watermarks, traditional characters, punctuation removed, homophones), 40 Lu Xun pieces
on mirrors (random edits, sentences reordered), 20 on forums, 15 on blogs, 15 in news
articles (excerpts inside other text, random edits): 250 works, one page each, plus
exact mirrors of ten planted chapters (near-duplicates).
"""

from __future__ import annotations

import bisect
import json
import os
import random
import re
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qs, quote, unquote_to_bytes, urlsplit

import numpy as np

DATA = Path(os.environ.get("YINJI_SHARED_DATA", "/work/shared/data"))

NOVEL = [
    ("jq1.sim", "jieqi"),
    ("jq2.sim", "jieqi"),
    ("pt1.sim", "ptcms"),
    ("pt2.sim", "ptcms"),
    ("bq1.sim", "biquge"),
    ("bq2.sim", "biquge"),
]
MIRRORS = ["mirror1.sim", "mirror2.sim", "mirror3.sim", "mirror4.sim"]
FORUMS = ["bbs1.sim", "bbs2.sim", "bbs3.sim", "bbs4.sim"]
BLOGS = ["blog1.sim", "blog2.sim", "blog3.sim"]
NEWS = ["news1.sim", "news2.sim", "news3.sim"]
HOSTS = [h for h, _ in NOVEL] + MIRRORS + FORUMS + BLOGS + NEWS

BOOKS_PER_NOVEL_SITE = 36
CHAPTERS_PER_BOOK = 40
MIRROR_BOOKS = 20
THREADS = 500
POSTS = 600
ARTICLES = 1500
LIST_PAGES = 12  # real pages of a novel site's book list (then the trap)
INDEX_PER_PAGE = 20  # chapters on a page of a book's chapter list (then "下一页")
ARCHIVE_POSTS = 30  # posts listed in a blog's one real archive month
FORUM_PAGES = 50
PAGE_CHARS = 1800

HOMOPHONES = {
    "他": "她",
    "在": "再",
    "做": "作",
    "象": "像",
    "那": "哪",
    "已": "以",
    "的": "地",
    "里": "理",
    "到": "道",
    "是": "事",
    "时": "十",
    "说": "硕",
}
WATERMARK = "【笔趣阁 www.bqg.sim 最快更新，无弹窗阅读】"


def _jsonl(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


def _chunks(text: str, size: int) -> list[str]:
    text = re.sub(r"\s+", "", text)
    return [text[i : i + size] for i in range(0, len(text) - size // 2, size)]


# --- obfuscations ---------------------------------------------------------------------
def watermark(text: str, rng: random.Random) -> str:
    parts = [text[i : i + 400] for i in range(0, len(text), 400)]
    return WATERMARK.join(parts)


def homophones(text: str, rng: random.Random) -> str:
    return "".join(HOMOPHONES[c] if c in HOMOPHONES and rng.random() < 0.5 else c for c in text)


def no_punctuation(text: str, rng: random.Random) -> str:
    return re.sub(r"[，。！？；：、“”‘’（）《》,.!?;:]", "", text)


def random_edits(text: str, rng: random.Random, rate: float = 0.02) -> str:
    out = []
    for c in text:
        r = rng.random()
        if r < rate / 2:
            continue
        if r < rate:
            out.append(
                rng.choice("的一是了我不人在他有这个上们来到时大地为子中你说生国年着就那和要")
            )
            continue
        out.append(c)
    return "".join(out)


def reorder(text: str, rng: random.Random) -> str:
    sents = [s for s in re.split(r"(?<=[。！？])", text) if s]
    for i in range(0, len(sents) - 1, 2):
        if rng.random() < 0.5:
            sents[i], sents[i + 1] = sents[i + 1], sents[i]
    return "".join(sents)


@dataclass
class Page:
    title: str
    text: str  # the main text ("" for navigation pages)
    links: list[tuple[str, str]] = field(default_factory=list)  # (href, anchor)
    form: str = ""  # a search form's HTML


@dataclass
class World:
    port: int = 0
    library: list[dict] = field(default_factory=list)  # documents to ingest
    planted: dict[str, str] = field(default_factory=dict)  # URL (no port) -> work id
    near_copies: dict[str, str] = field(default_factory=dict)  # exact mirror URL -> work
    content: dict[tuple[str, str], tuple[str, str]] = field(default_factory=dict)
    books: dict[str, list[tuple[str, list[str]]]] = field(default_factory=dict)  # host -> books

    # -- building --
    @classmethod
    def build(cls, seed: int = 7) -> World:
        rng = random.Random(seed)
        w = cls()
        hlm = _jsonl(DATA / "novels" / "hongloumeng.chapters.jsonl")
        sg = _jsonl(DATA / "novels" / "sanguoyanyi.chapters.jsonl")
        sg_trad = _jsonl(DATA / "novels" / "sanguoyanyi.trad.chapters.jsonl")
        luxun = _jsonl(DATA / "luxun" / "luxun_pieces.jsonl")
        for d in hlm:
            w.library.append(
                {"id": d["id"], "title": d["title"], "text": d["text"], "book": "红楼梦"}
            )
        for d in sg:
            w.library.append(
                {"id": d["id"], "title": d["title"], "text": d["text"], "book": "三国演义"}
            )
        for d in luxun:
            w.library.append(
                {
                    "id": d["id"],
                    "title": d["title"],
                    "text": d["text"],
                    "collection": d["collection"],
                }
            )
        sources = [
            (DATA / "novels" / "other" / f"{n}.trad.txt").read_text(encoding="utf-8")
            for n in ("rulinwaishi", "jinghuayuan", "laocanyouji")
        ]
        sources += [d["text"] for d in _jsonl(DATA / "laws" / "laws_national.jsonl")]
        filler: list[str] = []
        for offset in (0, PAGE_CHARS // 3, 2 * PAGE_CHARS // 3):
            for text in sources:
                filler += _chunks(text[offset:], PAGE_CHARS)
        wiki = [d["text"] for d in _jsonl(DATA / "wiki" / "cmrc2018_paragraphs.simplified.jsonl")]
        rng.shuffle(filler)
        fill = iter(filler)
        wiki_it = iter(wiki * 20)

        def para(n: int = 1) -> str:
            return "".join(next(wiki_it) for _ in range(n))

        # Novel sites: filler books, and the pirate books of the library's novels.
        pirate = {
            "jq1.sim": ("红楼梦", hlm[:40], watermark),
            "pt1.sim": ("三国演义", sg_trad[:40], lambda t, r: t),  # traditional characters
            "bq1.sim": ("红楼梦", hlm[40:80], no_punctuation),
            "jq2.sim": ("三国演义", sg[40:80], homophones),
        }
        titles = ["儒林外史", "镜花缘", "老残游记"]
        for host, _ in NOVEL:
            books: list[tuple[str, list[str]]] = []
            for b in range(BOOKS_PER_NOVEL_SITE):
                name = f"{rng.choice(titles)}{rng.choice('甲乙丙丁戊己庚辛壬癸')}{b}"
                books.append((name, [next(fill) for _ in range(CHAPTERS_PER_BOOK)]))
            if host in pirate:
                name, chapters, fn = pirate[host]
                texts = [fn(d["text"][:PAGE_CHARS], rng) for d in chapters]
                slot = rng.randrange(BOOKS_PER_NOVEL_SITE)
                books[slot] = (name, texts)
                for c, d in enumerate(chapters, 1):
                    wid = d["id"].replace("-trad", "")
                    w.planted[f"http://{host}/book/{slot + 1}/{c}.html"] = wid
            w.books[host] = books
        # Mirrors: filler books plus Lu Xun pieces; mirror1 also copies 10 jq1 chapters.
        lx = list(luxun)
        rng.shuffle(lx)
        lx_it = iter(lx)
        for _m, host in enumerate(MIRRORS):
            books = [
                (f"{rng.choice(titles)}{b}", [next(fill) for _ in range(CHAPTERS_PER_BOOK)])
                for b in range(MIRROR_BOOKS)
            ]
            for k in range(10):
                d = next(lx_it)
                fn = random_edits if k % 2 else reorder
                b, c = rng.randrange(MIRROR_BOOKS), rng.randrange(CHAPTERS_PER_BOOK)
                while f"http://{host}/html/{b + 1}/{c + 1}.shtml" in w.planted:
                    c = (c + 1) % CHAPTERS_PER_BOOK
                books[b][1][c] = fn(d["text"][:PAGE_CHARS], rng)
                w.planted[f"http://{host}/html/{b + 1}/{c + 1}.shtml"] = d["id"]
            w.books[host] = books
        jq1_slot = next(i for i, (n, _) in enumerate(w.books["jq1.sim"]) if n == "红楼梦")
        for c in range(10):
            w.books["mirror1.sim"][0][1][c] = w.books["jq1.sim"][jq1_slot][1][c]
            w.near_copies[f"http://mirror1.sim/html/1/{c + 1}.shtml"] = hlm[c]["id"]

        # Forums, blogs, news: filler, with Lu Xun excerpts inside some of them.
        def host_pages(hosts: list[str], prefix: str, count: int, planted: int) -> None:
            for host in hosts:
                chosen = set(rng.sample(range(1, count + 1), planted))
                for i in range(1, count + 1):
                    url = f"http://{host}/{prefix}/{i}.html"
                    if i in chosen:
                        d = next(lx_it)
                        start = rng.randrange(0, max(1, len(d["text"]) - 1500))
                        excerpt = random_edits(
                            d["text"][start : start + rng.randint(800, 1500)], rng, 0.01
                        )
                        text = para() + excerpt + para()
                        w.planted[url] = d["id"]
                        title = f"转载：{d['title']}"
                    else:
                        text = para(rng.randint(1, 3))
                        title = text[:16]
                    w.content[(host, f"/{prefix}/{i}.html")] = (title, text)

        host_pages(FORUMS, "thread", THREADS, 5)
        host_pages(BLOGS, "post", POSTS, 5)
        host_pages(NEWS, "a", ARTICLES, 5)
        return w

    # -- serving --
    def pages_total(self) -> int:
        n = sum(len(b) * (1 + CHAPTERS_PER_BOOK) for b in self.books.values())
        index_pages = -(-CHAPTERS_PER_BOOK // INDEX_PER_PAGE) - 1  # a novel site's index_N
        n += sum(len(self.books[h]) * index_pages for h, _ in NOVEL)
        return n + len(self.content)

    def page(self, host: str, path_qs: str) -> tuple[int, dict[str, str], bytes, bool]:
        """(status, headers, body, trap): ``trap`` marks a page only a trap leads to."""
        parts = urlsplit(path_qs)
        path, q = parts.path, parse_qs(parts.query)
        kind = dict(NOVEL).get(host)
        if path == "/robots.txt":
            return (
                200,
                {"Content-Type": "text/plain"},
                b"User-agent: *\nDisallow: /private/\n",
                False,
            )
        if host in dict(NOVEL):
            return self._novel(host, kind or "", path, parts.query)
        if host in MIRRORS:
            return self._mirror(host, path)
        if host in FORUMS:
            return self._listing(host, path, q, "thread", THREADS, "/forum/list", "page")
        if host in BLOGS:
            return self._blog(host, path, q)
        if host in NEWS:
            return self._listing(host, path, q, "a", ARTICLES, "/", None)
        return 404, {}, b"no such host", False

    def _html(
        self, page: Page, charset: str = "utf-8", *, trap: bool = False, status: int = 200
    ) -> tuple[int, dict[str, str], bytes, bool]:
        links = "".join(f'<li><a href="{h}">{a}</a></li>' for h, a in page.links)
        body = "".join(f"<p>{p}</p>" for p in re.split(r"(?<=[。！？])", page.text) if p)
        doc = (
            f'<html><head><meta charset="{charset}"><title>{page.title}</title></head><body>'
            f"{page.form}<h1>{page.title}</h1><div id='content'>{body}</div><ul>{links}</ul>"
            "</body></html>"
        )
        data = doc.encode(charset, errors="xmlcharrefreplace")
        return status, {"Content-Type": f"text/html; charset={charset}"}, data, trap

    def _novel(
        self, host: str, kind: str, path: str, query: str
    ) -> tuple[int, dict[str, str], bytes, bool]:
        charset = "gbk" if kind == "jieqi" else "utf-8"
        books = self.books[host]
        forms = {
            "jieqi": '<form action="/modules/article/search.php">'
            '<input type="hidden" name="searchtype" value="articlename">'
            '<input type="text" name="searchkey"></form>',
            "ptcms": '<form action="/search.html"><input type="text" name="keyword"></form>',
            "biquge": '<form action="/s.php"><input type="text" name="q"></form>',
        }
        hot = [(f"/book/{i + 1}/", n) for i, (n, _) in enumerate(books[:8])]
        if path == "/":
            return self._html(
                Page("免费小说网", "", [*hot, ("/list/1.html", "书库")], forms[kind]), charset
            )
        if path in ("/modules/article/search.php", "/search.html", "/s.php"):
            raw = b""
            for pair in query.split("&"):
                k, _, v = pair.partition("=")
                if k in ("searchkey", "keyword", "q"):
                    raw = unquote_to_bytes(v.replace("+", " "))
            key = raw.decode(charset, "replace")
            found = [(f"/book/{i + 1}/", n) for i, (n, _) in enumerate(books) if key and key in n]
            return self._html(Page("搜索结果", "", found, forms[kind]), charset)
        m = re.fullmatch(r"/list/(\d+)\.html", path)
        if m:
            n = int(m.group(1))
            per = -(-len(books) // LIST_PAGES)
            items = [(f"/book/{i + 1}/", b[0]) for i, b in enumerate(books)][
                (n - 1) * per : n * per
            ]
            return self._html(
                Page(f"书库 第{n}页", "", [*items, (f"/list/{n + 1}.html", "下一页")]),
                charset,
                trap=n > LIST_PAGES,
            )
        m = re.fullmatch(r"/book/(\d+)/index_(\d+)\.html", path)
        if m and 1 <= int(m.group(1)) <= len(books):
            name, chapters = books[int(m.group(1)) - 1]
            return self._book_index(int(m.group(1)), int(m.group(2)), name, len(chapters), charset)
        m = re.fullmatch(r"/book/(\d+)/(?:(\d+)\.html)?", path)
        if m and 1 <= int(m.group(1)) <= len(books):
            b = int(m.group(1))
            name, chapters = books[b - 1]
            if m.group(2) is None:
                return self._book_index(b, 1, name, len(chapters), charset)
            c = int(m.group(2))
            if 1 <= c <= len(chapters):
                links = [(f"/book/{b}/", "目录")]
                if c < len(chapters):
                    links.append((f"/book/{b}/{c + 1}.html", "下一章"))
                links += [*hot[:4], ("/private/vip.html", "VIP")]
                return self._html(Page(f"{name} 第{c}章", chapters[c - 1], links), charset)
        return 404, {}, b"not found", False

    def _book_index(
        self, b: int, n: int, name: str, count: int, charset: str
    ) -> tuple[int, dict[str, str], bytes, bool]:
        """A book's chapter list, ``INDEX_PER_PAGE`` chapters a page; its "下一页" never
        ends: past the last real page an empty list with a "下一页" again (a trap)."""
        first = (n - 1) * INDEX_PER_PAGE + 1
        links = [
            (f"/book/{b}/{c}.html", f"第{c}章")
            for c in range(first, min(first + INDEX_PER_PAGE, count + 1))
        ]
        links.append((f"/book/{b}/index_{n + 1}.html", "下一页"))
        pages = -(-count // INDEX_PER_PAGE)
        title = f"{name}最新章节" + (f" 第{n}页" if n > 1 else "")
        return self._html(Page(title, "", links), charset, trap=n > pages)

    def _mirror(self, host: str, path: str) -> tuple[int, dict[str, str], bytes, bool]:
        books = self.books[host]
        sid = f"{random.getrandbits(64):016x}{random.getrandbits(64):016x}"
        if path == "/":
            links = [(f"/html/{i + 1}/?sid={sid}", n) for i, (n, _) in enumerate(books)]
            return self._html(Page("小说镜像站", "", links))
        m = re.fullmatch(r"/html/(\d+)/(?:(\d+)\.shtml)?", path)
        if m and 1 <= int(m.group(1)) <= len(books):
            b = int(m.group(1))
            name, chapters = books[b - 1]
            if m.group(2) is None:
                links = [
                    (f"/html/{b}/{c}.shtml?sid={sid}", f"第{c}章")
                    for c in range(1, len(chapters) + 1)
                ]
                return self._html(Page(name, "", links))
            c = int(m.group(2))
            if 1 <= c <= len(chapters):
                links = [(f"/html/{b}/?sid={sid}", "目录"), ("/", "首页")]
                if c < len(chapters):
                    links.append((f"/html/{b}/{c + 1}.shtml?sid={sid}", "下一章"))
                return self._html(Page(f"{name} 第{c}章", chapters[c - 1], links))
        return 404, {}, b"not found", False

    def _listing(
        self,
        host: str,
        path: str,
        q: dict,
        prefix: str,
        count: int,
        list_path: str,
        page_key: str | None,
    ) -> tuple[int, dict[str, str], bytes, bool]:
        per = 25
        if path == list_path or (page_key is None and path == "/"):
            n = int((q.get(page_key or "page") or ["1"])[0]) if page_key else 1
            items = [
                (
                    f"/{prefix}/{i}.html?utm_source=list&sid={random.getrandbits(48):x}",
                    self.content[(host, f"/{prefix}/{i}.html")][0],
                )
                for i in range((n - 1) * per + 1, min(n * per, count) + 1)
            ]
            nxt = [(f"{list_path}?{page_key}={n + 1}", "下一页")] if page_key else []
            if page_key is None:  # news: a front page with every article, in pages of links
                items = [
                    (
                        f"/{prefix}/{i}.html?from=home",
                        self.content[(host, f"/{prefix}/{i}.html")][0],
                    )
                    for i in range(1, count + 1, 3)
                ]
                items += [
                    (f"/{prefix}/{i}.html?utm_medium=feed", "更多") for i in range(2, count + 1, 3)
                ]
                items += [(f"/{prefix}/{i}.html", "相关") for i in range(3, count + 1, 3)]
            return self._html(
                Page(f"列表 {n}", "", items + nxt), trap=bool(page_key) and n > FORUM_PAGES
            )
        if path == "/" and page_key:
            return self._html(Page("论坛首页", "", [(f"{list_path}?{page_key}=1", "最新帖子")]))
        got = self.content.get((host, path))
        if got:
            i = int(re.findall(r"\d+", path)[-1])
            links = [(f"/{prefix}/{j}.html", "相关") for j in (i + 1, i + 7) if j <= count]
            links.append(("/", "首页"))
            if prefix == "post":  # a blog's calendar widget
                links.append(("/archive?m=11&y=2026", "2026年11月"))
            n = int((q.get("page") or ["1"])[0])
            if prefix == "thread" and f"http://{host}{path}" in self.planted:
                # A long thread has pages; past its last one the forum shows the last
                # again, with a "下一页" again (an endless pagination trap).
                links.append((f"{path}?page={n + 1}", "下一页"))
            return self._html(Page(got[0], got[1], links), trap=n > 1)
        return 404, {}, b"not found", False

    def _blog(self, host: str, path: str, q: dict) -> tuple[int, dict[str, str], bytes, bool]:
        if path == "/":
            links = [
                (f"/post/{i}.html", self.content[(host, f"/post/{i}.html")][0])
                for i in range(1, POSTS + 1)
            ]
            return self._html(Page("博客", "", [*links, ("/archive?y=2026&m=11", "归档")]))
        if path == "/archive":
            y, m = int(q.get("y", ["2026"])[0]), int(q.get("m", ["11"])[0])
            prev = (y, m - 1) if m > 1 else (y - 1, 12)
            nxt = (y, m + 1) if m < 12 else (y + 1, 1)
            links = [
                (f"/archive?y={prev[0]}&m={prev[1]}", "上个月"),
                (f"/archive?y={nxt[0]}&m={nxt[1]}", "下个月"),
            ]
            real = (y, m) == (2026, 11)  # every other month is empty: an endless calendar
            if real:
                links += [
                    (f"/post/{i}.html", self.content[(host, f"/post/{i}.html")][0])
                    for i in range(1, ARCHIVE_POSTS + 1)
                ]
            return self._html(Page(f"归档 {y}年{m}月", "", links), trap=not real)
        return self._listing(host, path, q, "post", POSTS, "/__none__", None)

    # -- the fake search engine --
    def search_index(self) -> SearchEngine:
        return SearchEngine(self)


class SearchEngine:
    """Phrase search (sampled 8-gram hashes; a page holding at least 60% of a phrase's
    sampled grams is a hit) and title search over every content page but the novel
    sites' (pirate novel sites commonly keep search engines out: their copies are found
    through site searches)."""

    N = 8

    def __init__(self, world: World) -> None:
        from tracker.fingerprints.simhash import ngram_hashes

        self.urls: list[str] = []
        self.titles: list[str] = []
        hashes, ids = [], []
        for host, books in world.books.items():
            if host in dict(NOVEL):  # pirate novel sites keep search engines out
                continue
            pat = "/html/{b}/{c}.shtml"
            for b, (name, chapters) in enumerate(books, 1):
                for c, text in enumerate(chapters, 1):
                    self._add(
                        f"http://{host}" + pat.format(b=b, c=c),
                        f"{name} 第{c}章",
                        text,
                        hashes,
                        ids,
                        ngram_hashes,
                    )
        for (host, path), (title, text) in world.content.items():
            self._add(f"http://{host}{path}", title, text, hashes, ids, ngram_hashes)
        clean = [re.sub(r"\W", "", t) for t in self.titles]
        self._starts = list(np.cumsum([0] + [len(t) + 1 for t in clean[:-1]]))
        self._blob = "\x00".join(clean)
        h = np.concatenate(hashes)
        i = np.concatenate(ids)
        order = np.argsort(h, kind="stable")
        self.h, self.i = h[order], i[order]

    def _add(self, url, title, text, hashes, ids, ngram_hashes) -> None:  # type: ignore[no-untyped-def]
        pid = len(self.urls)
        self.urls.append(url)
        self.titles.append(title)
        g = np.unique(ngram_hashes(re.sub(r"\W", "", text), self.N).ravel())
        g = g[g % 4 == 0]
        hashes.append(g)
        ids.append(np.full(len(g), pid, dtype=np.int32))

    def search(self, q: str, port: int, count: int = 10) -> list[dict]:
        from tracker.fingerprints.simhash import ngram_hashes

        phrase = q.strip()
        scores: dict[int, float] = {}
        quoted = re.findall(r'"([^"]+)"', phrase)
        for p in quoted:
            g = np.unique(ngram_hashes(re.sub(r"\W", "", p), self.N).ravel())
            g = g[g % 4 == 0]
            if len(g) == 0:
                continue
            lo = np.searchsorted(self.h, g, "left")
            hi = np.searchsorted(self.h, g, "right")
            hits: dict[int, int] = {}
            for a, b in zip(lo, hi, strict=True):
                for pid in set(self.i[a:b].tolist()):
                    hits[pid] = hits.get(pid, 0) + 1
            for pid, n in hits.items():
                if n >= 0.6 * len(g):
                    scores[pid] = scores.get(pid, 0) + n / len(g)
        words = [re.sub(r"\W", "", x) for x in quoted] or [re.sub(r"\W", "", phrase)]
        for wd in words:
            if not wd:
                continue
            for m in re.finditer(re.escape(wd), self._blob):
                pid = bisect.bisect_right(self._starts, m.start()) - 1
                scores[pid] = scores.get(pid, 0) + 0.5
        best = sorted(scores, key=lambda p: (-scores[p], p))[:count]
        out = []
        for pid in best:
            u = urlsplit(self.urls[pid])
            out.append(
                {
                    "url": f"http://{u.hostname}:{port}{u.path}",
                    "title": self.titles[pid],
                    "content": "",
                }
            )
        return out


def quote_gbk(s: str) -> str:
    return quote(s.encode("gbk"))
