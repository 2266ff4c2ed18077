"""Canvas files (`.canvas`, JSON Canvas 1.0) as Obsidian writes them: `document` reads a
canvas's bytes into nodes and edges, checks what the spec requires and writes it back in
Obsidian's layout, every field kept; `operations` are the edits (add, move or resize, connect,
remove), each returning a new canvas. Pure: bytes in, bytes out; the edits core writes them."""
