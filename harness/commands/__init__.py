"""The built-in ``codea1`` commands, one module each, each a plugin registering its command
like any other (``codea1_register_commands``; ``BUILTIN_PLUGINS`` lists them).

Each command declares its flags and turns them into its flow's config; the flows
(``codea1.harness.flows``) do the work and are imported only when their command runs, so
``codea1 --help`` stays fast. What a command prints is for people: percentages with a %,
a line on what each figure means; the files it writes keep fractions. The flags and printing
several commands share live in ``shared``, the one module here without hooks.
"""
