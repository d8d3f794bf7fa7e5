"""The error of the weight importers, and the one reader of the JSON files they are given
(`untrusted_files.reading`: regular, bounded, UTF-8 files of bounded nesting)."""
import os

from untrusted_files import reading


class WeightImportError(ValueError):
    """A source that cannot be imported: missing, unused or mismatched variables, an unsupported
    layout, or an unsafe file. The message names the problem and the fix."""


def read_json_object(path: str, name: str, expected: str) -> dict:
    """The JSON object in `path`, or a `WeightImportError` naming the file and what it must be.

    Args:
      path: the file.
      name: how the message names it (e.g. "--corpus_info=x.json" or the path itself).
      expected: what the file must be, for the fix (e.g. "the config.json of a Hugging Face
        TransfoXL model").

    Returns:
      The parsed dict.
    """
    if not os.path.lexists(path):
        raise WeightImportError(f"{name} does not exist; give {expected}.")
    try:
        text = reading.read_text(path, max_bytes=reading.MAX_JSON_BYTES,
                                 error=WeightImportError, name=name)
        value = reading.parse_json(text, name)
    except reading.UntrustedFileError as error:  # not JSON, or nested too deeply
        detail = str(error).replace(f"{name} ", "", 1).rsplit("; ", 1)[0]
        raise WeightImportError(f"{name} is not a JSON file ({detail}); give "
                                f"{expected}.") from None
    except OSError as error:
        raise WeightImportError(f"{name} cannot be read ({error.strerror}); give "
                                f"{expected}.") from None
    if not isinstance(value, dict):
        raise WeightImportError(f"{name} holds a {type(value).__name__}, not a JSON object; "
                                f"give {expected}.")
    return value
