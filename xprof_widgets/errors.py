"""The one exception family for inputs we cannot use."""


class ProfileError(ValueError):
    """A path or file that cannot be opened; the message says which, what is wrong, what to do."""

    def _render_traceback_(self) -> list[str]:
        """What IPython prints in a notebook: the message alone, with no frames of ours; the
        whole traceback stays on the exception (`%tb`, `traceback.print_exc()`)."""
        return [f"ProfileError: {self}"]
