"""Note writes, all through `weaver.vault.writer` (vault-confined, atomic, hash-checked).

- `notes`: create, update, move (rewriting links), delete to `.trash/`; the cache sync.
- `patches`: edits inside one note (append, prepend, sections, blocks, find/replace,
  frontmatter keys, tags), one core `patch_note` over the pure transforms of `weaver.markdown`.
- `tags`: a tag renamed across the vault (journalled), tags added or removed on given notes.
- `journal`: finishing, at the next start, a journalled change a killed process left midway.
- `periodic`: daily, weekly, monthly, quarterly and yearly notes where the vault's `.obsidian`
  settings (core Daily notes, Periodic Notes, Calendar) put them; `daily` its day period.
- `templates`: template notes filled in, and the `.obsidian` settings files read.
- `canvases`: a `.canvas` file read, and changed one edit at a time through the same step.
"""
