"""The error of the weight importers, and the one reader of the JSON files they are given."""
import json
import os


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
    if not os.path.isfile(path):
        raise WeightImportError(f"{name} does not exist; give {expected}.")
    try:
        with open(path, encoding="utf-8") as f:
            value = json.load(f)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise WeightImportError(f"{name} is not a JSON file ({error}); give {expected}.") from None
    if not isinstance(value, dict):
        raise WeightImportError(f"{name} holds a {type(value).__name__}, not a JSON object; "
                                f"give {expected}.")
    return value
