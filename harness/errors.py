"""``Codea1Error``: the base of every user error.

A user error is something the user can fix: a bad flag, a file that is missing or malformed
(the message names the file, the line and the field), a plugin that is not installed, a run
directory that holds another run. The CLI prints its message and exits 2, without a
traceback (``codea1 --debug`` shows one). Anything else is a bug, in codea1 or in a plugin,
and always shows its traceback: a plugin's ``ValueError`` is never dressed up as a user
error.
"""


class Codea1Error(Exception):
    """Base of user errors; the message says what is wrong and how to fix it."""


class ConfigError(Codea1Error):
    """Flags or configuration values that do not fit together."""
