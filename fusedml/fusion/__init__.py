"""L3: the fusion templates (Cell, Row, MAgg, Outer: open/fuse/merge/close), the memo table and
OFMC exploration."""
