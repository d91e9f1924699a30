"""Dynamic-mode coflow tags: the tag id each active coflow holds, and the DSCP each of
its sending hosts marks it with, so that the leaves' rules never mix two coflows (pure;
``controller.scheduler`` uses it).

A leaf rule matches the DSCP together with the sender's port, so a DSCP only has to be
unique among the coflows *one host* sends.  ``TagPool.take`` gives the smallest tag id
not held (1..3520; the id names the coflow in rule cookies, counters and the agents'
requests) and, on each sending host, the DSCP ``tag_dscp(tag)`` if that host does not
hold it yet, else the host's smallest free DSCP (a *remapped* sender, ``dscps_of``).
Below 55 coflows at once these are tags 1..55 with DSCP = tag, handed out as before.
At most 55 coflows at once per sending host.  With ``tag_max`` = 55 (BMv2, whose
program counts per DSCP) nothing is remapped: 55 coflows at once in the fabric.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from workload.marking import TAG_ID_MAX, TAG_MAX, TAG_MIN, WIRE_TAGS, check_tag, tag_dscp

WIRE_DSCPS = range(TAG_MIN, TAG_MAX + 1)


class TagPool:
    """Coflow tags for dynamic mode.  A finished coflow's tag is *dirty* (its entry is
    still installed) and is only reused after a batched clear: clearing lazily keeps the
    controller write off the path of every completion."""

    def __init__(self, tag_max: int = TAG_ID_MAX) -> None:
        """An empty pool of tags ``TAG_MIN..tag_max``."""
        self.tag_max = check_tag(tag_max)
        self._held: dict[int, dict[str, int]] = {}  # tag -> {sender: DSCP}, active or dirty
        self._dirty: set[int] = set()
        self._busy: dict[str, set[int]] = {}  # host -> DSCPs of the tags it holds

    def take(self, senders: Iterable[str] = ()) -> int | None:
        """A tag for a coflow sending from ``senders`` (module doc), or None if the dirty
        tags must be cleared first: no tag 1..55 is free, or a sender holds all 55
        DSCPs, without them.  RuntimeError (one line) if active coflows hold them all."""
        hosts = sorted(set(senders))
        tag = next((t for t in range(TAG_MIN, self.tag_max + 1) if t not in self._held), None)
        wire = None if tag is None else self._wire(tag, hosts)
        if self._dirty and (tag is None or tag > TAG_MAX or wire is None):
            return None
        if tag is None or wire is None:
            raise RuntimeError(self._exhausted(hosts))
        self._held[tag] = wire
        for h, d in wire.items():
            self._busy.setdefault(h, set()).add(d)
        return tag

    def _wire(self, tag: int, hosts: list[str]) -> dict[str, int] | None:
        """Each host's DSCP for ``tag``: ``tag_dscp(tag)`` where free, else (remapping
        allowed) the host's smallest free one; None if a host has none."""
        out = {}
        for h in hosts:
            busy = self._busy.get(h, set())
            if tag_dscp(tag) not in busy:
                out[h] = tag_dscp(tag)
            elif self.tag_max > TAG_MAX:
                free = next((d for d in WIRE_DSCPS if d not in busy), None)
                if free is None:
                    return None
                out[h] = free
            else:
                return None
        return out

    def _exhausted(self, hosts: list[str]) -> str:
        """Why no tag is free for a coflow sending from ``hosts``."""
        full = [h for h in hosts if len(self._busy.get(h, ())) >= WIRE_TAGS]
        if full and self.tag_max > TAG_MAX:
            return f"more than {WIRE_TAGS} coflows active at once sending from host {full[0]}"
        return f"more than {self.tag_max} coflows active at once (tags 1..{self.tag_max})"

    def take_clean(self, senders: Iterable[str] = ()) -> int:
        """``take`` right after ``reclaim`` (no dirty tag is left to wait for)."""
        tag = self.take(senders)
        assert tag is not None, "take found dirty tags right after reclaim"
        return tag

    def dscps_of(self, tag: int) -> Mapping[str, int]:
        """The senders of held ``tag`` whose DSCP is not ``tag_dscp(tag)``, and theirs."""
        return {h: d for h, d in self._held[tag].items() if d != tag_dscp(tag)}

    def give(self, tag: int) -> None:
        """``tag``'s coflow finished; its entry (and its DSCPs) stay until ``reclaim``."""
        self._dirty.add(tag)

    def reclaim(self) -> list[int]:
        """Free every dirty tag; returns them (the caller clears their entries)."""
        tags = sorted(self._dirty)
        self._dirty.clear()
        for t in tags:
            for h, d in self._held.pop(t).items():
                self._busy[h].discard(d)
        return tags
