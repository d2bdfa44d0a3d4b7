"""The public API: ``ctxfold.__all__`` is the curated list, every name has a docstring whose
example runs, and ``import ctxfold`` imports none of it until it is used."""

from __future__ import annotations

import doctest
import subprocess
import sys

import pytest
from conftest import ROOT

import ctxfold

PUBLIC = {
    "__version__",
    # the four tasks
    "read",
    "open_transcript",
    "estimate",
    "report",
    "compact",
    "Estimate",
    "Report",
    "CompactResult",
    # in an agent loop
    "ContextGuard",
    "Decision",
    "Prepared",
    "MemoryStore",
    "JsonFileStore",
    # the transcript model
    "Transcript",
    "Message",
    "TextPart",
    "ThinkingPart",
    "ToolCallPart",
    "ToolResultPart",
    "MediaPart",
    "OpaquePart",
    "Usage",
    "ToolDef",
    "CompactionMarker",
    "ContextUpdate",
    "ContextReset",
    "Rewind",
    "ApiError",
    # summarizers
    "Summarizer",
    "SummaryRequest",
    "SummaryResult",
    "make_summarizer",
    # registries and settings
    "list_formats",
    "list_tokenizers",
    "list_strategies",
    "list_providers",
    "get_tokenizer",
    "get_strategy",
    "Config",
    "load_config",
    # the exception tree
    "CtxfoldError",
    "UsageError",
    "InputError",
    "EmptyInputError",
    "UnknownFormatError",
    "LineError",
    "TokenizerError",
    "ConfigError",
    "OutputError",
    "ProviderError",
    "MissingKeyError",
    "WindowTooSmallError",
    "NoShrinkError",
    "ChangedPrefixError",
}
NAMES = sorted(set(ctxfold.__all__) - {"__version__"})


def test_all_is_the_curated_list() -> None:
    assert len(ctxfold.__all__) == len(set(ctxfold.__all__))
    assert set(ctxfold.__all__) == PUBLIC


@pytest.mark.parametrize("name", NAMES)
def test_every_name_resolves_with_an_example(name: str) -> None:
    value = getattr(ctxfold, name)
    assert name in dir(ctxfold)
    assert value.__doc__ and ">>>" in value.__doc__, f"{name} has no docstring example"


def test_a_name_outside_the_api_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'ContextGaurd'"):
        ctxfold.ContextGaurd  # noqa: B018


@pytest.mark.parametrize("name", NAMES)
def test_the_docstring_examples_run(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)  # the examples read the sample sessions in fixtures/
    finder = doctest.DocTestFinder(recurse=False)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    tests = finder.find(getattr(ctxfold, name), name, globs={"ctxfold": ctxfold})
    assert tests and any(t.examples for t in tests)
    for test in tests:
        runner.run(test, out=lambda text: sys.stderr.write(text))
    assert runner.failures == 0, f"{runner.failures} example(s) of {name} failed (see stderr)"


def test_the_api_module_examples_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """The module docstrings' examples too (``ctxfold.api``'s functions are covered above)."""
    import ctxfold.engine.now

    monkeypatch.chdir(ROOT)
    result = doctest.testmod(ctxfold.engine.now, extraglobs={"ctxfold": ctxfold}, report=False)
    assert result.failed == 0 and result.attempted > 0


def _imported_after(code: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", f"{code}\nimport sys\nprint(' '.join(sorted(sys.modules)))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return set(out.split())


def test_import_ctxfold_imports_nothing_heavy() -> None:
    loaded = _imported_after("import ctxfold")
    heavy = {"tiktoken", "anthropic", "openai", "orjson", "rich", "typer", "ctxfold.formats", "ctxfold.api"}
    assert not heavy & loaded


def test_the_command_line_does_not_import_the_providers_or_sdks() -> None:
    loaded = _imported_after("import ctxfold.cli.app")
    assert not {"anthropic", "openai", "tiktoken", "ctxfold.providers", "ctxfold.compaction"} & loaded


def test_a_command_imports_no_validation_library() -> None:
    """What a command pays for before it reads a line: pydantic is not among it (the typer this
    project allows parses options itself; the SDKs that need pydantic are loaded on use)."""
    tiny = ROOT / "fixtures" / "claude-code" / "edge-cases.jsonl"
    code = (
        "import sys\nfrom ctxfold.cli.app import main\n"
        f"sys.argv = ['ctxfold', 'estimate', {str(tiny)!r}, '--no-profile', '--no-cache', '--json']\n"
        "try:\n    main()\nexcept SystemExit as e:\n    assert not e.code, e.code"
    )
    loaded = _imported_after(code)
    assert "ctxfold.tokens.estimate" in loaded  # the file was read
    assert not {m for m in loaded if m.split(".")[0] in ("pydantic", "pydantic_core")}


def test_a_name_is_imported_on_first_use_only() -> None:
    loaded = _imported_after("import ctxfold\nctxfold.ContextGuard")
    assert "ctxfold.compaction.guard" in loaded and "anthropic" not in loaded


def test_docs_api_lists_every_public_name() -> None:
    text = (ROOT / "docs" / "api.md").read_text()
    missing = [name for name in NAMES if f"`{name}" not in text]
    assert not missing, f"docs/api.md does not list {missing}"


def test_the_readme_stays_for_users() -> None:
    """About 300 lines at most, every docs/ link resolves, and no internal jargon."""
    readme = (ROOT / "README.md").read_text()
    assert readme.count("\n") <= 300
    import re

    for link in re.findall(r"\]\((docs/[^)#]+)", readme):
        assert (ROOT / link).is_file(), link
    for doc in (ROOT / "docs").glob("*.md"):
        assert "seeds" not in doc.read_text(), doc.name
    assert "seeds" not in readme
