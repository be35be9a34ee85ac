"""Books: the unit rights holders own (issue #36).

A ``Book`` (``model``) has an id, a title, an author and ordered chapters; each chapter
is a work (a ``Mother``) whose metadata names its book (``book_id``, ``book_title``,
``author``, ``chapter``, ``chapter_index``, ``volume``). Book records live beside the
library's store (``store``: a ``books`` table in the sqlite file, a ``books``
collection in MongoDB); ``service.BookService`` ingests, lists, renames, deletes and
migrates them; ``cli`` is ``yinji book``. A book file is read by ``parse`` (with ``headings`` and
``epub``, no storage) into the ``types`` it shares with this package; see docs/BOOKS.md.
"""

from tracker.books.model import Book, BookChapter
from tracker.books.types import BookFileError, ParsedBook, ParsedChapter

__all__ = ["Book", "BookChapter", "BookFileError", "ParsedBook", "ParsedChapter"]
