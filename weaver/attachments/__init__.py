"""What an attachment (a file of the vault other than a note) holds, read for a model.

kinds.py       the kind of a file by its extension (image, pdf, audio, video, other), as
               Obsidian groups the formats it embeds
images.py      an image scaled to a size bound and encoded for MCP image content (Pillow, the
               `attachments` extra)
pdf_text.py    a PDF page's text from the text layer, or a whole document's (for the search
               index), in a subprocess bounded in time and memory (pypdfium2, the
               `attachments` extra), so a hostile file never holds the server
pdf_worker.py  that subprocess
"""
