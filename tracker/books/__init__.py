"""Books: a title, an author and ordered chapters, each chapter a work of the library.

``parse`` (with ``headings`` and ``epub``) turns book files into ``ParsedBook`` objects
without touching storage; see docs/BOOKS.md.
"""
