"""The one exception family for inputs we cannot use."""


class ProfileError(ValueError):
    """A profile path or file that cannot be opened; the message says which file, what is wrong, what to do."""
