"""`wccp` — one command line with composable subcommands.

Each subcommand lives in its own module ``wccptool/cmd_<name>.py`` that defines
``register(subparsers)``; it adds its parser and sets ``func`` (called with the
parsed args, returning an exit status). New subcommands need no edit here.
"""
import argparse
import importlib
import pkgutil
import sys

import wccptool


def build_parser():
    parser = argparse.ArgumentParser(prog="wccp", description="WCCPv2 redirector host tools")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for info in sorted(pkgutil.iter_modules(wccptool.__path__), key=lambda m: m.name):
        if info.name.startswith("cmd_"):
            mod = importlib.import_module("wccptool." + info.name)
            mod.register(sub)
    return parser


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return args.func(args) or 0
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
