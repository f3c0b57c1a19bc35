import os
import socket
import sys
from pathlib import Path

import pytest

from pegboard.errors import FileTooLarge, PathNotAllowed
from pegboard.kb.files import Candidate, discover, read_regular


def _tree(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "notes"
    (root / "sub").mkdir(parents=True)
    (root / "a.md").write_text("# A\n\nalpha")
    (root / "sub" / "b.txt").write_text("beta")
    (root / "image.png").write_bytes(b"\x89PNG")
    outside = tmp_path / "secret.md"
    outside.write_text("do not read")
    return root, outside


def test_discover_walks_directories_recursively_in_sorted_order_and_keeps_known_suffixes(
    tmp_path: Path,
) -> None:
    root, _ = _tree(tmp_path)

    found, skipped = discover([root])

    assert [c.path.relative_to(root).as_posix() for c in found] == ["a.md", "sub/b.txt"]
    assert {c.root for c in found} == {root.resolve()}
    assert skipped == []


def test_a_symlink_leading_outside_the_root_is_refused_and_nothing_outside_is_opened(
    tmp_path: Path,
) -> None:
    root, outside = _tree(tmp_path)
    (root / "link.md").symlink_to(outside)
    (root / "linkdir").symlink_to(tmp_path, target_is_directory=True)
    opened: list[str] = []

    def audit(event: str, args: tuple[object, ...]) -> None:
        if event == "open" and isinstance(args[0], str | bytes | os.PathLike):
            opened.append(os.fsdecode(args[0]))

    found, skipped = discover([root])
    sys.addaudithook(audit)  # audit hooks cannot be removed: record only while reading below
    results = {}
    for c in found:
        try:
            results[c.path.name] = read_regular(c)
        except PathNotAllowed as exc:
            results[c.path.name] = str(exc).encode()

    assert results["link.md"] == (
        f"{root / 'link.md'}: a symlink leading outside {root.resolve()}; not read".encode()
    )
    assert [s.reason for s in skipped] == [
        f"{root / 'linkdir'}: a symlink leading outside {root.resolve()}; not read"
    ]
    assert str(outside) not in opened
    assert all(p.startswith(str(root.resolve())) for p in opened if p.endswith((".md", ".txt")))


def test_a_symlink_inside_the_root_is_read_once(tmp_path: Path) -> None:
    root, _ = _tree(tmp_path)
    (root / "again.md").symlink_to(root / "a.md")

    found, _ = discover([root])

    assert [c.path.name for c in found] == ["a.md", "b.txt"]


def test_a_fifo_a_device_and_a_socket_are_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.md"
    os.mkfifo(fifo)
    sock_path = tmp_path / "s.md"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(sock_path))
    try:
        messages = []
        for path in (fifo, Path("/dev/zero"), sock_path):
            with pytest.raises(PathNotAllowed) as info:
                read_regular(Candidate(path, path))
            messages.append(str(info.value))
    finally:
        server.close()

    assert messages[0] == f"{fifo}: a FIFO, not a regular file; not read"
    assert messages[1] == "/dev/zero: a device, not a regular file; not read"
    assert messages[2].startswith(f"{sock_path}: ")  # opening a socket fails before fstat


def test_a_sparse_ten_gigabyte_file_is_refused_by_its_size_before_reading(tmp_path: Path) -> None:
    sparse = tmp_path / "huge.txt"
    with sparse.open("wb") as f:
        f.truncate(10 * 1024**3)

    with pytest.raises(FileTooLarge) as info:
        read_regular(Candidate(sparse, sparse.resolve()))

    assert str(info.value) == (
        f"{sparse}: 10,737,418,240 bytes (a sparse file), over the 67,108,864-byte limit"
    )


def test_a_file_over_the_cap_is_refused(tmp_path: Path) -> None:
    big = tmp_path / "big.txt"
    big.write_bytes(b"x" * 101)

    with pytest.raises(FileTooLarge, match="101 bytes, over the 100-byte limit"):
        read_regular(Candidate(big, big.resolve()), max_bytes=100)
    assert read_regular(Candidate(big, big.resolve()), max_bytes=101) == b"x" * 101


def test_bad_paths_are_skipped_with_a_reason_naming_them(tmp_path: Path) -> None:
    loop = tmp_path / "loop.md"
    loop.symlink_to(loop)

    _, skipped = discover(
        [tmp_path / "missing.md", "bad\0name.md", "x" * 10_000, loop, "../../etc/nope"]
    )

    reasons = [s.reason for s in skipped]
    assert reasons[0] == f"{tmp_path / 'missing.md'}: no such file or directory"
    assert reasons[1] == "'bad\\x00name.md': the path contains a NUL byte"
    assert reasons[2].endswith(": file name too long")
    assert reasons[3].startswith(f"{loop}: ")
    assert reasons[4] == "../../etc/nope: no such file or directory"


def test_the_file_count_is_capped_and_the_rest_listed_as_skipped(tmp_path: Path) -> None:
    for i in range(4):
        (tmp_path / f"{i}.txt").write_text(str(i))

    found, skipped = discover([tmp_path], max_files=2)

    assert [c.path.name for c in found] == ["0.txt", "1.txt"]
    assert [s.reason for s in skipped] == [
        f"{tmp_path / '2.txt'}: over the limit of 2 files",
        f"{tmp_path / '3.txt'}: over the limit of 2 files",
    ]


def test_a_file_swapped_for_a_symlink_after_the_walk_is_refused(tmp_path: Path) -> None:
    root, outside = _tree(tmp_path)
    found, _ = discover([root])
    (root / "a.md").unlink()
    (root / "a.md").symlink_to(outside)

    with pytest.raises(PathNotAllowed) as info:
        read_regular(found[0])

    assert str(info.value) == (
        f"{root / 'a.md'}: a symlink leading outside {root.resolve()}; not read"
    )
