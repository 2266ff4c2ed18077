"""Tasks as the Obsidian Tasks plugin understands them, above the parsed line: status settings,
dates as its queries say them, its query language, recurrence and the changes it makes to a
line. Pure logic on `weaver.markdown.tasks.ParsedTask`; the cache stores and queries tasks."""
