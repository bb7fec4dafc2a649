"""The duplicates answer counts every pair and group, whatever `limit` lists."""

from typing import Any

from mdrag.retrieval.operations import ReadOperations


class Pairs:
    """A similarity that found these pairs (three groups: a-b-c, d-e, f-g)."""

    def duplicates(self, min_score: int) -> tuple[list[dict[str, Any]], bool]:
        joined = [("a", "b", 99), ("b", "c", 97), ("d", "e", 95), ("f", "g", 91)]
        return [{"a": f"/n/{a}.md", "b": f"/n/{b}.md", "score": s} for a, b, s in joined], True


def test_limit_lists_the_first_groups_and_the_answer_counts_them_all():
    operations = ReadOperations.__new__(ReadOperations)
    operations.similarity = Pairs()  # type: ignore[assignment]
    answer = operations.duplicates({"min_score": 90, "limit": 1})
    assert (answer["total_pairs"], answer["total_groups"]) == (4, 3)
    assert len(answer["pairs"]) == 1 and len(answer["groups"]) == 1
    assert answer["groups"][0]["notes"] == ["/n/a.md", "/n/b.md", "/n/c.md"]
