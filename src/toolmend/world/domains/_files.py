"""Files: a small in-memory file system of text documents, addressed by slash paths."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, Field

from toolmend.world._state import File, WorldState
from toolmend.world.domains._base import WORLD_TOOLS, WRITES, fail, not_found

Path = Annotated[
    str,
    Field(pattern=r"^[a-z0-9_]+(/[a-z0-9_.\-]+)*$", description='Relative path such as "docs/notes.txt".'),
]


class FileEntry(BaseModel):
    path: str
    size: int
    modified: str


class FileList(BaseModel):
    files: list[FileEntry]
    count: int


class FileContent(BaseModel):
    path: str
    content: str
    size: int


class Written(BaseModel):
    path: str
    size: int
    created: bool


class Removed(BaseModel):
    path: str
    deleted: bool


def _entry(f: File) -> FileEntry:
    return FileEntry(path=f.path, size=len(f.content.encode()), modified=f.modified)


@WORLD_TOOLS.tool
def files_list(
    state: WorldState, directory: Annotated[str, Field(pattern=r"^[a-z0-9_/]*$")] = ""
) -> FileList:
    """List the files under a directory, recursively, sorted by path.

    Args:
        directory: Directory such as "docs" or "projects/falcon"; empty for everything.
    """
    prefix = directory.strip("/") + "/" if directory.strip("/") else ""
    hits = sorted((f for f in state.files.values() if f.path.startswith(prefix)), key=lambda f: f.path)
    return FileList(files=[_entry(f) for f in hits], count=len(hits))


@WORLD_TOOLS.tool
def files_read(state: WorldState, path: Path) -> FileContent:
    """Read a text file.

    Args:
        path: Path of the file.
    """
    f = state.files.get(path) or not_found("file", path)
    return FileContent(path=f.path, content=f.content, size=len(f.content.encode()))


@WORLD_TOOLS.tool(metadata=WRITES)
def files_write(state: WorldState, path: Path, content: str, overwrite: bool = False) -> Written:
    """Create a text file, or replace one when ``overwrite`` is true.

    Args:
        path: Path of the file to write.
        content: Full text of the file.
        overwrite: Replace the file if it exists.
    """
    exists = path in state.files
    if exists and not overwrite:
        fail("conflict", f"file {path!r} already exists; pass overwrite=true to replace it", status=409)
    state.files[path] = File(path=path, content=content, modified=state.today)
    state.touch()
    return Written(path=path, size=len(content.encode()), created=not exists)


@WORLD_TOOLS.tool(metadata=WRITES)
def files_delete(state: WorldState, path: Path) -> Removed:
    """Delete a file.

    Args:
        path: Path of the file.
    """
    if state.files.pop(path, None) is None:
        not_found("file", path)
    state.touch()
    return Removed(path=path, deleted=True)


@WORLD_TOOLS.tool
def files_search(state: WorldState, keyword: Annotated[str, Field(min_length=2)]) -> FileList:
    """Find files whose path or content contains a keyword (case-insensitive).

    Args:
        keyword: Text to look for.
    """
    q = keyword.lower()
    hits = sorted(
        (f for f in state.files.values() if q in f.path.lower() or q in f.content.lower()),
        key=lambda f: f.path,
    )
    return FileList(files=[_entry(f) for f in hits], count=len(hits))
