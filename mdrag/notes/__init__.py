"""Notes: which files are notes, and each note as the index reads it (hash, frontmatter, sections, links)."""
