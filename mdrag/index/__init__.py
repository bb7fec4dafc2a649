"""Index: the writing side: the index brought in line with the notes, and every change noticed."""
