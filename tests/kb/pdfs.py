"""Minimal, valid PDF files written byte by byte (one page of text per string)."""

from __future__ import annotations

import zlib


def pdf(pages: list[str], *, title: str | None = None, extra_stream: bytes | None = None) -> bytes:
    """A PDF with one Helvetica text line per page; ``extra_stream`` is a raw Flate-compressed
    payload added as the last page's content (to test decompression limits)."""
    objects: list[bytes] = []
    n_pages = len(pages)
    kids = " ".join(f"{3 + 2 * i} 0 R" for i in range(n_pages))
    objects.append(b"<< /Type /Catalog /Pages 2 0 R >>")
    objects.append(f"<< /Type /Pages /Kids [{kids}] /Count {n_pages} >>".encode())
    font_id = 3 + 2 * n_pages
    for i, text in enumerate(pages):
        content_id = 4 + 2 * i
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents {content_id} 0 R"
            f" /Resources << /Font << /F1 {font_id} 0 R >> >> >>".encode()
        )
        if extra_stream is not None and i == n_pages - 1:
            body = extra_stream
            objects.append(
                f"<< /Length {len(body)} /Filter /FlateDecode >>\nstream\n".encode()
                + body
                + b"\nendstream"
            )
        else:
            escaped = text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
            body = f"BT /F1 12 Tf 72 720 Td ({escaped}) Tj ET".encode()
            objects.append(f"<< /Length {len(body)} >>\nstream\n".encode() + body + b"\nendstream")
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    info_id = None
    if title is not None:
        objects.append(f"<< /Title ({title}) >>".encode())
        info_id = len(objects)
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, obj in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n".encode() + obj + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    for offset in offsets:
        out += f"{offset:010d} 00000 n \n".encode()
    info = f" /Info {info_id} 0 R" if info_id else ""
    trailer = f"<< /Size {len(objects) + 1} /Root 1 0 R{info} >>"
    out += f"trailer\n{trailer}\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)


def flate_bomb(decompressed_bytes: int) -> bytes:
    """A Flate stream of zeros that decompresses to ``decompressed_bytes``."""
    packer = zlib.compressobj(9)
    block = b"\0" * (1 << 20)
    out = bytearray()
    for _ in range(decompressed_bytes // len(block)):
        out += packer.compress(block)
    return bytes(out + packer.flush())
