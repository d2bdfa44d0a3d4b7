"""The ``offline`` provider: no network, same answer every time; and the tests' double.

By default it returns the digest (:mod:`ctxfold.providers.digest`). Given ``scripted``
outputs it returns those in order instead, so a test can drive compaction with known summaries
(or make a call fail by scripting an exception) and then check that every one was used::

    with OfflineSummarizer(scripted=["first summary", ProviderError("down")]) as fake:
        run(summarizer=fake)
    assert fake.requests[0].budget_tokens == 1000
"""

from __future__ import annotations

from collections.abc import Iterable
from types import TracebackType

from ctxfold.providers.base import SummaryRequest, SummaryResult
from ctxfold.providers.digest import digest, digest_of
from ctxfold.providers.streamed import Digested, Unknowable


class OfflineSummarizer:
    provider = "offline"
    window: int | None = None  # any conversation fits: the digest reads it, it never sends it

    def __init__(
        self, model: str | None = None, *, scripted: Iterable[str | BaseException] | None = None
    ) -> None:
        self.model = model
        self.scripted: list[str | BaseException] | None = list(scripted) if scripted is not None else None
        self.requests: list[SummaryRequest] = []
        self._next = 0

    def __repr__(self) -> str:
        script = f", scripted={len(self.scripted)}" if self.scripted is not None else ""
        return f"OfflineSummarizer(used={self._next}{script})"

    def __call__(self, request: SummaryRequest) -> SummaryResult:
        self.requests.append(request)
        if self.scripted is None:
            return SummaryResult(digest(request), provider=self.provider)
        if self._next >= len(self.scripted):
            raise AssertionError(
                f"OfflineSummarizer: call #{self._next + 1} but only {len(self.scripted)} scripted outputs"
            )
        out = self.scripted[self._next]
        self._next += 1
        if isinstance(out, BaseException):
            raise out
        return SummaryResult(out, provider=self.provider, model="scripted")

    def digested(self, request: SummaryRequest, read: Digested) -> SummaryResult:
        """The digest from readings taken as the conversation streamed by (``compact`` of a
        session too long to hold): the answer :meth:`__call__` gives on the whole list."""
        if self.scripted is not None:
            raise Unknowable("a scripted summarizer answers from its script, in order")
        self.requests.append(request)
        return SummaryResult(digest_of(request, read), provider=self.provider)

    @property
    def unused(self) -> int:
        return len(self.scripted) - self._next if self.scripted is not None else 0

    def assert_used(self) -> None:
        """Fail when scripted outputs are left: the code under test summarized less than expected."""
        if self.unused:
            raise AssertionError(
                f"OfflineSummarizer: {self.unused} of {len(self.scripted or [])} scripted outputs unused"
            )

    def __enter__(self) -> OfflineSummarizer:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if kind is None:
            self.assert_used()


def answering_digest(summarizer: object) -> OfflineSummarizer | None:
    """The offline digest that answers for ``summarizer``: itself, or a chain's first provider
    (``make_summarizer("offline")``; the digest never fails, so the chain never moves on), when
    it digests rather than plays a script."""
    links = getattr(summarizer, "links", None)
    first = links[0] if isinstance(links, list) and links else summarizer
    return first if isinstance(first, OfflineSummarizer) and first.scripted is None else None
