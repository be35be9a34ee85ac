"""The architecture figures a closing note quotes (issue #41), read from a source tree
(nothing is imported): modules over 700 lines, import circles, reach-throughs from web
and workers past the services, ``Any`` in public signatures per package.

    python bench/arch_report.py            # this checkout
    python bench/arch_report.py /tmp/old   # another tree, e.g. ``git archive`` of a commit
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "support"))
sys.path.insert(0, str(ROOT / "bench"))

from arch_metrics import public_signatures  # noqa: E402
from structure import (  # noqa: E402
    PACKAGES,
    circles,
    import_graph,
    project_modules,
    reach_throughs,
)


def report(root: Path) -> str:
    modules = project_modules(root)
    lines: list[str] = []
    for package in PACKAGES:
        mine = [m for m in modules.values() if m.name.split(".")[0] == package]
        big = sorted((m.lines, m.name) for m in mine if m.lines > 700)
        sigs = [
            s
            for m in mine
            for s in public_signatures(ast.parse(m.path.read_text(encoding="utf-8")))
        ]
        reach = sum(len(reach_throughs(m)) for m in mine)
        lines.append(
            f"- {package}: {len(mine)} modules, {sum(m.lines for m in mine):,} lines; "
            f"over 700: {len(big)} ({', '.join(f'{n} {n_}' for n_, n in big) or 'none'}); "
            f"public signatures mentioning Any: {sum(a for _, a in sigs)} of {len(sigs)}"
            + (f"; reach-throughs past the services: {reach}" if package != "tracker" else "")
        )
    found = circles(import_graph(modules))
    lines.append(
        f"- import circles: {len(found)}"
        + "".join(f"\n  - {len(g)} modules: {', '.join(g)}" for g in found)
    )
    return "\n".join(lines)


def main(argv: list[str]) -> None:
    root = Path(argv[1]) if len(argv) > 1 else ROOT
    print(report(root))


if __name__ == "__main__":
    main(sys.argv)
