"""Test ids as pytest writes them (`file::Class::test[param]`), files and directories, and how they nest."""

from __future__ import annotations

import posixpath


def ancestors(test_id: str) -> list[str]:
    """What contains `test_id`, nearest first: its function (for a parametrised id), class, file and
    directories up to `.`."""
    path, sep, rest = test_id.partition("::")
    parents: list[str] = []
    if sep:
        parts = rest.split("::")
        if parts[-1].endswith("]") and "[" in parts[-1]:
            parents.append("::".join([path, *parts[:-1], parts[-1].split("[", 1)[0]]))
        parents += ["::".join([path, *parts[:n]]) for n in range(len(parts) - 1, 0, -1)]
        parents.append(path)
    directory = posixpath.dirname(path)
    while directory:
        parents.append(directory)
        directory = posixpath.dirname(directory)
    if path != ".":
        parents.append(".")
    return parents


def collapse(ids: set[str]) -> list[str]:
    """Sorted ids without those another id already contains, so nothing runs twice."""
    return sorted(i for i in ids if not any(parent in ids for parent in ancestors(i)))


def file_of(test_id: str) -> str:
    return test_id.partition("::")[0]
