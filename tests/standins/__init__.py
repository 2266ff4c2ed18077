"""Stand-ins for modules another platform has, put first on a test process's path."""
