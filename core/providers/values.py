"""Exact values the next agent needs: URLs, ports, branches, commits, ids, versions, names.

An agent that resumes with "the dev server" instead of ``http://localhost:3001``, or "the last
commit" instead of ``73f00b8``, has to find them again or, worse, guesses. They are read off
the user's and the assistant's words, the commands, and the few tool outputs that state them
(git's ``[branch sha]`` lines, "listening on …", "Switched to branch …"); never off file
contents a tool printed, where every hex string would look like an id.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

# a host in brackets (an IPv6 address) keeps its closing bracket; elsewhere one ends the URL
_URL = re.compile(r"\bhttps?://(?:\[[0-9A-Fa-f:.]+\]|[^\s<>\"'`)\]}|\[])[^\s<>\"'`)\]}|]*")
_REPO = re.compile(r"(?<![/\w.])(?:github|gitlab|bitbucket)\.(?:com|org)/[\w.-]+/[\w.-]+")
_HOSTPORT = re.compile(r"(?:\b(?:localhost|127\.0\.0\.1|0\.0\.0\.0|[\w-]+\.local)|\[::1\])(?::\d{2,5})\b")
_GIT_LINE = re.compile(r"^\[([\w./-]+) (?:\(root-commit\) )?([0-9a-f]{7,40})\]", re.M)
# git log's and git show's commit line (the first line may carry Gemini CLI's label)
_LOG_COMMIT = re.compile(r"^(?:Output: )?commit ([0-9a-f]{40})\b", re.M)
_BRANCH = re.compile(
    r"(?:On branch|Switched to (?:a new )?branch|checkout -b|switch -c|push (?:-u )?origin)\s+'?([\w./-]+)'?"
)
# not a hex id inside a URL's path or query (`?gist=8851afb5…`): the URL is the value
_COMMIT = re.compile(r"(?<![\w/.=-])(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}(?![\w/-])")
_UUID = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", re.I)
_VERSION = re.compile(r"(?<![\w.])(?:@?[\w-]+(?:/[\w.-]+)?@)?v?\d+\.\d+\.\d+(?:[-+][\w.]+)?\b")
_TICKET = re.compile(r"(?<![\w-])[A-Z][A-Z0-9]{1,9}-\d{1,6}\b")  # not the Z0-9 of [A-Z0-9]
_ENV = re.compile(r"\b[A-Z][A-Z0-9]+(?:_[A-Z0-9]+)+\b")
_LONG_ID = re.compile(r"(?<![\w/.-])(?=\w*\d)(?=\w*[A-Za-z])[1-9A-HJ-NP-Za-km-z]{32,64}(?![\w/.-])")
_HEXCOLOR = re.compile(r"(?<![\w&])#[0-9a-fA-F]{6}\b")
# a command someone's words give to run (`npm run dev`, `python -m http.server`), quoted as code
_SAID_COMMAND = re.compile(
    r"`((?:python3?|pip3?|uv|poetry|pytest|npm|npx|pnpm|yarn|bun|deno|node|cargo|go|make|docker|docker-compose"
    r"|kubectl|terraform|git|gh|curl|brew|open|bundle|rails|php|composer|mvn|gradle|dotnet|flutter|swift"
    r"|anchor|solana|forge|hardhat|supabase|vercel|wrangler) [^`\n]{1,150})`"
)
_PLAIN_VERSION = re.compile(r"\d+\.\d+\.\d+")
# a tool output's line that states where something runs (no pattern spans lines)
_SERVES = re.compile(
    r"listening|running (?:at|on)|local:|server|ready|deployed|available at|^to https?://", re.I | re.M
)
# words one of those lines has, found in the lower-cased text by substring scans, which are
# many times faster; unless the text has a non-ASCII letter that re.I matches to an ASCII one
# (str.lower() leaves two of them as they are, and U+0130 is the one letter it lengthens)
_FOLDS = "\u0130\u0131\u017f\u212a"  # İ ı ſ K
_SERVES_WORDS = ("listening", "running ", "local:", "server", "ready", "deployed", "available at", "to http")
_TRAIL = ".,;:!?*"  # a sentence's end, or Markdown's bold around a URL (**http://localhost:3000**)
_HOSTS = ("localhost", "127.0.0.1", "0.0.0.0", "[::1]", ".local")
_BRANCH_WORDS = ("On branch", "Switched to", "checkout -b", "switch -c", "push ")


@dataclass(frozen=True, slots=True)
class Value:
    text: str
    kind: str  # url, address, branch, commit, id, version, ticket, env, color, command
    age: int  # index of the message it was last seen in


def _template(url: str, after: str) -> bool:
    """Whether the URL goes on in a placeholder (``https://app-<id>.example.com``,
    ``https://x/{slug}``, ``/posts/[id]``): cut there it would read as a URL that exists."""
    return (
        after == "<" or (after == "}" and "{" in url) or (after == "]" and "[" in url.partition("://")[2][1:])
    )


def _found(text: str, said: bool) -> Iterable[tuple[str, str]]:
    # each pattern is tried only when the words it needs are there: a scan for a word is many
    # times cheaper than a regular expression's, and most texts name no URL, host or branch
    if "://" in text:
        for m in _URL.finditer(text):
            if not _template(m.group(0), text[m.end() : m.end() + 1]):
                yield m.group(0).rstrip(_TRAIL), "url"
    if "github." in text or "gitlab." in text or "bitbucket." in text:
        for m in _REPO.finditer(text):
            yield m.group(0).rstrip(_TRAIL), "repository"
    if ":" in text and any(host in text for host in _HOSTS):
        for m in _HOSTPORT.finditer(text):
            yield m.group(0), "address"
    if "-" in text:
        for m in _UUID.finditer(text):
            yield m.group(0), "id"
    if any(word in text for word in _BRANCH_WORDS):
        for m in _BRANCH.finditer(text):
            yield m.group(1).rstrip(_TRAIL), "branch"
    if "." in text:
        for m in _VERSION.finditer(text):
            if said or not _PLAIN_VERSION.fullmatch(m.group(0)):
                yield m.group(0), "version"
    if not said:
        return
    for m in _COMMIT.finditer(text):
        yield m.group(0), "commit"
    if "-" in text:
        for m in _TICKET.finditer(text):
            yield m.group(0), "ticket"
    if "_" in text:
        for m in _ENV.finditer(text):
            yield m.group(0), "env"
    for m in _LONG_ID.finditer(text):
        yield m.group(0), "id"
    if "#" in text:
        for m in _HEXCOLOR.finditer(text):
            yield m.group(0), "color"
    if "`" in text:
        for m in _SAID_COMMAND.finditer(text):
            yield m.group(1), "command"


def _serving_lines(block: str) -> list[str]:
    """The lines of ``block`` (joined by newlines) that state where something runs, in order."""
    if not block.isascii() and any(letter in block for letter in _FOLDS):
        starts = {block.rfind("\n", 0, m.start()) + 1 for m in _SERVES.finditer(block)}
    else:  # only the lines that have one of the words go through the regular expression
        low, starts = block.lower(), set()
        for word in _SERVES_WORDS:
            at = low.find(word)
            while at >= 0:
                starts.add(low.rfind("\n", 0, at) + 1)
                after = low.find("\n", at)
                at = low.find(word, after) if after >= 0 else -1
    lines = []
    for start in sorted(starts):
        end = block.find("\n", start)
        line = block[start : end if end >= 0 else len(block)]
        if _SERVES.search(line):
            lines.append(line)
    return lines


class Values:
    """Collects values as the conversation is read; newest sighting wins the position."""

    def __init__(self) -> None:
        self._seen: dict[str, Value] = {}

    def _add(self, text: str, kind: str, age: int) -> None:
        if len(text) < 3 or len(text) > 200:
            return
        self._seen.pop(text, None)
        self._seen[text] = Value(text, kind, age)

    def words(self, text: str, age: int) -> None:
        """A person's or the assistant's own words: every kind of value."""
        for value, kind in _found(text, said=True):
            self._add(value, kind, age)

    def command(self, text: str, age: int) -> None:
        for value, kind in _found(text, said=False):
            self._add(value, kind, age)

    def output(self, text: str, age: int) -> None:
        """A tool's output: only the lines that state a branch, a commit, an address or a URL
        (and of a git log, only its newest commit)."""
        head = text[:4000]
        if "[" in head:
            for m in _GIT_LINE.finditer(head):
                self._add(m.group(1), "branch", age)
                self._add(m.group(2), "commit", age)
        newest = _LOG_COMMIT.search(head) if "commit " in head else None
        if newest:  # the log's first commit: the one the work starts from
            self._add(newest.group(1), "commit", age)
        if any(word in head for word in _BRANCH_WORDS):
            for m in _BRANCH.finditer(head):
                self._add(m.group(1).rstrip(_TRAIL), "branch", age)
        for line in _serving_lines("\n".join(head.splitlines()[:40])):
            for value, kind in _found(line, said=False):
                self._add(value, kind, age)

    def setting(self, command: str, age: int) -> None:
        self._add(command, "setting", age)

    def branch(self, name: str, age: int) -> None:
        if name and name not in ("HEAD", "main", "master"):
            self._add(name, "branch", age)

    def items(self) -> list[Value]:
        """Oldest sighting first."""
        return sorted(self._seen.values(), key=lambda v: v.age)
