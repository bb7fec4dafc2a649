"""Files: what mdrag keeps on disk beside an index and its socket, who may read them, the locks on them."""
