"""Dynamic-mode coflow tags: which tag id each active coflow holds, so that the leaves'
rules never mix two coflows (pure; ``controller.scheduler`` uses it).

A tag id goes on the wire as its DSCP (``workload.marking.tag_dscp``: ids t and t + 55
share one), and a leaf rule matches that DSCP with the sender's port.  ``TagPool.take``
gives the smallest tag whose DSCP no other held tag (active or dirty) uses on any
sending host of the coflow, so each sending host sees at most 55 coflows at once; below
55 coflows at once in the fabric these are tags 1..55, handed out as before.  When only
tags above 55 are left and some are dirty, it asks for the batched clear first.
"""

from __future__ import annotations

from collections.abc import Iterable

from workload.marking import TAG_ID_MAX, TAG_MAX, TAG_MIN, WIRE_TAGS, check_tag, tag_dscp


class TagPool:
    """Coflow tags for dynamic mode.  A finished coflow's tag is *dirty* (its entry is
    still installed) and is only reused after a batched clear: clearing lazily keeps the
    controller write off the path of every completion.

    Tag ids share DSCPs (``workload.marking.tag_dscp``) and the leaf rules match the DSCP
    with the sender's port, so a tag is given only if its DSCP is held by no other tag
    (active or dirty) on any sending host of the coflow: 55 coflows at once per sending
    host.  ``tag_max`` bounds the ids (``TAG_MAX`` for a pipeline matching the DSCP
    alone, BMv2's: 55 coflows at once in the fabric)."""

    def __init__(self, tag_max: int = TAG_ID_MAX) -> None:
        """An empty pool of tags ``TAG_MIN..tag_max``."""
        self.tag_max = check_tag(tag_max)
        self._held: dict[int, frozenset[str]] = {}  # tag -> its senders (active or dirty)
        self._dirty: set[int] = set()
        self._busy: dict[str, set[int]] = {}  # host -> DSCPs of the tags it holds

    def take(self, senders: Iterable[str] = ()) -> int | None:
        """The smallest tag free for ``senders``, or None if the dirty tags must be
        cleared first: none of the first 55 is free without them (so below 55 coflows
        at once the tags are 1..55 as ever).  RuntimeError (one line) if active coflows
        hold every tag ``senders`` could use."""
        hosts = frozenset(senders)
        busy = self._busy_on(hosts)
        tag = next(
            (
                t
                for t in range(TAG_MIN, self.tag_max + 1)
                if t not in self._held and tag_dscp(t) not in busy
            ),
            None,
        )
        if self._dirty and (tag is None or tag > TAG_MAX):
            return None
        if tag is None:
            raise RuntimeError(self._exhausted(hosts))
        self._held[tag] = hosts
        for h in hosts:
            self._busy.setdefault(h, set()).add(tag_dscp(tag))
        return tag

    def _busy_on(self, hosts: frozenset[str]) -> set[int]:
        """DSCPs held on any of ``hosts``."""
        return set().union(*(self._busy.get(h, set()) for h in hosts))

    def _exhausted(self, hosts: frozenset[str]) -> str:
        """Why no tag is free for a coflow sending from ``hosts``."""
        wire = WIRE_TAGS
        if len(self._held) >= self.tag_max:
            return f"more than {self.tag_max} coflows active at once (tags 1..{self.tag_max})"
        full = sorted(h for h in hosts if len(self._busy.get(h, ())) >= wire)
        if full:
            return f"more than {wire} coflows active at once sending from host {full[0]}"
        return (
            f"no DSCP tag free on every sender of the coflow: its {len(hosts)} hosts "
            f"hold all {wire} between them"
        )

    def take_clean(self, senders: Iterable[str] = ()) -> int:
        """The smallest tag free for ``senders`` right after ``reclaim`` (RuntimeError if
        active coflows still hold every one)."""
        tag = self.take(senders)
        assert tag is not None, "take found dirty tags right after reclaim"
        return tag

    def give(self, tag: int) -> None:
        """``tag``'s coflow finished; its entry (and its DSCP on its senders) stays until
        ``reclaim``."""
        self._dirty.add(tag)

    def reclaim(self) -> list[int]:
        """Free every dirty tag; returns them (the caller clears their entries)."""
        tags = sorted(self._dirty)
        self._dirty.clear()
        for t in tags:
            for h in self._held.pop(t):
                self._busy[h].discard(tag_dscp(t))
        return tags
