"""Storage sits at the bottom: its modules are small, import no service, case or evidence
logic, and take part in no import circle (imports inside functions and under
``TYPE_CHECKING`` count); the storage interfaces are narrow, and the parts every kind of
record shares (``Collection``, ``KeyValues``) are written once per backend."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest
from repo import REPO
from structure import Module, circles, import_graph, project_modules

from tracker.store import interfaces
from tracker.store.base import Store

MAX_LINES = 700

#: The storage area: the document store, the evidence log, the case store's adapters
#: and the one place that opens all of them.
AREA = (
    "tracker/store/",
    "tracker/evidence/",
    "tracker/plumbing/backends.py",
    "tracker/cases/store.py",
    "tracker/cases/store_factory.py",
    "tracker/cases/sqlite_store.py",
    "tracker/cases/mongo_store.py",
)


def _in_area(rel: str) -> bool:
    return any(rel == p or (p.endswith("/") and rel.startswith(p)) for p in AREA)


def _modules() -> dict[str, Module]:
    return project_modules(REPO, ("tracker",))


def _graph() -> dict[str, set[str]]:
    return import_graph(_modules())


def _area_modules() -> dict[str, Path]:
    return {
        name: m.path
        for name, m in _modules().items()
        if _in_area(m.path.relative_to(REPO).as_posix())
    }


def test_the_area_is_found() -> None:
    names = set(_area_modules())
    assert {"tracker.store.base", "tracker.evidence.log", "tracker.plumbing.backends"} <= names


@pytest.mark.parametrize("name", sorted(_area_modules()))
def test_no_storage_module_is_over_700_lines(name: str) -> None:
    path = _area_modules()[name]
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_LINES, f"{path.relative_to(REPO)} has {lines} lines (at most {MAX_LINES})"


def test_no_import_circle_touches_storage() -> None:
    area = set(_area_modules())
    found = [c for c in circles(_graph()) if area & set(c)]
    assert found == [], f"import circles through the storage area: {found}"


def test_storage_imports_nothing_above_it() -> None:
    above = ("tracker.cases", "tracker.evidence", "tracker.services", "tracker.plumbing.backends")
    above += ("tracker.library", "tracker.books", "tracker.reports", "tracker.discovery")
    above += (
        "tracker.plumbing.config",
    )  # the settings import storage (DataFiles), not the reverse
    graph = _graph()
    offenders = {
        name: sorted(t for t in targets if t.startswith(above))
        for name, targets in graph.items()
        if name == "tracker.store" or name.startswith("tracker.store.")
    }
    assert {n: t for n, t in offenders.items() if t} == {}


def test_the_scanner_sees_circles_inside_functions(tmp_path: Path) -> None:
    pkg = tmp_path / "tracker"
    pkg.mkdir()
    (pkg / "a.py").write_text("def f():\n    from tracker.b import g\n", encoding="utf-8")
    (pkg / "b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .a import f\n",
        encoding="utf-8",
    )
    graph = import_graph(project_modules(tmp_path, ("tracker",)))
    assert graph == {"tracker.a": {"tracker.b"}, "tracker.b": {"tracker.a"}}
    assert circles(graph) == [["tracker.a", "tracker.b"]]


def _abstract(cls: type) -> set[str]:
    return {
        name
        for name, member in vars(cls).items()
        if getattr(member, "__isabstractmethod__", False)
        or getattr(getattr(member, "fget", None), "__isabstractmethod__", False)
    }


@pytest.mark.parametrize(
    "cls",
    [
        interfaces.Collection,
        interfaces.KeyValues,
        interfaces.MotherStore,
        interfaces.FingerprintStore,
        interfaces.SuspectStore,
        interfaces.MatchStore,
        interfaces.UserStore,
        interfaces.WatchStore,
        interfaces.MetaStore,
    ],
    ids=lambda c: c.__name__,
)
def test_each_storage_interface_is_narrow(cls: type) -> None:
    assert len(_abstract(cls)) <= 8, f"{cls.__name__}: {sorted(_abstract(cls))}"


def test_the_facade_adds_no_abstract_method_of_its_own() -> None:
    # Store is its interfaces in one object: what an adapter must write is theirs
    # (and ``close``); listing, counting, paging and scanning are the collections'.
    assert _abstract(Store) == {"close"}
    listed = {
        "get_mother",
        "list_mothers",
        "count_mothers",
        "iter_mothers",
        "get_suspect",
        "list_suspects",
        "count_suspects",
        "iter_suspects",
        "put_suspect",
        "put_user",
        "get_user",
        "list_users",
        "delete_user",
        "put_watch",
        "delete_watch",
        "get_meta",
        "set_meta",
        "meta_items",
    }
    for name in listed:
        assert not getattr(getattr(Store, name), "__isabstractmethod__", False), name


def test_both_adapters_write_only_what_differs() -> None:
    from tracker.store.mongo import MongoStore
    from tracker.store.sqlite import SqliteStore

    generic = {"list_mothers", "count_mothers", "iter_mothers", "list_suspects", "get_user"}
    for adapter in (SqliteStore, MongoStore):
        written = {
            name
            for klass in inspect.getmro(adapter)
            if klass.__module__.startswith(("tracker.store.sqlite", "tracker.store.mongo"))
            for name in vars(klass)
        }
        assert not generic & written, f"{adapter.__name__} writes {sorted(generic & written)}"
