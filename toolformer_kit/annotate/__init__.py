"""Self-supervised annotation (the paper's §2): turn a plain corpus C into C*, the same texts with
the tool calls written in that the model itself found useful.

Stages, one module each, exchanging :class:`~.records.Candidate` records:
:mod:`.positions` (where) → :mod:`.sample` (what) → :mod:`.execute` (results) →
:mod:`.filter` (useful?) → :mod:`.merge` (C*). :mod:`.prefilters` skips texts a tool cannot help,
:mod:`.corpus` reads and windows documents, and :mod:`.runner` drives it all in resumable shards.
"""
