"""The error of the weight importers."""


class WeightImportError(ValueError):
    """A source that cannot be imported: missing, unused or mismatched variables, an unsupported
    layout, or an unsafe file. The message names the problem and the fix."""
