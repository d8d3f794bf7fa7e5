"""The error of a file or directory from elsewhere that is refused."""


class UntrustedFileError(ValueError):
    """A file or directory refused before (or instead of) reading or writing it: a link that
    leads outside its directory, not a regular file, too large, not UTF-8, JSON nested too
    deeply or not of its declared shape, or a directory of another kind. The message is one
    line naming the file, the problem and the fix."""
