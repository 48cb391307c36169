"""The Python side of a vis-agent sandbox session.

driver runs blocks in the session's persistent namespace and talks to the
session's host (see sandbox/protocol); state keeps the snapshot a restarted
interpreter restores; defs lists what the session defined.
"""
