"""The subprocess that reads a PDF's text layer (`pdf_text.read_pdf_page` and
`pdf_text.read_pdf_document`).

Run as `python -m weaver.attachments.pdf_worker FILE PAGE MEMORY_BYTES` for one page, or as
`python -m weaver.attachments.pdf_worker --serve MEMORY_BYTES MAX_PAGES MAX_PAGE_CHARS NICE` to
read whole documents named on stdin, one after another (`pdf_reader.PdfReader`). Once PDFium
is loaded it caps its own address space (POSIX), so a malformed file that makes PDFium allocate
without bound ends this process, never the server. It answers `{"pages": n, "text": "..."}`
(one page), `{"pages": n, "texts": [...]}` (a document: its first MAX_PAGES pages, each cut at
MAX_PAGE_CHARS characters) or `{"error": "..."}`, one JSON line each."""

from __future__ import annotations

import json
import os
import sys
from typing import Any


def limit_memory(max_bytes: int) -> None:
    if sys.platform == "win32":
        return  # no `resource` module: bounded in time only
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (max_bytes, max_bytes))


def page_text(file: str, page: int, memory: int) -> dict[str, object]:
    try:
        import pypdfium2
    except ImportError:
        return {"error": "unavailable"}
    # After the library is loaded: the bound is for what the file makes it allocate.
    limit_memory(memory)
    try:
        document = pypdfium2.PdfDocument(file)
    except pypdfium2.PdfiumError as exc:
        return {"error": f"not a PDF that can be read ({exc})"}
    try:
        pages = len(document)
        if not 1 <= page <= pages:
            return {"pages": pages, "text": None}
        text_page = document[page - 1].get_textpage()
        return {"pages": pages, "text": text_page.get_text_range()}
    except pypdfium2.PdfiumError as exc:
        return {"error": f"page {page} cannot be read ({exc})"}
    finally:
        document.close()


def serve_documents(memory: int, max_pages: int, max_page_chars: int) -> None:
    """Read the documents named on stdin (one JSON string a line), answering each with one
    JSON line on stdout, until stdin ends."""
    try:
        import pypdfium2
    except ImportError:
        _answer_line({"error": "unavailable"})
        return
    limit_memory(memory)
    for line in sys.stdin:
        _answer_line(_document_text(pypdfium2, json.loads(line), max_pages, max_page_chars))


def _answer_line(found: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(found) + "\n")
    sys.stdout.flush()


def _document_text(
    pypdfium2: Any, file: str, max_pages: int, max_page_chars: int
) -> dict[str, object]:
    """The text of the document's first `max_pages` pages, each cut at `max_page_chars`."""
    try:
        document = pypdfium2.PdfDocument(file)
    except pypdfium2.PdfiumError as exc:
        return {"error": f"not a PDF that can be read ({exc})"}
    texts: list[str] = []
    try:
        pages = len(document)
        for index in range(min(pages, max_pages)):
            page = document[index]
            text_page = page.get_textpage()
            texts.append(text_page.get_text_range()[:max_page_chars])
            # Closed as it goes: a long document's pages would otherwise stay mapped together.
            text_page.close()
            page.close()
    except pypdfium2.PdfiumError as exc:
        return {"error": f"page {len(texts) + 1} cannot be read ({exc})"}
    finally:
        document.close()
    return {"pages": pages, "texts": texts}


def main(argv: list[str]) -> int:
    if argv[0] == "--serve":
        memory, max_pages, max_chars, nice = (int(value) for value in argv[1:5])
        if nice and hasattr(os, "nice") and os.nice(0) < nice:
            os.nice(nice - os.nice(0))  # background work: below the server and everything else
        serve_documents(memory, max_pages, max_chars)
        return 0
    sys.stdout.write(json.dumps(page_text(argv[0], int(argv[1]), int(argv[2]))) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
