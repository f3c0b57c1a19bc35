from pathlib import Path

from pegboard.mcp.transport import StderrLog, stderr_path


def test_the_file_keeps_the_last_start_only_and_stays_bounded(tmp_path: Path) -> None:
    path = stderr_path(tmp_path, "odd/id")
    assert path == tmp_path / "odd_id.stderr.log"
    log = StderrLog(limit=10, path=path)
    log.start()
    log.write(b"old start\n")
    log.start()
    log.write(b"0123456")
    log.write(b"789abc")

    assert path.read_bytes() == b"3456789abc"
    assert log.text() == "3456789abc"
    assert log.dropped == 3
