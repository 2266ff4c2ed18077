"""The subprocess that reads one page of a PDF's text layer (`pdf_text.read_pdf_page`).

Run as `python -m weaver.attachments.pdf_worker FILE PAGE MEMORY_BYTES`: once PDFium is
loaded it caps its own address space (POSIX), so a malformed file that makes PDFium allocate
without bound ends this process, never the server; it prints `{"pages": n, "text": "..."}` or
`{"error": "..."}` as one JSON line."""

from __future__ import annotations

import json
import sys


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


def main(argv: list[str]) -> int:
    file, page, memory = argv[0], int(argv[1]), int(argv[2])
    sys.stdout.write(json.dumps(page_text(file, page, memory)) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
