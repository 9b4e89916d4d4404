"""The `cuerag` command's global options wherever they are typed: before the subcommand, as
click parses them, or after it, where people type them (`cuerag corpora --data-dir X`)."""

from __future__ import annotations

from typing import Any

from typer.core import TyperGroup, TyperOption


class OptionsAnywhere(TyperGroup):
    """The global options (`--data-dir`, `-v`, ...) are taken after the subcommand too, where
    people type them: `cuerag corpora --data-dir X` means `cuerag --data-dir X corpora`."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:  # typer's vendored click Context
        return super().parse_args(ctx, hoist_global_options(self, ctx, args))


def hoist_global_options(group: TyperGroup, ctx: Any, args: list[str]) -> list[str]:
    """`args` with the group's own options that follow the subcommand moved in front of it.
    A subcommand's option of the same name keeps it, and nothing after `--` moves."""
    arity = {name: 0 if p.is_flag else 1 for p in group.params if isinstance(p, TyperOption) for name in p.opts}
    start, i = None, 0
    while i < len(args) and start is None:
        name = args[i].split("=", 1)[0]
        if args[i] in group.commands:
            start = i
        i += 1 + (arity[name] if name in arity and "=" not in args[i] else 0)
    if start is None:
        return args
    command = group.commands[args[start]]
    own = {name for p in command.get_params(ctx) for name in (*p.opts, *p.secondary_opts)}
    head, tail, rest = args[:start], [], args[start:]
    i = 1
    while i < len(rest):
        arg = rest[i]
        if arg == "--":
            break
        name = arg.split("=", 1)[0]
        if name in arity and name not in own:
            width = 1 if "=" in arg else 1 + arity[name]
            tail.extend(rest[i : i + width])
            del rest[i : i + width]
            continue
        i += 1
    return [*head, *tail, *rest]
