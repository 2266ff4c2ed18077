"""The runtime layer: what a process runs on, wired from the layers below."""
