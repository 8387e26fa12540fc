"""``codea1 plugins``: list every plugin by kind, name and origin, with its options."""

from __future__ import annotations

import json

from codea1.harness.command import Command
from codea1.harness.hookspecs import hookimpl


class PluginsCommand(Command):
    name = "plugins"
    description = "list every plugin by kind, name and origin, with its options"

    def add_arguments(self, p):
        p.add_argument("--json", action="store_true", help="print JSON instead of a table")

    def run(self, plugins, args):
        rows = plugins.listing()
        if args.json:
            print(json.dumps(rows, indent=2))
            return 0
        columns = ("kind", "name", "distribution")
        widths = [max(len(r[c]) for r in rows + [{"kind": "KIND", "name": "NAME", "distribution": "FROM"}])
                  for c in columns]
        print(f"{'KIND':<{widths[0]}}  {'NAME':<{widths[1]}}  {'FROM':<{widths[2]}}  DESCRIPTION")
        for r in rows:
            print(f"{r['kind']:<{widths[0]}}  {r['name']:<{widths[1]}}  {r['distribution']:<{widths[2]}}  "
                  f"{r['description']}")
            if r["options"]:
                opts = ", ".join(f"{o['name']}={_short(o['default'])}" for o in r["options"])
                print(f"{'':<{widths[0]}}  {'':<{widths[1]}}  options: {opts}")
        return 0


def _short(text: str, limit: int = 24) -> str:
    return text if len(text) <= limit else text[:limit - 3] + "..."


@hookimpl
def codea1_register_commands(registry):
    registry.add(PluginsCommand)
