"""The one exception family for inputs we cannot use."""


class ProfileError(ValueError):
    """A path or file that cannot be opened; the message says which, what is wrong, what to do."""
