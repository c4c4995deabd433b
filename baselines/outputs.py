"""Where the command-line tools write: a path checked before any work, so that a run does not end (after hours of
training or rollouts) in an OSError traceback from ``mkdir`` or ``open``, with what it made lost."""

from __future__ import annotations

from pathlib import Path

__all__ = ["file_problem", "folder_problem"]


def folder_problem(path: str | Path) -> str | None:
    """Why ``path`` cannot be a folder to write into (it, or the nearest of its parents that exists, is not a folder),
    or ``None``. Permissions are left to the write itself."""
    path = Path(path)
    for at in (path, *path.parents):
        if at.exists():
            return None if at.is_dir() else f"{at} is a file, not a folder"
    return None


def file_problem(path: str | Path) -> str | None:
    """Why ``path`` cannot be a file to write (it is a folder, or its folder cannot be one), or ``None``."""
    path = Path(path)
    if path.is_dir():
        return f"{path} is a folder; give the path of a file in it"
    return folder_problem(path.parent)
