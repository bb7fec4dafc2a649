"""Loading: the vectors collection read into every shard's memory, once, on its first use."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

from pymilvus import MilvusClient

from mdrag.milvus.calls import EngineCalls
from mdrag.milvus.databases import Databases
from mdrag.milvus.keywords import KeywordIndex
from mdrag.milvus.schema import METADATA, VECTORS

# Every call has a deadline (calls.py); loading's is its own: it reads every row, so it may take
# minutes on a large index.
LOAD_DEADLINE_S = 600.0


class VectorsLoading:
    """Whether the vectors collection is loaded, and its loading. Loading reads every row into
    memory (Milvus Lite reads the whole collection), which a no-op rescan never needs: so it is
    loaded on first use (`vectors`), or on purpose (a daemon warms up before its first search)."""

    def __init__(self, db: Databases, engine: EngineCalls) -> None:
        self._db = db
        self._engine = engine
        self._lock = threading.Lock()
        self.loaded = False  # set False when the collections are dropped or the databases reopened

    def vectors(self) -> str:
        """The vectors collection's name, loaded first if it is not."""
        if not self.loaded:
            with self._lock:
                if not self.loaded:
                    self._db.each(self.load)  # at once: each shard loads on its own core
                    self.loaded = True
        return VECTORS

    def load(self, client: MilvusClient) -> None:
        """Load one shard's vectors collection."""
        self._engine.call(client.load_collection, VECTORS, timeout=LOAD_DEADLINE_S)

    def load_twin(self, shard: int, client: MilvusClient) -> None:
        """What a shard's new server loads before it takes over: what the running one has loaded."""
        if shard == 0:
            self._engine.call(client.load_collection, METADATA, timeout=LOAD_DEADLINE_S)
        self.load(client)


@dataclass
class VectorRowsAccess:
    """What the vector rows' reads and writes go through (the Store hands one to each): the
    shards, the engine's calls, `vectors` (the vectors collection's name, loaded on its first
    call: a read that finds nothing to ask never loads it) and `words` (the keyword index open
    now: a reopen may open another)."""

    db: Databases
    engine: EngineCalls
    vectors: Callable[[], str]
    words: Callable[[], KeywordIndex]
