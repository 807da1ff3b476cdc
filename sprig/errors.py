"""The CLI's error for problems a user can fix."""


class CommandError(Exception):
    """Printed as one clear line (`sprig VERB: message`), with exit code 2."""
