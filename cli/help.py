"""Help in the shape of git's and ccusage's: a usage line in conventional metavars (``FILE...``,
``N``, ``MODEL``), what the command does, its arguments, its options with their choices and
defaults, and a few examples. Plain text from click's formatter, no type tags: it also keeps
``ctxfold --help`` from importing Rich."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from typer.core import TyperArgument, TyperCommand, TyperGroup, TyperOption

if TYPE_CHECKING:  # typer's own copy of click, for the types of what it hands us
    from typer._click import Command, Context, HelpFormatter, Parameter

# the order a user meets the commands in: look, replay, act, check, then the housekeeping
ORDER = ("estimate", "report", "compact", "validate", "statusline", "config", "profile", "version")

EXAMPLES: dict[str, Sequence[str]] = {
    "ctxfold": (
        "ctxfold estimate ~/.claude/projects/my-project/SESSION.jsonl",
        "ctxfold report ~/.claude/projects/ --by day",
        "ctxfold compact SESSION.jsonl --dry-run",
    ),
    "estimate": (
        "ctxfold estimate ~/.claude/projects/my-project/SESSION.jsonl",
        "ctxfold estimate ~/.codex/sessions/ --json",
    ),
    "report": (
        "ctxfold report SESSION.jsonl --window 100000 --plot run.svg",
        "ctxfold report ~/.claude/projects/ --by day",
    ),
    "compact": (
        "ctxfold compact SESSION.jsonl --dry-run",
        "ctxfold compact SESSION.jsonl --provider anthropic:claude-haiku-4-5,offline",
    ),
    "validate": ("ctxfold validate folded/SESSION.compacted.jsonl", "ctxfold validate ~/.pi/agent/sessions/"),
    "config": ("ctxfold config", "CTXFOLD_WINDOW=100000 ctxfold config --json"),
    "profile": ("ctxfold profile show", "ctxfold profile reset"),
    "show": ("ctxfold profile show", "ctxfold profile show --json"),
    "reset": ("ctxfold profile reset",),
    "version": ("ctxfold version", "ctxfold --version"),
    "statusline": (
        "ctxfold statusline < status.json",
        "ctxfold statusline --install-pi",
        "codex mcp add ctxfold -- ctxfold statusline --codex",
    ),
}


def _argument(param: Parameter) -> str:
    name = param.metavar or (param.name or "ARG").upper()
    if param.nargs != 1:
        name += "..."
    return name if param.required else f"[{name}]"


def _usage_pieces(cmd: Command, ctx: Context) -> list[str]:
    out = ["[OPTIONS]"]
    out += [_argument(p) for p in cmd.get_params(ctx) if isinstance(p, TyperArgument) and not p.hidden]
    return out


def _option(param: TyperOption) -> tuple[str, str]:
    """``-o, --output FILE`` and its help: the text, then ``[default: …]`` when one is told."""
    shorts = [o for o in param.opts if not o.startswith("--")]
    longs = [o for o in param.opts if o.startswith("--")]
    names = ", ".join([*shorts, *longs])
    if not shorts:
        names = "    " + names
    if not param.is_flag and not param.count:
        names += f" {param.metavar or (param.name or 'VALUE').upper()}"
    text = param.help or ""
    if isinstance(param.show_default, str):
        text += f"  [default: {param.show_default}]"
    return names, text


def _sections(cmd: Command, ctx: Context, formatter: HelpFormatter) -> None:
    args = [
        (_argument(p).strip("[]"), p.help or "") for p in cmd.get_params(ctx) if isinstance(p, TyperArgument)
    ]
    opts = [_option(p) for p in cmd.get_params(ctx) if isinstance(p, TyperOption) and not p.hidden]
    if args:
        with formatter.section("Arguments"):
            formatter.write_dl(args)
    if opts:
        with formatter.section("Options"):
            formatter.write_dl(opts)


def _examples(name: str | None, formatter: HelpFormatter) -> None:
    lines = EXAMPLES.get(name or "", ())
    if lines:
        with formatter.section("Examples"):
            for line in lines:  # as typed: never wrapped
                formatter.write(f"{'':>{formatter.current_indent}}{line}\n")


class HelpCommand(TyperCommand):
    """A command whose help and usage line read as git's do."""

    def collect_usage_pieces(self, ctx: Context) -> list[str]:
        return _usage_pieces(self, ctx)

    def format_help(self, ctx: Context, formatter: HelpFormatter) -> None:
        self.format_usage(ctx, formatter)
        self.format_help_text(ctx, formatter)
        _sections(self, ctx, formatter)
        _examples(self.name, formatter)


class HelpGroup(TyperGroup):
    """``ctxfold`` and ``ctxfold profile``: the commands in the order a user meets them."""

    def collect_usage_pieces(self, ctx: Context) -> list[str]:
        return ["[OPTIONS]", "COMMAND", "[ARGS]..."]

    def list_commands(self, ctx: Context) -> list[str]:
        names = super().list_commands(ctx)
        return sorted(names, key=lambda n: ORDER.index(n) if n in ORDER else len(ORDER))

    def format_help(self, ctx: Context, formatter: HelpFormatter) -> None:
        self.format_usage(ctx, formatter)
        self.format_help_text(ctx, formatter)
        rows = []
        for name in self.list_commands(ctx):
            sub = self.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                rows.append((name, sub.get_short_help_str(limit=200)))  # the first sentence
        with formatter.section("Commands"):
            formatter.write_dl(rows)
        _sections(self, ctx, formatter)
        _examples(self.name if ctx.parent else "ctxfold", formatter)
        formatter.write_paragraph()
        formatter.write_text(f"'{ctx.command_path} COMMAND -h' shows a command's options.")
